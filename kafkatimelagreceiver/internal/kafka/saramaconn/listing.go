package saramaconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
)

// Listing is what a round of ListOffsets asks of each partition and what it
// keeps of each answer.
type Listing struct {
	Isolation sarama.IsolationLevel
	Timestamp func(kafka.TopicPartition) int64
	// Take keeps a partition's answer, which the broker gave without an
	// error; an error it returns fails the partition, which is not asked
	// again. It is called under the round's lock.
	Take func(tp kafka.TopicPartition, block *sarama.OffsetResponseBlock, version int16) error
}

// ListAttempt is one round of ListOffsets requests: the first, or a retry
// of the partitions whose leader moved. Answered are the partitions a retry
// read, sorted: their answers were true between its Sent and Received. The
// first round's are every partition asked that neither failed nor is
// unknown, and are not listed: a call asking many partitions would sort
// them all for nothing.
type ListAttempt struct {
	Sent, Received time.Time
	Answered       []kafka.TopicPartition
}

// ListRetrying sends one ListOffsets per leader carrying all its
// partitions. Partitions whose leader moved (the broker says it is not the
// leader, or does not answer) are looked up again and asked once more of
// their new leader in the same call, up to leaderRetries times, so that a
// leader election costs no read: attempts holds the first round and each
// retry, with times of their own. unknown are the partitions the cluster
// said it does not have.
func (c *Conn) ListRetrying(ctx context.Context, call *brokerwatch.Call, client sarama.Client, partitions []kafka.TopicPartition, l Listing) (attempts []ListAttempt, unknown []kafka.TopicPartition, err error) {
	byLeader, unknown, leaderErr := c.leadersOrUnknown(ctx, call, client, partitions)
	first := ListAttempt{Sent: time.Now()}
	last := c.listFrom(ctx, call, byLeader, l, false)
	first.Received = time.Now()
	attempts = []ListAttempt{first}
	errs := []error{leaderErr}
	for range leaderRetries {
		moved := last.Moved()
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
		errs = append(errs, last.Err())
		retryLeaders, retryUnknown, retryLeaderErr := c.leadersOrUnknown(ctx, call, client, moved)
		c.reconnectRefusing(retryLeaders, last)
		unknown = append(unknown, retryUnknown...)
		errs = append(errs, retryLeaderErr)
		retry := ListAttempt{Sent: time.Now()}
		last = c.listFrom(ctx, call, retryLeaders, l, true)
		retry.Received, retry.Answered = time.Now(), last.answered
		attempts = append(attempts, retry)
	}
	unknown = append(unknown, last.unknown...)
	if len(last.Moved()) > 0 {
		// Still not at the leader: the next call finds the metadata fresh.
		c.refreshInBackground(call, client, topicsOf(last.Moved()), last.transport)
	}
	return attempts, unknown, kafka.Join(append(errs, last.Err())...)
}

// leaderRetries is how many times one call asks the partitions whose
// leader moved again, each time after a metadata refresh. During a rolling
// leader move a refresh can name a leader that moves on before it is
// asked; a second retry still keeps that partition's point, and a partition
// that moved three times within one call is rare enough to wait for the
// next.
const leaderRetries = 2

// Round is what one round of ListOffsets requests left unread.
type Round struct {
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
	// answered are the partitions read, sorted once the round is over,
	// when the round keeps them.
	answered     []kafka.TopicPartition
	keepAnswered bool
}

func (a *Round) fail(tp kafka.TopicPartition, err error, stale bool) {
	a.failed[tp] = err
	if stale {
		a.stale[tp] = true
	}
}

func (a *Round) forget(tp kafka.TopicPartition) {
	delete(a.failed, tp)
	delete(a.stale, tp)
}

// Moved are the partitions worth asking again once the metadata is
// fresh, sorted.
func (a *Round) Moved() []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, 0, len(a.stale))
	for tp := range a.stale {
		out = append(out, tp)
	}
	kafka.SortPartitions(out)
	return out
}

// Err is one error per unread partition, in partition order.
func (a *Round) Err() error {
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

// ListFrom sends one ListOffsets to each leader, asking each of its
// partitions what l says, and hands each answer to l.Take.
func (c *Conn) ListFrom(ctx context.Context, call *brokerwatch.Call, byLeader map[*sarama.Broker][]kafka.TopicPartition, l Listing) *Round {
	return c.listFrom(ctx, call, byLeader, l, true)
}

func (c *Conn) listFrom(ctx context.Context, call *brokerwatch.Call, byLeader map[*sarama.Broker][]kafka.TopicPartition, l Listing, keepAnswered bool) *Round {
	a := &Round{failed: map[kafka.TopicPartition]error{}, stale: map[kafka.TopicPartition]bool{}, refusedBy: map[kafka.TopicPartition]*sarama.Broker{}, keepAnswered: keepAnswered}
	for b, tps := range byLeader {
		// A skipped broker's partitions may have a new leader by now.
		if err := c.watch.Skipping(b.Addr()); err != nil {
			err = fmt.Errorf("list offsets from broker %d (%s): %w", b.ID(), b.Addr(), err)
			a.transport = true
			for _, tp := range tps {
				a.fail(tp, TopicError(tp.Topic, kafka.OperationDescribe, err), true)
			}
			delete(byLeader, b)
		}
	}
	err := PerBroker(ctx, c, call, byLeader, func(b *sarama.Broker, tps []kafka.TopicPartition) error {
		req := sarama.NewOffsetRequest(c.config.Version)
		req.IsolationLevel = l.Isolation
		for _, tp := range tps {
			req.AddBlock(tp.Topic, tp.Partition, l.Timestamp(tp), 1)
		}
		resp, err := b.GetAvailableOffsets(req)
		c.Observe(ctx, b, "ListOffsets", err)
		a.mu.Lock()
		defer a.mu.Unlock()
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
				err = fmt.Errorf("%w: %w", ctxErr, err) // the call's end cut it
			}
			err = fmt.Errorf("list offsets from broker %d: %w", b.ID(), err)
			a.transport = true
			for _, tp := range tps {
				a.fail(tp, TopicError(tp.Topic, kafka.OperationDescribe, err), ctx.Err() == nil)
			}
			return nil
		}
		for _, tp := range tps {
			block := resp.GetBlock(tp.Topic, tp.Partition)
			if block == nil {
				a.fail(tp, TopicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("list offsets of %s/%d from broker %d: no answer", tp.Topic, tp.Partition, b.ID())), false)
				continue
			}
			if !errors.Is(block.Err, sarama.ErrNoError) {
				a.fail(tp, TopicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("list offsets of %s/%d from broker %d: %w", tp.Topic, tp.Partition, b.ID(), Authorization(block.Err))),
					leaderMoved(block.Err))
				if leaderMoved(block.Err) {
					a.refusedBy[tp] = b
				}
				if errors.Is(block.Err, sarama.ErrUnknownTopicOrPartition) {
					a.unknown = append(a.unknown, tp)
				}
				continue
			}
			if err := l.Take(tp, block, req.Version); err != nil {
				a.fail(tp, TopicError(tp.Topic, kafka.OperationDescribe,
					fmt.Errorf("list offsets of %s/%d from broker %d: %w", tp.Topic, tp.Partition, b.ID(), err)), false)
				continue
			}
			if a.keepAnswered {
				a.answered = append(a.answered, tp)
			}
		}
		return nil
	})
	if err != nil {
		// PerBroker's own: the context ended before a request was sent.
		a.others = append(a.others, err)
	}
	kafka.SortPartitions(a.answered)
	return a
}
