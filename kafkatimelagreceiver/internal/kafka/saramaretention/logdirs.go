package saramaretention

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
)

// PartitionSizes reads the size of each partition's log with
// DescribeLogDirs: one request per leader, carrying the partitions it leads
// (a follower's copy may be behind its leader's). A partition a broker
// holds in two log directories, moving between disks, counts the copy it
// serves, not the future one.
func (c *Retention) PartitionSizes(ctx context.Context, partitions []kafka.TopicPartition) (map[kafka.TopicPartition]int64, error) {
	call, stop := c.conn.Begin(ctx)
	defer stop()
	out := make(map[kafka.TopicPartition]int64, len(partitions))
	if len(partitions) == 0 {
		// A request naming no topic describes every partition the broker
		// has: never sent.
		return out, nil
	}
	client, err := c.conn.Connected(ctx)
	if err != nil {
		return out, err
	}
	byLeader, leaderErr := c.conn.ByLeader(ctx, call, client, partitions)
	errs := []error{leaderErr}
	for b, tps := range byLeader {
		if err := c.conn.Skipping(b.Addr()); err != nil {
			errs = append(errs, sizeErrors(tps, fmt.Errorf("read partition sizes from broker %d (%s): %w", b.ID(), b.Addr(), err))...)
			delete(byLeader, b)
		}
	}
	var mu sync.Mutex
	err = saramaconn.PerBroker(ctx, c.conn, call, byLeader, func(b *sarama.Broker, tps []kafka.TopicPartition) error {
		sizes, err := c.describeLogDirs(ctx, b, tps)
		mu.Lock()
		defer mu.Unlock()
		maps.Copy(out, sizes)
		errs = append(errs, err)
		return nil
	})
	return out, kafka.Join(append(errs, err)...)
}

// describeLogDirs asks one broker the sizes of the partitions it leads.
func (c *Retention) describeLogDirs(ctx context.Context, b *sarama.Broker, tps []kafka.TopicPartition) (map[kafka.TopicPartition]int64, error) {
	req := &sarama.DescribeLogDirsRequest{Version: c.describeLogDirsVersion()}
	for i, tp := range tps { // sorted: each topic's partitions together
		if i == 0 || tp.Topic != tps[i-1].Topic {
			req.DescribeTopics = append(req.DescribeTopics, sarama.DescribeLogDirsRequestTopic{Topic: tp.Topic})
		}
		last := &req.DescribeTopics[len(req.DescribeTopics)-1]
		last.PartitionIDs = append(last.PartitionIDs, tp.Partition)
	}
	resp, err := b.DescribeLogDirs(req)
	c.conn.Observe(ctx, b, "DescribeLogDirs", err)
	if err == nil && !errors.Is(resp.ErrorCode, sarama.ErrNoError) {
		err = saramaconn.ClusterAuthorization(resp.ErrorCode)
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %w", ctxErr, err) // the call's end cut it
		}
		err = fmt.Errorf("read partition sizes from broker %d: %w", b.ID(), err)
		var denied *kafka.AuthorizationError
		if errors.As(err, &denied) {
			// A refusal of the cluster names no topic: one error, which
			// Denials does not take for a topic's.
			return nil, err
		}
		return nil, kafka.Join(sizeErrors(tps, err)...)
	}
	// wanted: asked for and not answered yet.
	wanted := make(map[kafka.TopicPartition]bool, len(tps))
	for _, tp := range tps {
		wanted[tp] = true
	}
	out := make(map[kafka.TopicPartition]int64, len(tps))
	var errs, offline []error
	for _, dir := range resp.LogDirs {
		if !errors.Is(dir.ErrorCode, sarama.ErrNoError) {
			// An offline directory lists nothing: its partitions go
			// unanswered, for this reason.
			offline = append(offline, fmt.Errorf("log directory %s: %w", dir.Path, dir.ErrorCode))
			continue
		}
		for _, t := range dir.Topics {
			for _, p := range t.Partitions {
				tp := kafka.TopicPartition{Topic: t.Topic, Partition: p.PartitionID}
				if !wanted[tp] || p.IsTemporary {
					continue
				}
				wanted[tp] = false
				if p.Size < 0 {
					errs = append(errs, saramaconn.TopicError(tp.Topic, kafka.OperationDescribe,
						fmt.Errorf("size of %s/%d from broker %d: negative size %d", tp.Topic, tp.Partition, b.ID(), p.Size)))
					continue
				}
				out[tp] = p.Size
			}
		}
	}
	var missing []kafka.TopicPartition
	for _, tp := range tps {
		if wanted[tp] { // neither answered nor refused
			missing = append(missing, tp)
		}
	}
	why := fmt.Errorf("broker %d gave none: %w", b.ID(), errors.Join(offline...))
	if len(offline) == 0 {
		// Brokers before Kafka 3.2 answer a principal without Describe on
		// the cluster with nothing at all rather than an error.
		why = fmt.Errorf("broker %d gave none (DescribeLogDirs needs Describe on the cluster)", b.ID())
	}
	errs = append(errs, sizeErrors(missing, why)...)
	return out, kafka.Join(errs...)
}

// sizeErrors is err for each topic of tps, sorted: a TopicError naming how
// many of its partitions it cost.
func sizeErrors(tps []kafka.TopicPartition, err error) []error {
	perTopic := map[string]int{}
	for _, tp := range tps {
		perTopic[tp.Topic]++
	}
	out := make([]error, 0, len(perTopic))
	for _, topic := range slices.Sorted(maps.Keys(perTopic)) {
		out = append(out, saramaconn.TopicError(topic, kafka.OperationDescribe,
			fmt.Errorf("sizes of %d partitions of %s: %w", perTopic[topic], topic, err)))
	}
	return out
}

// describeLogDirsVersion is the newest DescribeLogDirs the protocol version
// speaks: from v3 (Kafka 3.2) a principal refused Describe on the cluster
// is told so.
func (c *Retention) describeLogDirsVersion() int16 {
	v := c.conn.Config().Version
	switch {
	case v.IsAtLeast(sarama.V3_3_0_0):
		return 4
	case v.IsAtLeast(sarama.V3_2_0_0):
		return 3
	case v.IsAtLeast(sarama.V2_6_0_0):
		return 2
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 1
	default:
		return 0
	}
}
