package saramacluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// RecordTimestamps fetches the record at each offset with a minimal Fetch:
// one request per leader per round, where a round holds at most one offset
// per partition (a Fetch names each partition once).
func (c *Cluster) RecordTimestamps(ctx context.Context, records []kafka.RecordAt) (map[kafka.RecordAt]kafka.RecordTimestamp, error) {
	defer c.watch(ctx)()
	out := make(map[kafka.RecordAt]kafka.RecordTimestamp, len(records))
	if len(records) == 0 {
		return out, nil
	}
	client, err := c.connected(ctx)
	if err != nil {
		return out, err
	}
	var rounds [][]kafka.RecordAt
	seen := map[kafka.TopicPartition]int{} // partition -> rounds it already appears in
	for _, r := range records {
		i := seen[r.TopicPartition]
		seen[r.TopicPartition] = i + 1
		if i == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[i] = append(rounds[i], r)
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	for i, round := range rounds {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("read record timestamps: %d rounds left: %w", len(rounds)-i, err))
			break
		}
		tps := make([]kafka.TopicPartition, len(round))
		offsetOf := make(map[kafka.TopicPartition]int64, len(round))
		for i, r := range round {
			tps[i] = r.TopicPartition
			offsetOf[r.TopicPartition] = r.Offset
		}
		byLeader, err := c.byLeader(ctx, client, tps)
		errs = append(errs, err)
		errs = append(errs, perBroker(ctx, c, byLeader, func(b *sarama.Broker, tps []kafka.TopicPartition) error {
			return c.fetchFrom(ctx, client, b, tps, offsetOf, func(at kafka.RecordAt, ts kafka.RecordTimestamp) {
				mu.Lock()
				out[at] = ts
				mu.Unlock()
			})
		}))
	}
	return out, kafka.Join(errs...)
}

// fetchFrom reads from one leader the record at offsetOf[tp] of each of its
// partitions, passing each answer to found. Partitions the leader sends to
// a replica in the client's rack (rack_id, KIP-392) are read there.
func (c *Cluster) fetchFrom(
	ctx context.Context,
	client sarama.Client,
	b *sarama.Broker,
	tps []kafka.TopicPartition,
	offsetOf map[kafka.TopicPartition]int64,
	found func(kafka.RecordAt, kafka.RecordTimestamp),
) error {
	r := newLeaderRead(c, b, tps, offsetOf, found)
	errs := []error{r.rounds(ctx, tps)}
	for replica, tps := range r.redirected {
		errs = append(errs, c.fetchFromReplica(ctx, client, replica, tps, offsetOf, found))
	}
	return kafka.Join(errs...)
}

// fetchFromReplica reads from the replica a leader pointed at. A replica
// answers with records, never with another replica.
func (c *Cluster) fetchFromReplica(
	ctx context.Context,
	client sarama.Client,
	replica int32,
	tps []kafka.TopicPartition,
	offsetOf map[kafka.TopicPartition]int64,
	found func(kafka.RecordAt, kafka.RecordTimestamp),
) error {
	b, err := client.Broker(replica)
	if err != nil {
		return fmt.Errorf("fetch records from preferred replica %d: %w", replica, err)
	}
	if err := c.idle.begin(ctx, b); err != nil {
		return err
	}
	defer c.idle.end(b)
	r := newLeaderRead(c, b, tps, offsetOf, found)
	err = r.rounds(ctx, tps)
	if len(r.redirected) > 0 && err == nil {
		err = fmt.Errorf("fetch records from preferred replica %d: it pointed at yet another replica", replica)
	}
	return err
}

// leaderRead is one broker's part of a record read.
type leaderRead struct {
	c        *Cluster
	b        *sarama.Broker
	offsetOf map[kafka.TopicPartition]int64 // the offset asked for
	from     map[kafka.TopicPartition]int64 // where the next Fetch reads from
	found    func(kafka.RecordAt, kafka.RecordTimestamp)
	// redirected holds the partitions the broker sent to another replica,
	// by replica.
	redirected map[int32][]kafka.TopicPartition
}

func newLeaderRead(c *Cluster, b *sarama.Broker, tps []kafka.TopicPartition, offsetOf map[kafka.TopicPartition]int64, found func(kafka.RecordAt, kafka.RecordTimestamp)) *leaderRead {
	r := &leaderRead{c: c, b: b, offsetOf: offsetOf, from: make(map[kafka.TopicPartition]int64, len(tps)), found: found}
	for _, tp := range tps {
		r.from[tp] = offsetOf[tp]
	}
	return r
}

// rounds asks for the pending partitions, each from from[tp], until
// each has an answer or an error. A partition whose batch does not fit the
// limits comes back empty unless it is first in the response (KIP-74), so
// the empty ones go again, until a request makes no progress; one whose
// response held only markers and aborted records short of the end goes on
// from where they stopped.
func (r *leaderRead) rounds(ctx context.Context, pending []kafka.TopicPartition) error {
	c, b, offsetOf, from, found := r.c, r.b, r.offsetOf, r.from, r.found
	var errs []error
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return kafka.Join(append(errs, fmt.Errorf("fetch records from broker %d: %w", b.ID(), err))...)
		}
		req := c.newFetchRequest()
		for _, tp := range pending {
			req.AddBlock(tp.Topic, tp.Partition, from[tp], fetchBytesPerPartition, -1)
		}
		// A response that could not be decoded closed the connection
		// (observe); the request that isolates its partition opens it
		// again. Already open: ErrAlreadyConnected.
		_ = b.Open(c.config)
		resp, err := b.Fetch(req)
		c.observe(ctx, b, "Fetch", err)
		if undecodable(err) {
			return kafka.Join(append(errs, r.isolate(ctx, pending, err))...)
		}
		if err != nil {
			return kafka.Join(append(errs, fmt.Errorf("fetch records from broker %d: %w", b.ID(), err))...)
		}
		readAt := time.Now()
		var again []kafka.TopicPartition
		stuck := 0
		for _, tp := range pending {
			at := kafka.RecordAt{TopicPartition: tp, Offset: offsetOf[tp]}
			block := resp.GetBlock(tp.Topic, tp.Partition)
			if block == nil {
				errs = append(errs, topicError(tp.Topic, kafka.OperationRead,
					fmt.Errorf("fetch record %s/%d@%d from broker %d: no answer", tp.Topic, tp.Partition, at.Offset, b.ID())))
				continue
			}
			if errors.Is(block.Err, sarama.ErrOffsetOutOfRange) {
				continue // deleted by retention, or not written yet
			}
			if !errors.Is(block.Err, sarama.ErrNoError) {
				errs = append(errs, topicError(tp.Topic, kafka.OperationRead,
					fmt.Errorf("fetch record %s/%d@%d from broker %d: %w", tp.Topic, tp.Partition, at.Offset, b.ID(), authorization(block.Err))))
				continue
			}
			if replica := block.PreferredReadReplica; replica >= 0 && replica != b.ID() {
				if r.redirected == nil {
					r.redirected = map[int32][]kafka.TopicPartition{}
				}
				r.redirected[replica] = append(r.redirected[replica], tp)
				continue
			}
			scanned := firstRecordAtOrAfter(block, from[tp], readAt)
			end := readable(block, req.Version)
			switch {
			case scanned.found:
				found(at, scanned.record)
			case scanned.next >= end && end > at.Offset:
				found(at, kafka.RecordTimestamp{Offset: end, Found: kafka.RecordNone})
			case scanned.next > from[tp]:
				from[tp] = scanned.next
				again = append(again, tp)
			case end > from[tp]:
				again = append(again, tp)
				stuck++
			}
			// Otherwise there is nothing to read yet at the offset: it is
			// the end, or inside a transaction still open.
		}
		if stuck > 0 && stuck == len(pending) {
			return kafka.Join(append(errs, fmt.Errorf("fetch records from broker %d: %d partitions returned no record below their high watermark", b.ID(), stuck))...)
		}
		pending = again
	}
	return kafka.Join(errs...)
}

// isolate splits a request whose response could not be decoded (a batch too
// large once decompressed, or corrupt) until the partition that holds the
// batch is alone, so that one hostile batch costs its own partition's
// answer, RecordUntimed, and not the request's. The split costs about
// log2(partitions) more requests, only when a response fails to decode.
func (r *leaderRead) isolate(ctx context.Context, pending []kafka.TopicPartition, cause error) error {
	if len(pending) == 1 {
		tp := pending[0]
		if reason := r.c.conns.refusal(tp); reason != nil {
			cause = fmt.Errorf("%w, refused before decoding: %w", reason, cause)
		}
		r.found(kafka.RecordAt{TopicPartition: tp, Offset: r.offsetOf[tp]}, kafka.RecordTimestamp{Offset: r.from[tp], Found: kafka.RecordUntimed})
		return topicError(tp.Topic, kafka.OperationRead,
			fmt.Errorf("fetch record %s/%d@%d from broker %d: no timestamp from this partition: %w", tp.Topic, tp.Partition, r.from[tp], r.b.ID(), cause))
	}
	half := len(pending) / 2
	return kafka.Join(r.rounds(ctx, pending[:half:half]), r.rounds(ctx, pending[half:]))
}

// fetchBytesPerPartition is Kafka's default max.message.bytes: a batch up to
// that size fits, so one record's timestamp never needs a second read of the
// same partition. The response limit (newFetchRequest) bounds the memory of a
// request; partitions it cut off are asked again.
const fetchBytesPerPartition = 1 << 20

// newFetchRequest reads as a read_committed consumer does (from v4, Kafka
// 0.11, when transactions came): nothing past the last stable offset comes
// back, and the response lists the aborted transactions, whose records
// firstRecordAtOrAfter skips. Applications on transactional topics read
// that way; a read_uncommitted group also consumes aborted records, which
// are then not counted as its time lag (README, Limitations).
func (c *Cluster) newFetchRequest() *sarama.FetchRequest {
	req := &sarama.FetchRequest{MaxWaitTime: 0, MinBytes: 1, MaxBytes: 8 << 20, Isolation: sarama.ReadCommitted}
	v := c.config.Version
	switch {
	case v.IsAtLeast(sarama.V2_3_0_0):
		req.Version = 11
		req.RackID = c.config.RackID
	case v.IsAtLeast(sarama.V2_1_0_0):
		req.Version = 10
	case v.IsAtLeast(sarama.V0_11_0_0):
		req.Version = 4
	case v.IsAtLeast(sarama.V0_10_0_0):
		req.Version = 2
	}
	return req
}
