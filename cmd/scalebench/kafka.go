package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/kafkacount"
)

// recordsPerPartition is how many records every partition holds. Group g
// commits partition p at (g+p) mod (recordsPerPartition+1): every partition
// has groups at each offset from 0 (all of it unconsumed) to the end.
const recordsPerPartition = 4

// topicName is the workload's one topic.
const topicName = "scale"

// workload is groups x partitions (group, partition) pairs on one topic:
// every group commits on every partition.
type workload struct {
	groups     int
	partitions int32
}

func (w workload) pairs() int { return w.groups * int(w.partitions) }

func (w workload) String() string { return fmt.Sprintf("%dx%d", w.groups, w.partitions) }

func (w workload) group(i int) string { return fmt.Sprintf("group-%03d", i) }

func parseWorkloads(s string) ([]workload, error) {
	var out []workload
	for _, f := range strings.Split(s, ",") {
		var w workload
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%dx%d", &w.groups, &w.partitions); err != nil || w.groups <= 0 || w.partitions <= 0 {
			return nil, fmt.Errorf("workload %q: want GROUPSxPARTITIONS, e.g. 50x2000", f)
		}
		out = append(out, w)
	}
	return out, nil
}

// kafka is an in-process kfake cluster whose requests are counted by API key.
type kafka struct {
	cluster *kfake.Cluster
	addrs   []string
	client  *kgo.Client
	admin   *kadm.Client
	counts  *kafkacount.Counter
}

func startKafka(brokers int) (*kafka, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers))
	if err != nil {
		return nil, err
	}
	k := &kafka{cluster: c, addrs: c.ListenAddrs()}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(k.addrs...),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// No KIP-714 telemetry pushes: only the collector's requests count.
		kgo.DisableClientMetrics(),
	)
	if err != nil {
		c.Close()
		return nil, err
	}
	k.client = cl
	k.admin = kadm.NewClient(cl)
	k.counts = kafkacount.Observe(c)
	return k, nil
}

func (k *kafka) close() {
	k.client.Close()
	k.cluster.Close()
}

// load creates the topic, writes the records and commits every group.
func (k *kafka) load(ctx context.Context, w workload) error {
	resp, err := k.admin.CreateTopic(ctx, w.partitions, 1, nil, topicName)
	if err != nil {
		return err
	}
	if resp.Err != nil {
		return resp.Err
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	records := make([]*kgo.Record, 0, int(w.partitions)*recordsPerPartition)
	for p := range w.partitions {
		for i := range recordsPerPartition {
			ts := base.Add(time.Duration(i)*10*time.Minute + time.Duration(p)*time.Millisecond)
			records = append(records, &kgo.Record{Topic: topicName, Partition: p, Timestamp: ts, Value: []byte("x")})
		}
	}
	if err := k.client.ProduceSync(ctx, records...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	for g := range w.groups {
		offsets := kadm.Offsets{topicName: make(map[int32]kadm.Offset, w.partitions)}
		for p := range w.partitions {
			at := int64((g + int(p)) % (recordsPerPartition + 1))
			offsets[topicName][p] = kadm.Offset{Topic: topicName, Partition: p, At: at, LeaderEpoch: -1}
		}
		resp, err := k.admin.CommitOffsets(ctx, w.group(g), offsets)
		if err != nil {
			return fmt.Errorf("commit %s: %w", w.group(g), err)
		}
		if err := resp.Error(); err != nil {
			return fmt.Errorf("commit %s: %w", w.group(g), err)
		}
	}
	return nil
}

// coordinators counts the distinct coordinators of the workload's groups.
func (k *kafka) coordinators(ctx context.Context, w workload) (int, error) {
	groups := make([]string, w.groups)
	for g := range groups {
		groups[g] = w.group(g)
	}
	described, err := k.admin.DescribeGroups(ctx, groups...)
	if err != nil {
		return 0, err
	}
	nodes := map[int32]struct{}{}
	for _, d := range described {
		nodes[d.Coordinator.NodeID] = struct{}{}
	}
	return len(nodes), nil
}

// requestCounts are requests served, by API key.
type requestCounts = kafkacount.Counts

func (k *kafka) snapshot() requestCounts { return k.counts.Snapshot() }
