// Command kafkademo runs an in-process three-broker Kafka cluster (franz-go's
// kfake, no JVM needed) with a workload whose consumer groups lag in
// different ways, for trying out the kafka_time_lag receiver. It prints one
// line per workload event to stderr and stops on Ctrl-C or SIGTERM.
//
// The data lives in memory only; every start begins from scratch. With
// -apache-kafka the workload runs on one Apache Kafka node instead, started
// from the jars deploy/kafka fetches (`make run-kafka`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/demo"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kafkademo:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kafkademo", flag.ContinueOnError)
	ports := fs.String("ports", joinPorts(demo.DefaultPorts), "comma-separated broker ports on 127.0.0.1, one broker each; 0 picks a free port")
	apacheKafka := fs.Bool("apache-kafka", false, "run the workload on one Apache Kafka node (from deploy/kafka's cached jars; Java 17 needed) listening on the first of -ports, instead of the in-process cluster")
	kafkaDir := fs.String("apache-kafka-dir", "_build/kafka-demo", "with -apache-kafka: the node's config, data and log (emptied first)")
	def := demo.Defaults()
	var o demo.Options
	fs.Float64Var(&o.OrdersRate, "orders-rate", def.OrdersRate, "records/s produced to orders")
	fs.IntVar(&o.OrdersPartitions, "orders-partitions", def.OrdersPartitions, "partitions of orders")
	fs.DurationVar(&o.OrdersDelay, "orders-delay", def.OrdersDelay, "how far behind the head orders-fast commits")
	fs.DurationVar(&o.AuditEvery, "audit-every", def.AuditEvery, "time between two audit records")
	fs.DurationVar(&o.AuditHistory, "audit-history", def.AuditHistory, "backdated audit history seeded at startup, one record per minute")
	fs.DurationVar(&o.AuditBatchEvery, "audit-batch-every", def.AuditBatchEvery, "period of the audit-batch job (its only commits)")
	fs.Float64Var(&o.PaymentsRate, "payments-rate", def.PaymentsRate, "records/s produced to payments")
	fs.DurationVar(&o.PaymentsStallAfter, "payments-stall-after", def.PaymentsStallAfter, "when payments-stalled stops committing")
	fs.Float64Var(&o.InventoryRate, "inventory-rate", def.InventoryRate, "records/s produced to inventory")
	fs.DurationVar(&o.InventoryChurnEvery, "inventory-churn-every", def.InventoryChurnEvery, "time between inventory-rebalancing membership changes")
	fs.IntVar(&o.InventoryMaxMembers, "inventory-max-members", def.InventoryMaxMembers, "most members inventory-rebalancing grows to")
	fs.Float64Var(&o.ClicksRate, "clicks-rate", def.ClicksRate, "records/s produced to clicks")
	fs.DurationVar(&o.ClicksProduceFor, "clicks-produce-for", def.ClicksProduceFor, "when the clicks producer stops")
	fs.Float64Var(&o.ClicksReadRate, "clicks-read-rate", def.ClicksReadRate, "records/s clicks-reader reads at most")
	fs.Float64Var(&o.ShipmentsRate, "shipments-rate", def.ShipmentsRate, "records/s produced to shipments outside a surge")
	fs.Float64Var(&o.ShipmentsSurgeRate, "shipments-surge-rate", def.ShipmentsSurgeRate, "records/s produced to shipments during a surge")
	fs.DurationVar(&o.ShipmentsSurgeAfter, "shipments-surge-after", def.ShipmentsSurgeAfter, "when the first shipments surge starts")
	fs.DurationVar(&o.ShipmentsSurgeEvery, "shipments-surge-every", def.ShipmentsSurgeEvery, "time from one shipments surge's start to the next's")
	fs.DurationVar(&o.ShipmentsSurgeFor, "shipments-surge-for", def.ShipmentsSurgeFor, "how long a shipments surge lasts")
	fs.Float64Var(&o.ShipmentsCatchupReadRate, "shipments-catchup-read-rate", def.ShipmentsCatchupReadRate, "records/s shipments-catchup reads at most")
	fs.Float64Var(&o.ShipmentsSlowReadRate, "shipments-slow-read-rate", def.ShipmentsSlowReadRate, "records/s shipments-slow reads at most")
	fs.Float64Var(&o.JobsRate, "jobs-rate", def.JobsRate, "records/s produced to jobs")
	fs.IntVar(&o.JobsMembers, "jobs-members", def.JobsMembers, "members of the jobs-workers share group")
	fs.DurationVar(&o.JobsHandleTime, "jobs-handle-time", def.JobsHandleTime, "how long a jobs-workers member takes over each record")
	fs.DurationVar(&o.StatusEvery, "status-every", def.StatusEvery, "period of the status line (negative disables it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var err error
	if o.Ports, err = parsePorts(*ports); err != nil {
		return err
	}
	o.Logger = log.New(os.Stderr, "kafkademo: ", log.Ltime)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *apacheKafka {
		node, err := apachekafka.StartNode(ctx, *kafkaDir, o.Ports[0], o.Logger.Printf)
		if err != nil {
			return err
		}
		defer node.Close()
		o.Bootstrap = node.Addrs()
	}
	d, err := demo.Start(ctx, o)
	if err != nil {
		return err
	}
	o.Logger.Printf("ready: bootstrap servers %s (Ctrl-C to stop)", strings.Join(d.Addrs(), ","))
	<-ctx.Done()
	// Signals stay caught until Close returns: `make run` sends SIGTERM
	// right after Ctrl-C's SIGINT, and that must not cut the shutdown short.
	d.Close()
	return nil
}

func joinPorts(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

func parsePorts(s string) ([]int, error) {
	var ports []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.Atoi(f)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("invalid port %q in -ports %q", f, s)
		}
		ports = append(ports, p)
	}
	if len(ports) == 0 {
		return nil, errors.New("-ports needs at least one port")
	}
	return ports, nil
}
