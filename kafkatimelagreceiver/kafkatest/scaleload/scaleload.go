// Package scaleload serves the scale workload of the benchmarks from an
// in-process Kafka (kfake): every one of G groups commits on every partition
// of T topics of P partitions, G x T x P (group, partition) pairs. The Go
// benchmarks of kafkatimelagreceiver and cmd/scalebench load the same
// cluster through it, and count its requests by API key.
package scaleload

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// RecordsPerPartition is how many records every partition holds, an hour to
// ten minutes old. Group g commits partition p at (g+p) mod
// (RecordsPerPartition+1): every partition has groups at each offset from 0
// (all of it unconsumed) to the end (caught up).
const RecordsPerPartition = 4

// Workload is Groups x Topics x PartitionsPerTopic (group, partition) pairs.
type Workload struct {
	Groups             int
	Topics             int
	PartitionsPerTopic int32
	// Apart: each topic has Groups groups of its own, each reading that
	// topic only (Topics x Groups groups), as most clusters are laid out;
	// otherwise every group reads every topic.
	Apart bool
}

// Pairs is the number of (group, partition) pairs.
func (w Workload) Pairs() int { return w.Groups * w.Topics * int(w.PartitionsPerTopic) }

// Partitions is the number of partitions of all topics.
func (w Workload) Partitions() int { return w.Topics * int(w.PartitionsPerTopic) }

// GroupCount is the number of groups.
func (w Workload) GroupCount() int {
	if w.Apart {
		return w.Groups * w.Topics
	}
	return w.Groups
}

// TopicsOf are the indexes of the topics group g reads.
func (w Workload) TopicsOf(g int) []int {
	if w.Apart {
		return []int{g / w.Groups}
	}
	out := make([]int, w.Topics)
	for t := range out {
		out[t] = t
	}
	return out
}

// String is GROUPSxPARTITIONS for one topic, GROUPSxTOPICSxPARTITIONS for
// groups apart (Parse reads both), and GROUPSx(TOPICSxPARTITIONS) for
// every group on every topic.
func (w Workload) String() string {
	switch {
	case w.Topics == 1:
		return fmt.Sprintf("%dx%d", w.Groups, w.PartitionsPerTopic)
	case w.Apart:
		return fmt.Sprintf("%dx%dx%d", w.Groups, w.Topics, w.PartitionsPerTopic)
	}
	return fmt.Sprintf("%dx(%dx%d)", w.Groups, w.Topics, w.PartitionsPerTopic)
}

// Topic names the i-th topic.
func (w Workload) Topic(i int) string { return fmt.Sprintf("scale-%03d", i) }

// Group names the i-th group.
func (w Workload) Group(i int) string { return fmt.Sprintf("group-%03d", i) }

// Parse reads comma-separated workloads: GROUPSxPARTITIONS, one topic of
// PARTITIONS partitions that GROUPS groups read, or
// GROUPSxTOPICSxPARTITIONS, TOPICS topics of PARTITIONS partitions each
// read by GROUPS groups of its own.
func Parse(s string) ([]Workload, error) {
	var out []Workload
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		w := Workload{Topics: 1}
		var err error
		if strings.Count(f, "x") == 2 {
			w.Apart = true
			_, err = fmt.Sscanf(f, "%dx%dx%d", &w.Groups, &w.Topics, &w.PartitionsPerTopic)
		} else {
			_, err = fmt.Sscanf(f, "%dx%d", &w.Groups, &w.PartitionsPerTopic)
		}
		if err != nil || w.Groups <= 0 || w.Topics <= 0 || w.PartitionsPerTopic <= 0 {
			return nil, fmt.Errorf("workload %q: want GROUPSxPARTITIONS (e.g. 50x2000) or GROUPSxTOPICSxPARTITIONS (e.g. 100x100x100, each topic with groups of its own)", f)
		}
		out = append(out, w)
	}
	return out, nil
}

// Cluster is a kfake cluster with a franz-go client to load it, a count
// of every request it serves, by API key, and of the bytes its brokers
// send each client (Wire).
type Cluster struct {
	Kafka  *kfake.Cluster
	Addrs  []string
	Client *kgo.Client
	Admin  *kadm.Client
	Wire   *kafkacount.Wire
	counts *kafkacount.Counter
}

// Start serves a cluster of brokers brokers.
func Start(brokers int, opts ...kfake.Opt) (*Cluster, error) {
	wire := kafkacount.NewWire()
	kc, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(brokers), kfake.ListenFn(wire.Listen)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("start kfake: %w", err)
	}
	c := &Cluster{Kafka: kc, Addrs: kc.ListenAddrs(), Wire: wire}
	client, err := kgo.NewClient(
		kgo.SeedBrokers(c.Addrs...),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20),
		// No KIP-714 telemetry pushes: only what is measured counts.
		kgo.DisableClientMetrics(),
	)
	if err != nil {
		kc.Close()
		return nil, fmt.Errorf("client of kfake: %w", err)
	}
	c.Client = client
	c.Admin = kadm.NewClient(client)
	c.counts = kafkacount.Observe(kc)
	return c, nil
}

// Close stops the client and the cluster.
func (c *Cluster) Close() {
	c.Client.Close()
	c.Kafka.Close()
}

// Requests is what the cluster has served so far, by API key.
func (c *Cluster) Requests() kafkacount.Counts { return c.counts.Snapshot() }

// Load creates the workload's topics, writes RecordsPerPartition records to
// every partition and commits every group on every partition.
func (c *Cluster) Load(ctx context.Context, w Workload) error {
	for t := range w.Topics {
		resp, err := c.Admin.CreateTopic(ctx, w.PartitionsPerTopic, 1, nil, w.Topic(t))
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("create topic %s: %w", w.Topic(t), err)
		}
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	records := make([]*kgo.Record, 0, w.Partitions()*RecordsPerPartition)
	for t := range w.Topics {
		for p := range w.PartitionsPerTopic {
			for i := range RecordsPerPartition {
				ts := base.Add(time.Duration(i)*10*time.Minute + time.Duration(p)*time.Millisecond)
				records = append(records, &kgo.Record{Topic: w.Topic(t), Partition: p, Timestamp: ts, Value: []byte("x")})
			}
		}
	}
	if err := c.Client.ProduceSync(ctx, records...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	for g := range w.GroupCount() {
		offsets := kadm.Offsets{}
		for _, t := range w.TopicsOf(g) {
			topic := w.Topic(t)
			offsets[topic] = make(map[int32]kadm.Offset, w.PartitionsPerTopic)
			for p := range w.PartitionsPerTopic {
				at := int64((g + int(p)) % (RecordsPerPartition + 1))
				offsets[topic][p] = kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1}
			}
		}
		resp, err := c.Admin.CommitOffsets(ctx, w.Group(g), offsets)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("commit %s: %w", w.Group(g), err)
		}
	}
	return nil
}

// Coordinators counts the distinct coordinators of the workload's groups.
func (c *Cluster) Coordinators(ctx context.Context, w Workload) (int, error) {
	groups := make([]string, w.GroupCount())
	for g := range groups {
		groups[g] = w.Group(g)
	}
	described, err := c.Admin.DescribeGroups(ctx, groups...)
	if err != nil {
		return 0, fmt.Errorf("describe groups: %w", err)
	}
	nodes := map[int32]struct{}{}
	for _, d := range described {
		nodes[d.Coordinator.NodeID] = struct{}{}
	}
	return len(nodes), nil
}
