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
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
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
// Partitions whose leader moved (the broker says it is not the leader, or
// does not answer) are looked up again and read once more from their new
// leader in the same call, up to leaderRetries times, so that a leader
// election costs no read: they come back in read.Retries, with times of
// their own.
func (c *Cluster) listOffsets(ctx context.Context, partitions []kafka.TopicPartition, which int64, isolation sarama.IsolationLevel) (kafka.OffsetRead, error) {
	call, stop := c.begin(ctx)
	defer stop()
	read := kafka.OffsetRead{Offsets: make(map[kafka.TopicPartition]int64, len(partitions))}
	client, err := c.connected(ctx)
	if err != nil {
		return read, err
	}
	byLeader, unknown, leaderErr := c.leadersOrUnknown(ctx, call, client, partitions)
	read.Unknown = unknown
	read.Sent = time.Now()
	last := c.listOffsetsFrom(ctx, call, byLeader, which, isolation, read.Offsets)
	read.Received = time.Now()
	errs := []error{leaderErr}
	for range leaderRetries {
		moved := last.moved()
		if len(moved) == 0 || ctx.Err() != nil {
			break
		}
		if !c.refreshMetadata(ctx, call, client, topicsOf(moved), last.transport) || ctx.Err() != nil {
			// No fresh leaders in time (the refresh took the rest of the
			// call, or would have): asking again could only fail the same
			// way, and would put that in place of why they went unread.
			break
		}
		// Asked again: this round's answer for them stands instead, and
		// the partitions the last round did not know are known or not by
		// this one.
		for _, tp := range moved {
			last.forget(tp)
		}
		errs = append(errs, last.err())
		retryLeaders, retryUnknown, retryLeaderErr := c.leadersOrUnknown(ctx, call, client, moved)
		c.reconnectRefusing(retryLeaders, last)
		read.Unknown = append(read.Unknown, retryUnknown...)
		errs = append(errs, retryLeaderErr)
		retried := make(map[kafka.TopicPartition]int64, len(moved))
		retry := kafka.Retry{Sent: time.Now()}
		last = c.listOffsetsFrom(ctx, call, retryLeaders, which, isolation, retried)
		retry.Received = time.Now()
		for tp, offset := range retried {
			read.Offsets[tp] = offset
			retry.Partitions = append(retry.Partitions, tp)
		}
		if len(retry.Partitions) > 0 {
			kafka.SortPartitions(retry.Partitions)
			read.Retries = append(read.Retries, retry)
		}
	}
	read.Unknown = append(read.Unknown, last.unknown...)
	if len(last.moved()) > 0 {
		// Still not at the leader: the next call finds the metadata fresh.
		c.refreshInBackground(call, client, topicsOf(last.moved()), last.transport)
	}
	return read, kafka.Join(append(errs, last.err())...)
}

// leaderRetries is how many times one call asks the partitions whose
// leader moved again, each time after a metadata refresh. During a rolling
// leader move a refresh can name a leader that moves on before it is
// asked; a second retry still keeps that partition's point, and a partition
// that moved three times within one call is rare enough to wait for the
// next.
const leaderRetries = 2

// offsetsAnswer is what one round of ListOffsets requests left unread.
type offsetsAnswer struct {
	mu sync.Mutex
	// failed holds each unread partition's error; stale are those worth
	// asking again once the metadata is fresh (the leader moved, or its
	// broker did not answer).
	failed  map[kafka.TopicPartition]error
	stale   map[kafka.TopicPartition]bool
	unknown []kafka.TopicPartition
	// refusedBy is the broker that said it does not lead each partition.
	refusedBy map[kafka.TopicPartition]*sarama.Broker
	// transport tells that a broker could not be reached at all (it
	// crashed, or does not answer): the refresh it calls for is rate
	// limited, the broker failing every call until it is gone.
	transport bool
	others    []error // errors of no partition
}

func (a *offsetsAnswer) fail(tp kafka.TopicPartition, err error, stale bool) {
	a.failed[tp] = err
	if stale {
		a.stale[tp] = true
	}
}

func (a *offsetsAnswer) forget(tp kafka.TopicPartition) {
	delete(a.failed, tp)
	delete(a.stale, tp)
}

func (a *offsetsAnswer) moved() []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, 0, len(a.stale))
	for tp := range a.stale {
		out = append(out, tp)
	}
	kafka.SortPartitions(out)
	return out
}

// err is one error per unread partition, in partition order.
func (a *offsetsAnswer) err() error {
	tps := make([]kafka.TopicPartition, 0, len(a.failed))
	for tp := range a.failed {
		tps = append(tps, tp)
	}
	kafka.SortPartitions(tps)
	errs := append([]error(nil), a.others...)
	for _, tp := range tps {
		errs = append(errs, a.failed[tp])
	}
	return kafka.Join(errs...)
}

// listOffsetsFrom sends one ListOffsets to each leader and puts what it
// reads into offsets.
func (c *Cluster) listOffsetsFrom(ctx context.Context, call *brokerwatch.Call, byLeader map[*sarama.Broker][]kafka.TopicPartition, which int64, isolation sarama.IsolationLevel, offsets map[kafka.TopicPartition]int64) *offsetsAnswer {
	a := &offsetsAnswer{failed: map[kafka.TopicPartition]error{}, stale: map[kafka.TopicPartition]bool{}, refusedBy: map[kafka.TopicPartition]*sarama.Broker{}}
	for b, tps := range byLeader {
		// A skipped broker's partitions may have a new leader by now.
		if err := c.watch.Skipping(b.Addr()); err != nil {
			err = fmt.Errorf("list offsets from broker %d (%s): %w", b.ID(), b.Addr(), err)
			a.transport = true
			for _, tp := range tps {
				a.fail(tp, topicError(tp.Topic, kafka.OperationDescribe, err), true)
			}
			delete(byLeader, b)
		}
	}
	err := perBroker(ctx, c, call, byLeader, func(b *sarama.Broker, tps []kafka.TopicPartition) error {
		req := sarama.NewOffsetRequest(c.config.Version)
		req.IsolationLevel = isolation
		for _, tp := range tps {
			req.AddBlock(tp.Topic, tp.Partition, which, 1)
		}
		resp, err := b.GetAvailableOffsets(req)
		c.observe(ctx, b, "ListOffsets", err)
		a.mu.Lock()
		defer a.mu.Unlock()
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
				err = fmt.Errorf("%w: %w", ctxErr, err) // the call's end cut it
			}
			err = fmt.Errorf("list offsets from broker %d: %w", b.ID(), err)
			a.transport = true
			for _, tp := range tps {
				a.fail(tp, topicError(tp.Topic, kafka.OperationDescribe, err), ctx.Err() == nil)
			}
			return nil
		}
		for _, tp := range tps {
			block := resp.GetBlock(tp.Topic, tp.Partition)
			if block == nil {
				a.fail(tp, topicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("list offsets of %s/%d from broker %d: no answer", tp.Topic, tp.Partition, b.ID())), false)
				continue
			}
			if !errors.Is(block.Err, sarama.ErrNoError) {
				a.fail(tp, topicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("list offsets of %s/%d from broker %d: %w", tp.Topic, tp.Partition, b.ID(), authorization(block.Err))),
					leaderMoved(block.Err))
				if leaderMoved(block.Err) {
					a.refusedBy[tp] = b
				}
				if errors.Is(block.Err, sarama.ErrUnknownTopicOrPartition) {
					a.unknown = append(a.unknown, tp)
				}
				continue
			}
			offset := block.Offset
			if req.Version == 0 && len(block.Offsets) > 0 {
				offset = block.Offsets[0]
			}
			if offset < 0 {
				// No log has a negative end, start or stable offset: a
				// broker that answers one is broken or hostile, and the
				// lag measured from it would mean nothing.
				a.fail(tp, topicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("list offsets of %s/%d from broker %d: negative offset %d", tp.Topic, tp.Partition, b.ID(), offset)), false)
				continue
			}
			offsets[tp] = offset
		}
		return nil
	})
	if err != nil {
		// perBroker's own: the context ended before a request was sent.
		a.others = append(a.others, err)
	}
	return a
}

// reconnectRefusing opens a new connection to each leader that the
// refreshed metadata names for a partition it said it does not lead: its
// connection may reach a broker that left the cluster at the same address
// (a broker replaced behind a proxy or load balancer), which answers, but
// for a cluster it is no longer part of.
func (c *Cluster) reconnectRefusing(leaders map[*sarama.Broker][]kafka.TopicPartition, last *offsetsAnswer) {
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

// byLeader groups partitions by their leader broker. Partitions whose leader
// cannot be found are reported in the error and left out.
func (c *Cluster) byLeader(ctx context.Context, call *brokerwatch.Call, client sarama.Client, partitions []kafka.TopicPartition) (map[*sarama.Broker][]kafka.TopicPartition, error) {
	out, _, err := c.leadersOrUnknown(ctx, call, client, partitions)
	return out, err
}

// leadersOrUnknown is byLeader that also returns the partitions the cluster
// does not have, found with one metadata refresh for all of them.
func (c *Cluster) leadersOrUnknown(ctx context.Context, call *brokerwatch.Call, client sarama.Client, partitions []kafka.TopicPartition) (map[*sarama.Broker][]kafka.TopicPartition, []kafka.TopicPartition, error) {
	missing := c.unknownPartitions(ctx, call, client, partitions)
	type leaders struct {
		out             map[*sarama.Broker][]kafka.TopicPartition
		unknown         []kafka.TopicPartition
		unknownPerTopic map[string]int
		errs            []error
	}
	// A leader missing from the cache is looked up: the whole walk is one
	// lookup, which the call stops waiting for when its context ends.
	found, err := lookup(ctx, c, call, func() (leaders, error) {
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
				l.errs = append(l.errs, topicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("find leader of %s/%d: %w", tp.Topic, tp.Partition, authorization(err))))
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
		errs = append(errs, topicError(topic, kafka.OperationDescribe,
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
func (c *Cluster) transportRefreshDue() bool {
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
func (c *Cluster) refreshMetadata(ctx context.Context, call *brokerwatch.Call, client sarama.Client, topics []string, transport bool) (waited bool) {
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
	_, _ = lookup(ctx, c, call, func() (struct{}, error) { return struct{}{}, refresh() })
	return true
}

// refreshInBackground refreshes the topics' metadata for the next call, as
// refreshMetadata does, without waiting.
func (c *Cluster) refreshInBackground(call *brokerwatch.Call, client sarama.Client, topics []string, transport bool) {
	if transport && !c.transportRefreshDue() {
		return
	}
	brokerwatch.Background(call, func() {
		if err := client.RefreshMetadata(topics...); err != nil {
			c.logger.Debug("refresh metadata", zap.Strings("topics", topics), zap.Error(err))
		}
	})
}
