// Package saramatimes reads, with sarama, when records were appended: the
// offsets the brokers' time indexes give for times (ListOffsets by
// timestamp) and the timestamps of the records at offsets (Fetch, each
// response checked by batchguard and its batches scanned for the first
// record at or after each offset). Its calls go through a saramaconn.Conn,
// which gives each its deadline.
package saramatimes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
)

// Times reads the time index and the records on a connection.
type Times struct {
	conn *saramaconn.Conn
}

// New reads the time index and the records on conn, which it does not
// close.
func New(conn *saramaconn.Conn) *Times {
	return &Times{conn: conn}
}

// errNoTimeSearch is a ListOffsets that cannot search by timestamp: v0
// lists offsets by the modification time of log segments, not by record.
var errNoTimeSearch = fmt.Errorf("ListOffsets v0 cannot search by record timestamp (Kafka 0.10.1 and later can): %w", sarama.ErrUnsupportedVersion)

// TimestampOffsets looks each time up in its partition's time index with
// ListOffsets by timestamp (v1 and later), in rounds of one request per
// leader, each asking every partition for its lowest time not answered
// yet (a request names a partition once). What an answer implies answers
// the partition's higher times without asking: the first record stamped at
// or after T, stamped S, is also the first one stamped at or after any time
// up to S; and when none is stamped at or after T, none is at or after a
// later time. So a partition whose times all fall before its next record
// costs one request between them.
//
// It reads as read_uncommitted: the answer may be any record below the
// high watermark, which is where the end offsets the tables interpolate
// reach. Under read_committed the broker answers "none" for a record past
// the last stable offset, so that a transaction left open for minutes hides
// every point after its start; and a record of an open or aborted
// transaction, or a marker, was appended when its timestamp says as surely
// as any other (TimePoint says whose clock that is).
func (c *Times) TimestampOffsets(ctx context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error) {
	call, stop := c.conn.Begin(ctx)
	defer stop()
	pending, errs := timesToAsk(asks)
	out := make(kafka.TimePoints, len(pending))
	if len(pending) == 0 {
		return out, kafka.Join(errs...)
	}
	if sarama.NewOffsetRequest(c.conn.Config().Version).Version < 1 {
		return out, kafka.Join(append(errs, fmt.Errorf("list offsets by timestamp with protocol_version %s: %w", c.conn.Config().Version, errNoTimeSearch))...)
	}
	client, err := c.conn.Connected(ctx)
	if err != nil {
		return out, kafka.Join(append(errs, err)...)
	}
	// Each request asks the partitions left, in partition order, their
	// lowest time not answered: index finds a partition's entry from its
	// answer, and the partitions left shrink in place.
	index := make(map[kafka.TopicPartition]int, len(pending))
	for i, p := range pending {
		index[p.tp] = i
	}
	left := make([]int, len(pending))
	for i := range left {
		left[i] = i
	}
	tps := make([]kafka.TopicPartition, 0, len(pending))
	for len(left) > 0 {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("list offsets by timestamp: %d partitions left unanswered: %w", len(left), err))
			break
		}
		tps = tps[:0]
		for _, i := range left {
			tps = append(tps, pending[i].tp)
			pending[i].answered = false
		}
		_, _, err := c.conn.ListRetrying(ctx, call, client, tps, saramaconn.Listing{
			Isolation: sarama.ReadUncommitted,
			Timestamp: func(tp kafka.TopicPartition) int64 { return pending[index[tp]].times[0] },
			Take: func(tp kafka.TopicPartition, block *sarama.OffsetResponseBlock, version int16) error {
				p := &pending[index[tp]]
				point, err := timePoint(p.times[0], block, version)
				if err == nil {
					p.point, p.answered = point, true
				}
				return err
			},
		})
		errs = append(errs, err)
		next := left[:0]
		for _, i := range left {
			p := &pending[i]
			if !p.answered {
				continue // failed: the error names it
			}
			for len(p.times) > 0 && (!p.point.Found || p.times[0] <= p.point.TimestampMillis) {
				implied := p.point
				implied.AtMillis = p.times[0]
				p.found = append(p.found, implied)
				p.times = p.times[1:]
			}
			if len(p.times) > 0 {
				next = append(next, i)
			}
		}
		left = next
	}
	for _, p := range pending {
		if len(p.found) > 0 {
			out[p.tp] = p.found
		}
	}
	return out, kafka.Join(errs...)
}

// partitionTimes is one partition's times to look up: those not answered
// yet (ascending), the answer of the request in flight, and the points
// found.
type partitionTimes struct {
	tp       kafka.TopicPartition
	times    []int64
	point    kafka.TimePoint
	answered bool
	found    []kafka.TimePoint
}

// timesToAsk gathers each partition's times, ascending and distinct, in
// partition order; a negative time, which Kafka reads as a special request
// (-1 the end, -2 the start...), is an error naming it and is not asked.
// Every partition's times and room for its points are stretches of two
// arrays: a search asks thousands of partitions a few times each.
func timesToAsk(asks []kafka.PartitionTimes) ([]partitionTimes, []error) {
	total := 0
	ordered := true
	for i, ask := range asks {
		total += len(ask.Millis)
		ordered = ordered && (i == 0 || asks[i-1].TopicPartition.Compare(ask.TopicPartition) < 0)
	}
	if !ordered {
		// A search asks each partition once, in partition order; any
		// other asks are gathered first.
		asks = mergedAsks(asks)
	}
	times := make([]int64, 0, total)
	found := make([]kafka.TimePoint, total)
	pending := make([]partitionTimes, 0, len(asks))
	var errs []error
	for _, ask := range asks {
		first := len(times)
		for _, ms := range ask.Millis {
			if ms < 0 {
				errs = append(errs, saramaconn.TopicError(ask.Topic, kafka.OperationDescribe,
					fmt.Errorf("list offsets of %s/%d by timestamp: time %d ms is before 1970, and Kafka reads negative times as special requests", ask.Topic, ask.Partition, ms)))
				continue
			}
			times = append(times, ms)
		}
		if len(times) == first {
			continue
		}
		own := times[first:len(times):len(times)]
		slices.Sort(own)
		own = slices.Compact(own)
		pending = append(pending, partitionTimes{tp: ask.TopicPartition, times: own, found: found[first:first:len(times)]})
	}
	return pending, errs
}

// mergedAsks are asks in partition order, each partition once with every
// time asked of it.
func mergedAsks(asks []kafka.PartitionTimes) []kafka.PartitionTimes {
	at := make(map[kafka.TopicPartition]int, len(asks))
	var merged []kafka.PartitionTimes
	for _, ask := range asks {
		i, ok := at[ask.TopicPartition]
		if !ok {
			i = len(merged)
			at[ask.TopicPartition] = i
			merged = append(merged, kafka.PartitionTimes{TopicPartition: ask.TopicPartition})
		}
		merged[i].Millis = append(merged[i].Millis, ask.Millis...)
	}
	slices.SortFunc(merged, func(a, b kafka.PartitionTimes) int { return a.TopicPartition.Compare(b.TopicPartition) })
	return merged
}

// timePoint is the point a partition's answer gives for a time. The
// broker's -1 is "no record stamped at or after it"; any other answer must
// be a record at or after the log start stamped at or after the time, or
// the broker is not answering what was asked.
func timePoint(at int64, block *sarama.OffsetResponseBlock, version int16) (kafka.TimePoint, error) {
	switch {
	case version < 1:
		return kafka.TimePoint{}, errNoTimeSearch
	case block.Offset == -1:
		return kafka.TimePoint{AtMillis: at, Offset: -1, TimestampMillis: -1}, nil
	case block.Offset < 0:
		return kafka.TimePoint{}, fmt.Errorf("negative offset %d for time %d ms", block.Offset, at)
	case block.Timestamp < at:
		return kafka.TimePoint{}, fmt.Errorf("offset %d for time %d ms is stamped %d ms, before it: %w", block.Offset, at, block.Timestamp, errNotAnAnswer)
	}
	return kafka.TimePoint{AtMillis: at, Found: true, Offset: block.Offset, TimestampMillis: block.Timestamp}, nil
}

// errNotAnAnswer is a broker's answer that is not the one asked for.
var errNotAnAnswer = errors.New("not an answer to ListOffsets by timestamp")
