package saramaconn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/IBM/sarama"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
	"go.uber.org/zap"
)

// reconnectRefusing opens a new connection to each leader that the
// refreshed metadata names for a partition it said it does not lead: its
// connection may reach a broker that left the cluster at the same address
// (a broker replaced behind a proxy or load balancer), which answers, but
// for a cluster it is no longer part of.
func (c *Conn) reconnectRefusing(leaders map[*sarama.Broker][]kafka.TopicPartition, last *Round) {
	for b, tps := range leaders {
		for _, tp := range tps {
			if last.refusedBy[tp] == b {
				c.logger.Debug("reconnecting to a leader that said it does not lead what the metadata says it does",
					zap.Int32("broker", b.ID()), zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition))
				_ = b.Close()
				_ = b.Open(c.config) // in the background: the retry waits for it
				break
			}
		}
	}
}

// leaderMoved tells whether a partition's error means that the metadata
// naming its leader is out of date.
func leaderMoved(kerr sarama.KError) bool {
	switch kerr {
	case sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable, sarama.ErrUnknownTopicOrPartition,
		sarama.ErrReplicaNotAvailable, sarama.ErrFencedLeaderEpoch, sarama.ErrUnknownLeaderEpoch:
		return true
	}
	return false
}

func topicsOf(tps []kafka.TopicPartition) []string {
	var topics []string
	for _, tp := range tps { // sorted: each topic's partitions together
		if len(topics) == 0 || topics[len(topics)-1] != tp.Topic {
			topics = append(topics, tp.Topic)
		}
	}
	return topics
}

// ByLeader groups partitions by their leader broker. Partitions whose leader
// cannot be found are reported in the error and left out.
func (c *Conn) ByLeader(ctx context.Context, call *brokerwatch.Call, client sarama.Client, partitions []kafka.TopicPartition) (map[*sarama.Broker][]kafka.TopicPartition, error) {
	out, _, err := c.leadersOrUnknown(ctx, call, client, partitions)
	return out, err
}

// leadersOrUnknown is ByLeader that also returns the partitions the cluster
// does not have, found with one metadata refresh for all of them.
func (c *Conn) leadersOrUnknown(ctx context.Context, call *brokerwatch.Call, client sarama.Client, partitions []kafka.TopicPartition) (map[*sarama.Broker][]kafka.TopicPartition, []kafka.TopicPartition, error) {
	missing := c.unknownPartitions(ctx, call, client, partitions)
	type leaders struct {
		out             map[*sarama.Broker][]kafka.TopicPartition
		unknown         []kafka.TopicPartition
		unknownPerTopic map[string]int
		errs            []error
	}
	// A leader missing from the cache is looked up: the whole walk is one
	// lookup, which the call stops waiting for when its context ends.
	found, err := brokerwatch.Lookup(ctx, call, func() (leaders, error) {
		l := leaders{out: map[*sarama.Broker][]kafka.TopicPartition{}, unknownPerTopic: map[string]int{}}
		failedTopics := map[string]bool{}
		for i, tp := range partitions {
			if missing[tp] {
				l.unknown = append(l.unknown, tp)
				l.unknownPerTopic[tp.Topic]++
				continue
			}
			if failedTopics[tp.Topic] {
				continue
			}
			// A leader missing from the cache costs a metadata request.
			if err := ctx.Err(); err != nil {
				l.errs = append(l.errs, fmt.Errorf("find leaders of %d partitions: %w", len(partitions)-i, err))
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
				l.errs = append(l.errs, TopicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("find leader of %s/%d: %w", tp.Topic, tp.Partition, Authorization(err))))
				continue
			}
			l.out[leader] = append(l.out[leader], tp)
		}
		return l, nil
	})
	if err != nil {
		return map[*sarama.Broker][]kafka.TopicPartition{}, nil, fmt.Errorf("find leaders of %d partitions: %w", len(partitions), err)
	}
	out, unknown, unknownPerTopic, errs := found.out, found.unknown, found.unknownPerTopic, found.errs
	// One error per topic, in order: a deleted topic of 500 partitions is
	// one fault.
	for _, topic := range slices.Sorted(maps.Keys(unknownPerTopic)) {
		errs = append(errs, TopicError(topic, kafka.OperationDescribe,
			fmt.Errorf("find leaders of %d partitions of %s: %w", unknownPerTopic[topic], topic, sarama.ErrUnknownTopicOrPartition)))
	}
	return out, unknown, kafka.Join(errs...)
}

// transportRefreshInterval rate-limits the metadata refreshes that
// transport errors call for: a crashed leader fails every call until the
// metadata names its successor, and a broker that only stopped answering
// keeps leading.
const transportRefreshInterval = 5 * time.Second

// transportRefreshDue tells whether a refresh for a transport error may be
// made now, and takes the turn when it may.
func (c *Conn) transportRefreshDue() bool {
	now := time.Now().UnixNano()
	last := c.transportRefresh.Load()
	return now-last >= int64(transportRefreshInterval) && c.transportRefresh.CompareAndSwap(last, now)
}

// refreshMetadata refreshes the topics' metadata in sarama's cache: at once
// when a broker said a leader moved, at most every transportRefreshInterval
// when a leader could not be reached. sarama runs it without a context:
// the call waits for it until its context ends (brokerwatch.Lookup), and
// only when the last refresh would end in its time (brokerwatch's Rule 7);
// otherwise the refresh runs for the next call, and waited is false.
func (c *Conn) refreshMetadata(ctx context.Context, call *brokerwatch.Call, client sarama.Client, topics []string, transport bool) (waited bool) {
	if transport && !c.transportRefreshDue() {
		return true
	}
	refresh := func() error {
		start := time.Now()
		err := client.RefreshMetadata(topics...)
		if err == nil {
			c.refreshTook.Store(int64(time.Since(start)))
		} else {
			c.logger.Debug("refresh metadata", zap.Strings("topics", topics), zap.Error(err))
		}
		return err
	}
	if !call.Budget().Fits(time.Now(), time.Duration(c.refreshTook.Load())) {
		brokerwatch.Background(call, func() { _ = refresh() })
		return false
	}
	_, _ = brokerwatch.Lookup(ctx, call, func() (struct{}, error) { return struct{}{}, refresh() })
	return true
}

// refreshInBackground refreshes the topics' metadata for the next call, as
// refreshMetadata does, without waiting.
func (c *Conn) refreshInBackground(call *brokerwatch.Call, client sarama.Client, topics []string, transport bool) {
	if transport && !c.transportRefreshDue() {
		return
	}
	brokerwatch.Background(call, func() {
		if err := client.RefreshMetadata(topics...); err != nil {
			c.logger.Debug("refresh metadata", zap.Strings("topics", topics), zap.Error(err))
		}
	})
}
