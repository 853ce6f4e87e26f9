package saramatimes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
)

// RecordTimestamps fetches the record at each offset with minimal Fetches:
// one request per leader per round, where a request names each partition
// once, from the lowest offset still wanted there. Every wanted offset of a
// partition that the batches it returns hold is answered from that one
// read, so the groups of a partition sitting close together cost one read
// between them; an offset beyond what came back is asked in the next round.
// A partition's near offsets are answered where those batches hold them,
// and never asked for.
func (c *Times) RecordTimestamps(ctx context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error) {
	call, stop := c.conn.Begin(ctx)
	defer stop()
	out := make(kafka.RecordReads, len(wanted))
	if len(wanted) == 0 {
		return out, nil
	}
	client, err := c.conn.Connected(ctx)
	if err != nil {
		return out, err
	}
	wants := make(map[kafka.TopicPartition][]int64, len(wanted))
	near := map[kafka.TopicPartition][]int64{}
	tps := make([]kafka.TopicPartition, 0, len(wanted))
	for _, w := range wanted {
		if _, ok := wants[w.TopicPartition]; !ok {
			tps = append(tps, w.TopicPartition)
		}
		wants[w.TopicPartition] = append(wants[w.TopicPartition], w.Offsets...)
		if len(w.Near) > 0 {
			near[w.TopicPartition] = append(near[w.TopicPartition], w.Near...)
		}
	}
	for _, offsets := range []map[kafka.TopicPartition][]int64{wants, near} {
		for tp, o := range offsets {
			if !slices.IsSorted(o) {
				slices.Sort(o)
			}
			offsets[tp] = slices.Compact(o)
		}
	}
	var mu sync.Mutex
	byLeader, err := c.conn.ByLeader(ctx, call, client, tps)
	errs := []error{err, saramaconn.PerBroker(ctx, c.conn, call, byLeader, func(b *sarama.Broker, tps []kafka.TopicPartition) error {
		found := make(kafka.RecordReads, len(tps))
		err := c.fetchFrom(ctx, client, b, tps, wantedOffsets{offsets: wants, near: near}, found)
		mu.Lock()
		maps.Copy(out, found)
		mu.Unlock()
		return err
	})}
	return out, kafka.Join(errs...)
}

// fetchFrom reads from one leader the records at wants[tp] of each of its
// partitions, passing each answer to found. Partitions the leader sends to
// a replica in the client's rack (rack_id, KIP-392) are read there.
func (c *Times) fetchFrom(
	ctx context.Context,
	client sarama.Client,
	b *sarama.Broker,
	tps []kafka.TopicPartition,
	wants wantedOffsets,
	found kafka.RecordReads,
) error {
	r := newLeaderRead(c, b, tps, wants, found)
	errs := []error{r.rounds(ctx, tps)}
	for replica, tps := range r.redirected {
		errs = append(errs, c.fetchFromReplica(ctx, client, replica, tps, wantedOffsets{offsets: r.wants, near: r.near}, found))
	}
	return kafka.Join(errs...)
}

// fetchFromReplica reads from the replica a leader pointed at. A replica
// answers with records, never with another replica.
func (c *Times) fetchFromReplica(
	ctx context.Context,
	client sarama.Client,
	replica int32,
	tps []kafka.TopicPartition,
	wants wantedOffsets,
	found kafka.RecordReads,
) error {
	b, err := client.Broker(replica)
	if err != nil {
		return fmt.Errorf("fetch records from preferred replica %d: %w", replica, err)
	}
	end, err := c.conn.OnReplica(ctx, b)
	if err != nil {
		return err
	}
	defer end()
	r := newLeaderRead(c, b, tps, wants, found)
	err = r.rounds(ctx, tps)
	if len(r.redirected) > 0 && err == nil {
		err = fmt.Errorf("fetch records from preferred replica %d: it pointed at yet another replica", replica)
	}
	return err
}

// wantedOffsets are the offsets a record read answers, by partition:
// offsets it reads until each is answered, and near ones it answers only
// from the batches read for those (kafka.PartitionOffsets.Near).
type wantedOffsets struct {
	offsets, near map[kafka.TopicPartition][]int64
}

// leaderRead is one broker's part of a record read.
type leaderRead struct {
	c *Times
	b *sarama.Broker
	// wants holds each partition's offsets not answered yet, ascending; its
	// own copy, since every broker's read runs in a goroutine of its own.
	wants map[kafka.TopicPartition][]int64
	// near holds each partition's near offsets not answered yet, its own
	// copy too.
	near map[kafka.TopicPartition][]int64
	from map[kafka.TopicPartition]int64 // where the next Fetch reads from
	// large holds the partitions whose batch did not fit
	// firstFetchBytesPerPartition: they are asked with
	// fetchBytesPerPartition.
	large map[kafka.TopicPartition]bool
	// found holds what this broker's read answered, its partitions only.
	found kafka.RecordReads
	// redirected holds the partitions the broker sent to another replica,
	// by replica.
	redirected map[int32][]kafka.TopicPartition
}

func newLeaderRead(c *Times, b *sarama.Broker, tps []kafka.TopicPartition, wants wantedOffsets, found kafka.RecordReads) *leaderRead {
	r := &leaderRead{c: c, b: b, wants: make(map[kafka.TopicPartition][]int64, len(tps)), near: map[kafka.TopicPartition][]int64{}, from: make(map[kafka.TopicPartition]int64, len(tps)), found: found}
	for _, tp := range tps {
		if near := wants.near[tp]; len(near) > 0 {
			r.near[tp] = slices.Clone(near)
		}
		r.wants[tp] = slices.Clone(wants.offsets[tp])
		if len(r.wants[tp]) > 0 {
			r.from[tp] = r.wants[tp][0]
		}
	}
	return r
}

// next drops the partition's lowest wanted offset, answered or given up
// on, and tells whether another is left, which the next read starts from.
func (r *leaderRead) next(tp kafka.TopicPartition) bool {
	rest := r.wants[tp][1:]
	r.wants[tp] = rest
	if len(rest) == 0 {
		return false
	}
	r.from[tp] = rest[0]
	return true
}

// rounds asks for the pending partitions, each from from[tp], until
// each wanted offset has an answer or an error. A partition whose batch
// does not fit the limits comes back empty unless it is first in the
// response (KIP-74), so the empty ones go again, until a request makes no
// progress; one whose response held only markers and aborted records short
// of the end goes on from where they stopped.
func (r *leaderRead) rounds(ctx context.Context, pending []kafka.TopicPartition) error {
	c, b := r.c, r.b
	pending = slices.DeleteFunc(slices.Clone(pending), func(tp kafka.TopicPartition) bool { return len(r.wants[tp]) == 0 })
	var errs []error
	// retried: a request whose connection was cut was sent again, once.
	retried := false
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return kafka.Join(append(errs, fmt.Errorf("fetch records from broker %d: %w", b.ID(), err))...)
		}
		req := c.newFetchRequest()
		for _, tp := range pending {
			req.AddBlock(tp.Topic, tp.Partition, r.from[tp], r.askBytes(tp), -1)
		}
		// A response that could not be decoded closed the connection
		// (saramaconn.Conn.Observe); the request that isolates its
		// partition opens it again. Already open: ErrAlreadyConnected.
		_ = b.Open(c.conn.Config())
		resp, err := b.Fetch(req)
		c.conn.Observe(ctx, b, "Fetch", err)
		if saramaconn.ConnectionCut(err) && !retried && ctx.Err() == nil {
			// sarama closed the connection; the same request on a new one
			// (Open, above) reads the log as it is now: a broker cuts a
			// response whose segment the log cleaner swapped.
			retried = true
			continue
		}
		if undecodable(err) {
			return kafka.Join(append(errs, r.isolate(ctx, pending, err))...)
		}
		if err != nil {
			return kafka.Join(append(errs, fmt.Errorf("fetch records from broker %d: %w", b.ID(), err))...)
		}
		readAt := time.Now()
		blocks := make([]*sarama.FetchResponseBlock, len(pending))
		for i, tp := range pending {
			blocks[i] = resp.GetBlock(tp.Topic, tp.Partition)
		}
		filled := r.filled(pending, blocks)
		var again, omitted []kafka.TopicPartition
		stuck := 0
		for i, tp := range pending {
			block := blocks[i]
			if block == nil {
				// A broker may leave out of a response that reached its
				// size limit the partitions it did not come to (kfake
				// does): read in the next round.
				omitted = append(omitted, tp)
				again = append(again, tp)
				continue
			}
			// What it was asked counts once: filled holds it when it
			// came back with bytes.
			held := filled
			if len(block.RecordsSet) == 0 {
				held += int64(r.askBytes(tp))
			}
			more, progressed, err := r.answer(tp, block, req.Version, readAt, held <= int64(req.MaxBytes))
			errs = append(errs, err)
			if more {
				again = append(again, tp)
				if !progressed {
					stuck++
				}
			}
		}
		if stuck+len(omitted) == len(pending) {
			// Nothing moved on: the next round would ask the same.
			for _, tp := range omitted {
				errs = append(errs, saramaconn.TopicError(tp.Topic, kafka.OperationRead,
					fmt.Errorf("fetch records %s/%d@%d from broker %d: no answer", tp.Topic, tp.Partition, r.from[tp], b.ID())))
			}
			if stuck > 0 {
				errs = append(errs, fmt.Errorf("fetch records from broker %d: %d partitions returned no record below their high watermark", b.ID(), stuck))
			}
			return kafka.Join(errs...)
		}
		pending = again
	}
	return kafka.Join(errs...)
}

// answer answers, from one partition's part of a Fetch response, every
// wanted offset it holds, lowest first. more: offsets are left for the
// next round (from[tp] says where it reads); progressed: this block
// answered one or moved from[tp] on. room: the response had room for all
// the partition was asked, so that a block with no whole batch holds one
// larger than that.
func (r *leaderRead) answer(tp kafka.TopicPartition, block *sarama.FetchResponseBlock, version int16, readAt time.Time, room bool) (more, progressed bool, err error) {
	b := r.b
	if errors.Is(block.Err, sarama.ErrOffsetOutOfRange) {
		// Deleted by retention, or not written yet; a higher offset of the
		// partition may still be there.
		return r.next(tp), true, nil
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		return false, false, saramaconn.TopicError(tp.Topic, kafka.OperationRead,
			fmt.Errorf("fetch record %s/%d@%d from broker %d: %w", tp.Topic, tp.Partition, r.from[tp], b.ID(), saramaconn.Authorization(block.Err)))
	}
	if replica := block.PreferredReadReplica; replica >= 0 && replica != b.ID() {
		if r.redirected == nil {
			r.redirected = map[int32][]kafka.TopicPartition{}
		}
		r.redirected[replica] = append(r.redirected[replica], tp)
		return false, false, nil
	}
	end := readable(block, version)
	// Every wanted offset is looked for in one pass over the block: the
	// first from where this read started, the others from themselves, or
	// from the one before when that is further on (no data record lies
	// between them).
	looks := slices.Clone(r.wants[tp])
	looks[0] = r.from[tp]
	for i := 1; i < len(looks); i++ {
		looks[i] = max(looks[i], looks[i-1])
	}
	scans := firstRecordsAtOrAfter(block, looks, readAt)
	answered := r.answerNear(tp, block, readAt, r.found[tp])
	defer func() {
		if len(answered) > 0 {
			r.found[tp] = answered
		}
	}()
	for i := 0; ; i++ {
		wanted := r.wants[tp][0]
		from := r.from[tp]
		scanned := scans[i]
		switch {
		case scanned.Found:
			answered = append(answered, kafka.RecordRead{Wanted: wanted, RecordTimestamp: scanned.Record})
		case scanned.Next >= end && end > wanted:
			answered = append(answered, kafka.RecordRead{Wanted: wanted, RecordTimestamp: kafka.RecordTimestamp{Offset: end, Found: kafka.RecordNone}})
		case scanned.Next > from:
			r.from[tp] = scanned.Next
			return true, true, nil
		case end > from && !room:
			// Nothing complete came back, and the other partitions may
			// have filled the response (Apache Kafka sends the ones it
			// did not come to empty, or cuts a batch at what was left):
			// asked the same in the next round.
			return true, progressed, nil
		case end > from && !r.large[tp]:
			// Nothing complete came back though the response had room:
			// the batch at from is larger than the first read asks for.
			if r.large == nil {
				r.large = map[kafka.TopicPartition]bool{}
			}
			r.large[tp] = true
			return true, true, nil
		case end > from:
			return true, progressed, nil
		}
		// Answered, or there is nothing to read yet at the offset: it is
		// the end, or inside a transaction still open.
		progressed = true
		if !r.next(tp) {
			return false, true, nil
		}
	}
}

// answerNear appends to answered the near offsets of tp that block holds,
// those at or after where the read started (the batches before it were not
// returned), and keeps the others for a later round's block.
func (r *leaderRead) answerNear(tp kafka.TopicPartition, block *sarama.FetchResponseBlock, readAt time.Time, answered []kafka.RecordRead) []kafka.RecordRead {
	near := r.near[tp]
	if len(near) == 0 {
		return answered
	}
	from := r.from[tp]
	near = slices.DeleteFunc(near, func(o int64) bool { return o < from })
	scans := firstRecordsAtOrAfter(block, near, readAt)
	left := near[:0]
	for i, o := range near {
		if scans[i].Found {
			answered = append(answered, kafka.RecordRead{Wanted: o, RecordTimestamp: scans[i].Record})
		} else {
			left = append(left, o)
		}
	}
	r.near[tp] = left
	return answered
}

// isolate splits a request whose response could not be decoded (a batch too
// large once decompressed, or corrupt) until the partition that holds the
// batch is alone, so that one hostile batch costs its own partition's
// answer, RecordUntimed, and not the request's. The split costs about
// log2(partitions) more requests, only when a response fails to decode.
func (r *leaderRead) isolate(ctx context.Context, pending []kafka.TopicPartition, cause error) error {
	if len(pending) == 1 {
		tp := pending[0]
		if reason := r.c.conn.Refused(tp); reason != nil {
			cause = fmt.Errorf("%w, refused before decoding: %w", reason, cause)
		}
		r.found[tp] = append(r.found[tp], kafka.RecordRead{Wanted: r.wants[tp][0], RecordTimestamp: kafka.RecordTimestamp{Offset: r.from[tp], Found: kafka.RecordUntimed}})
		err := saramaconn.TopicError(tp.Topic, kafka.OperationRead,
			fmt.Errorf("fetch record %s/%d@%d from broker %d: no timestamp from this partition: %w", tp.Topic, tp.Partition, r.from[tp], r.b.ID(), cause))
		if r.next(tp) {
			// The partition's higher offsets may lie past the batch.
			return kafka.Join(err, r.rounds(ctx, pending))
		}
		return err
	}
	half := len(pending) / 2
	return kafka.Join(r.rounds(ctx, pending[:half:half]), r.rounds(ctx, pending[half:]))
}
