// Package apachekafka runs Apache Kafka, the real broker, for tests: a KRaft
// cluster on 127.0.0.1 started from the jars deploy/kafka/fetch-kafka.sh
// fetches with Maven (Java 17 and Maven needed), either one combined node
// (broker and controller) or a controller and brokers of their own, for
// tests that move leaders. It stops, kills, pauses and resumes brokers,
// creates topics with configs and runs Kafka's own command-line tools.
// Every process it starts has an owner that stops it: Close, or the test's
// cleanup through New.
package apachekafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// Version is the Kafka version deploy/kafka/pom.xml pins.
const Version = "4.4.0"

// startTimeout bounds a node's start, from the JVM's launch to its listener
// serving metadata with every broker in it.
const startTimeout = 90 * time.Second

// Options shape a cluster.
type Options struct {
	// Brokers is the number of brokers: 1 (the default) runs one combined
	// node; more run a controller and that many brokers.
	Brokers int
	// Config is added to every broker's server.properties, over the
	// defaults (a test's knobs: segment sizes, retention checks).
	Config map[string]string
	// SASLSSL, when set, gives every broker a second listener that takes
	// SASL_SSL with SCRAM-SHA-512, with the standard authorizer on.
	SASLSSL *SASLSSL
	// Port is the first port to listen on (the default picks free
	// ports): a node takes Port+2i for its client listener and, for the
	// secured one, Port+2i+1; the controller's listener comes after.
	Port int
	// Wire, when set, counts the traffic of the brokers' plaintext
	// listeners: each broker advertises a proxy that forwards to its
	// real listener through Wire.
	Wire *kafkacount.Wire
	// Logf, when set, reports what the cluster does (each start, stop
	// and tool run).
	Logf func(format string, args ...any)
}

// SASLSSL is a SASL_SSL listener with SCRAM-SHA-512 and ACLs.
type SASLSSL struct {
	// CertPEM and KeyPEM are the brokers' certificate chain and its
	// unencrypted PKCS#8 key, for 127.0.0.1.
	CertPEM, KeyPEM []byte
	// Users are the SCRAM-SHA-512 logins (name to password), created when
	// the storage is formatted.
	Users map[string]string
	// SuperUsers are principals ("User:admin") that ACLs do not limit;
	// the plaintext listener's ANONYMOUS is always one, so that the
	// brokers and the test's own client need no ACLs.
	SuperUsers []string
}

// Cluster is a running cluster. Its methods are safe to call from one
// goroutine at a time.
type Cluster struct {
	lib, dir string
	opts     Options
	// Nodes are the brokers, in node ID order; the controller of a
	// cluster of several brokers is not among them.
	Nodes      []*Node
	controller *Node
	clusterID  string
	proxies    []*proxy
}

// Lib is the directory of Kafka's jars: $KAFKA_LIB, or what
// deploy/kafka/fetch-kafka.sh prints (it fetches them the first time).
func Lib(ctx context.Context) (string, error) {
	if lib := os.Getenv("KAFKA_LIB"); lib != "" {
		return lib, nil
	}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("apachekafka: cannot locate deploy/kafka/fetch-kafka.sh: set KAFKA_LIB to the directory of Kafka's jars")
	}
	script := filepath.Join(filepath.Dir(self), "..", "..", "..", "deploy", "kafka", "fetch-kafka.sh")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("apachekafka: %s: %w", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Start formats and starts a cluster in dir (which it fills with the
// nodes' configs, data and logs) and waits until every broker serves
// metadata naming them all. On an error, what was started is stopped.
func Start(ctx context.Context, lib, dir string, opts Options) (*Cluster, error) {
	if opts.Brokers == 0 {
		opts.Brokers = 1
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	c := &Cluster{lib: lib, dir: dir, opts: opts, clusterID: "a2Fma2F0aW1lbGFndGVzdA"}
	if err := c.layOut(); err != nil {
		return nil, err
	}
	all := c.Nodes
	if c.controller != nil {
		all = append([]*Node{c.controller}, all...)
	}
	for _, n := range all {
		if err := c.format(ctx, n); err != nil {
			return nil, err
		}
	}
	if opts.Wire != nil {
		for _, n := range c.Nodes {
			p, err := startProxy(opts.Wire, n.Addr, n.listenAddr)
			if err != nil {
				c.Close()
				return nil, err
			}
			c.proxies = append(c.proxies, p)
		}
	}
	started := time.Now()
	for _, n := range all {
		if err := n.start(); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	opts.Logf("apachekafka: %d broker(s) ready in %v (%s)", len(c.Nodes), time.Since(started).Round(time.Millisecond), dir)
	return c, nil
}

// Addrs are the brokers' plaintext listeners, host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// SecureAddrs are the brokers' SASL_SSL listeners (none without SASLSSL).
func (c *Cluster) SecureAddrs() []string {
	var out []string
	for _, n := range c.Nodes {
		if n.SecureAddr != "" {
			out = append(out, n.SecureAddr)
		}
	}
	return out
}

// Dir is the directory of the nodes' configs, data and logs.
func (c *Cluster) Dir() string { return c.dir }

// Close stops every node (SIGTERM, then SIGKILL for one still up after 30
// s) and waits for them.
func (c *Cluster) Close() {
	for _, n := range c.Nodes {
		n.Stop()
	}
	if c.controller != nil {
		c.controller.Stop()
	}
	for _, p := range c.proxies {
		p.close()
	}
}

// WaitReady waits until every running broker serves metadata that names
// every running broker.
func (c *Cluster) WaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var up []*Node
	for _, n := range c.Nodes {
		if n.Running() {
			up = append(up, n)
		}
	}
	want := make([]int32, len(up))
	for i, n := range up {
		want[i] = int32(n.ID)
	}
	for _, n := range up {
		if err := n.waitServing(ctx, want, c.controller); err != nil {
			return err
		}
	}
	return nil
}

// Client connects a franz-go client to the brokers' plaintext listeners
// with opts after the seeds; the caller closes it.
func (c *Cluster) Client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, opts...)...)
}

// CreateTopic creates a topic with configs, replicated min(3, brokers)
// times, and waits until every partition has a leader.
func (c *Cluster) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) error {
	cl, err := c.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ptrs := map[string]*string{}
	for k, v := range configs {
		ptrs[k] = &v
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rf := int16(min(3, len(c.Nodes)))
	resp, err := adm.CreateTopic(ctx, partitions, rf, ptrs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s (%d partitions, configs %v): %w", name, partitions, configs, err)
	}
	for !c.allLed(ctx, name, int(partitions)) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: no leader for every partition: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// allLed says whether a fresh client's metadata (a client kept across
// attempts answers from what it learnt before) gives each of the topic's
// partitions a leader.
func (c *Cluster) allLed(ctx context.Context, topic string, partitions int) bool {
	cl, err := c.Client(kgo.RequestRetries(0))
	if err != nil {
		return false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return false
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) != partitions {
		return false
	}
	for _, p := range td.Partitions {
		if p.Leader < 0 || p.Err != nil {
			return false
		}
	}
	return true
}

// Node finds the broker with node ID id.
func (c *Cluster) Node(id int) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// freePort asks the kernel for a free port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *Cluster) port(i int) (int, error) {
	if c.opts.Port > 0 {
		return c.opts.Port + i, nil
	}
	return freePort()
}

func itoa(i int) string { return strconv.Itoa(i) }

// StartNode starts one combined node for a person (`make kafka-up`, `make
// run-kafka`): its client listener on port, the controller's on port+2, in
// dir, emptied first. Close stops it.
func StartNode(ctx context.Context, dir string, port int, logf func(string, ...any)) (*Cluster, error) {
	lib, err := Lib(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return Start(ctx, lib, abs, Options{Port: port, Logf: logf})
}
