// Command kafkanode runs one Apache Kafka 4.4 node (broker and KRaft
// controller) on 127.0.0.1 from the jars deploy/kafka/fetch-kafka.sh
// fetches ($KAFKA_LIB, or the script run the first time), for trying the
// receiver against the real broker (`make kafka-up`). It formats a fresh
// data directory, prints the bootstrap server once the node serves, and
// stops the node on Ctrl-C or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kafkanode:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kafkanode", flag.ContinueOnError)
	port := fs.Int("port", 9092, "client port on 127.0.0.1 (the controller takes port+2)")
	dir := fs.String("dir", "_build/kafka", "directory for the node's config, data and log (emptied first)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *port < 1 || *port > 65533 {
		return fmt.Errorf("-port %d is not a port from 1 to 65533 (the controller takes port+2)", *port)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	node, err := apachekafka.StartNode(ctx, *dir, *port, log.New(os.Stderr, "kafkanode: ", log.Ltime).Printf)
	if err != nil {
		return err
	}
	defer node.Close()
	log.Printf("kafkanode: Apache Kafka %s ready: bootstrap server %s, log %s", apachekafka.Version, node.Addrs()[0], node.Nodes[0].LogPath())
	<-ctx.Done()
	return nil
}
