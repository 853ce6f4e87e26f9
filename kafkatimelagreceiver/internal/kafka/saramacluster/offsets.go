package saramacluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// EndOffsets reads the high watermark of each partition.
func (c *Cluster) EndOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return c.listOffsets(ctx, partitions, sarama.OffsetNewest, sarama.ReadUncommitted)
}

// StableOffsets reads the last stable offset of each partition: the latest
// offset a read_committed ListOffsets gives (from Kafka 0.11; older brokers
// give the high watermark).
func (c *Cluster) StableOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return c.listOffsets(ctx, partitions, sarama.OffsetNewest, sarama.ReadCommitted)
}

// StartOffsets reads the log start offset of each partition.
func (c *Cluster) StartOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return c.listOffsets(ctx, partitions, sarama.OffsetOldest, sarama.ReadUncommitted)
}

// listOffsets sends one ListOffsets per leader carrying all its partitions.
func (c *Cluster) listOffsets(ctx context.Context, partitions []kafka.TopicPartition, which int64, isolation sarama.IsolationLevel) (kafka.OffsetRead, error) {
	read := kafka.OffsetRead{Offsets: make(map[kafka.TopicPartition]int64, len(partitions))}
	client, err := c.connected(ctx)
	if err != nil {
		return read, err
	}
	byLeader, unknown, leaderErr := c.leadersOrUnknown(ctx, client, partitions)
	read.Unknown = unknown
	var (
		mu    sync.Mutex
		stale = map[string]struct{}{}
	)
	read.Sent = time.Now()
	err = perBroker(ctx, c, byLeader, func(b *sarama.Broker, tps []kafka.TopicPartition) error {
		req := sarama.NewOffsetRequest(c.config.Version)
		req.IsolationLevel = isolation
		for _, tp := range tps {
			req.AddBlock(tp.Topic, tp.Partition, which, 1)
		}
		resp, err := b.GetAvailableOffsets(req)
		c.observe(ctx, b, "ListOffsets", err)
		if err != nil {
			return fmt.Errorf("list offsets from broker %d: %w", b.ID(), err)
		}
		var errs []error
		mu.Lock()
		defer mu.Unlock()
		for _, tp := range tps {
			block := resp.GetBlock(tp.Topic, tp.Partition)
			if block == nil {
				errs = append(errs, topicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("list offsets of %s/%d from broker %d: no answer", tp.Topic, tp.Partition, b.ID())))
				continue
			}
			if !errors.Is(block.Err, sarama.ErrNoError) {
				errs = append(errs, topicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("list offsets of %s/%d from broker %d: %w", tp.Topic, tp.Partition, b.ID(), authorization(block.Err))))
				stale[tp.Topic] = struct{}{}
				if errors.Is(block.Err, sarama.ErrUnknownTopicOrPartition) {
					read.Unknown = append(read.Unknown, tp)
				}
				continue
			}
			offset := block.Offset
			if req.Version == 0 && len(block.Offsets) > 0 {
				offset = block.Offsets[0]
			}
			read.Offsets[tp] = offset
		}
		return kafka.Join(errs...)
	})
	read.Received = time.Now()
	if len(stale) > 0 && ctx.Err() == nil {
		// Leadership moved or the topic changed: the next read should see
		// fresh metadata.
		topics := make([]string, 0, len(stale))
		for t := range stale {
			topics = append(topics, t)
		}
		if refreshErr := client.RefreshMetadata(topics...); refreshErr != nil {
			c.logger.Debug("refresh metadata", zap.Strings("topics", topics), zap.Error(refreshErr))
		}
	}
	return read, kafka.Join(leaderErr, err)
}

// byLeader groups partitions by their leader broker. Partitions whose leader
// cannot be found are reported in the error and left out.
func (c *Cluster) byLeader(ctx context.Context, client sarama.Client, partitions []kafka.TopicPartition) (map[*sarama.Broker][]kafka.TopicPartition, error) {
	out, _, err := c.leadersOrUnknown(ctx, client, partitions)
	return out, err
}

// leadersOrUnknown is byLeader that also returns the partitions the cluster
// does not have, found with one metadata refresh for all of them.
func (c *Cluster) leadersOrUnknown(ctx context.Context, client sarama.Client, partitions []kafka.TopicPartition) (map[*sarama.Broker][]kafka.TopicPartition, []kafka.TopicPartition, error) {
	var errs []error
	out := map[*sarama.Broker][]kafka.TopicPartition{}
	missing := c.unknownPartitions(ctx, client, partitions)
	var unknown []kafka.TopicPartition
	unknownPerTopic := map[string]int{}
	failedTopics := map[string]bool{}
	for i, tp := range partitions {
		if missing[tp] {
			unknown = append(unknown, tp)
			unknownPerTopic[tp.Topic]++
			continue
		}
		if failedTopics[tp.Topic] {
			continue
		}
		// A leader missing from the cache costs a metadata request.
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("find leaders of %d partitions: %w", len(partitions)-i, err))
			break
		}
		leader, err := client.Leader(tp.Topic, tp.Partition)
		if err != nil {
			if errors.Is(err, sarama.ErrUnknownTopicOrPartition) || errors.Is(err, sarama.ErrLeaderNotAvailable) ||
				errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
				// Do not ask again for every partition of a missing (or
				// forbidden) topic.
				failedTopics[tp.Topic] = true
			}
			errs = append(errs, topicError(tp.Topic, kafka.OperationDescribe,
				fmt.Errorf("find leader of %s/%d: %w", tp.Topic, tp.Partition, authorization(err))))
			continue
		}
		out[leader] = append(out[leader], tp)
	}
	// One error per topic, in order: a deleted topic of 500 partitions is
	// one fault.
	for _, topic := range slices.Sorted(maps.Keys(unknownPerTopic)) {
		errs = append(errs, topicError(topic, kafka.OperationDescribe,
			fmt.Errorf("find leaders of %d partitions of %s: %w", unknownPerTopic[topic], topic, sarama.ErrUnknownTopicOrPartition)))
	}
	return out, unknown, kafka.Join(errs...)
}
