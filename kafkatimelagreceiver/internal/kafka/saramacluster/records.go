package saramacluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// RecordTimestamps fetches the record at each offset with a minimal Fetch:
// one request per leader per round, where a round holds at most one offset
// per partition (a Fetch names each partition once).
func (c *Cluster) RecordTimestamps(ctx context.Context, records []kafka.RecordAt) (map[kafka.RecordAt]kafka.RecordTimestamp, error) {
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
		errs = append(errs, perBroker(ctx, c.conns, byLeader, func(b *sarama.Broker, tps []kafka.TopicPartition) error {
			return c.fetchFrom(ctx, b, tps, offsetOf, func(at kafka.RecordAt, ts kafka.RecordTimestamp) {
				mu.Lock()
				out[at] = ts
				mu.Unlock()
			})
		}))
	}
	return out, kafka.Join(errs...)
}

// fetchFrom reads from one leader the record at offsetOf[tp] of each of its
// partitions, passing each one found to found.
func (c *Cluster) fetchFrom(
	ctx context.Context,
	b *sarama.Broker,
	tps []kafka.TopicPartition,
	offsetOf map[kafka.TopicPartition]int64,
	found func(kafka.RecordAt, kafka.RecordTimestamp),
) error {
	// A partition whose batch does not fit the limits comes back empty
	// unless it is first in the response (KIP-74), so the empty ones go
	// again, until a request makes no progress.
	pending := tps
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("fetch records from broker %d: %w", b.ID(), err)
		}
		req := c.newFetchRequest()
		for _, tp := range pending {
			req.AddBlock(tp.Topic, tp.Partition, offsetOf[tp], fetchBytesPerPartition, -1)
		}
		resp, err := b.Fetch(req)
		c.observe(ctx, b, "Fetch", err)
		if err != nil {
			return fmt.Errorf("fetch records from broker %d: %w", b.ID(), err)
		}
		var (
			errs  []error
			again []kafka.TopicPartition
		)
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
			if ts, ok := firstRecordAtOrAfter(block, at.Offset); ok {
				found(at, ts)
			} else if block.HighWaterMarkOffset > at.Offset {
				again = append(again, tp)
			}
		}
		if len(errs) > 0 {
			return kafka.Join(errs...)
		}
		if len(again) == len(pending) {
			return fmt.Errorf("fetch records from broker %d: %d partitions returned no record below their high watermark", b.ID(), len(again))
		}
		pending = again
	}
	return nil
}

// fetchBytesPerPartition is Kafka's default max.message.bytes: a batch up to
// that size fits, so one record's timestamp never needs a second read of the
// same partition. The response limit (newFetchRequest) bounds the memory of a
// request; partitions it cut off are asked again.
const fetchBytesPerPartition = 1 << 20

func (c *Cluster) newFetchRequest() *sarama.FetchRequest {
	req := &sarama.FetchRequest{MaxWaitTime: 0, MinBytes: 1, MaxBytes: 8 << 20, Isolation: sarama.ReadUncommitted}
	v := c.config.Version
	switch {
	case v.IsAtLeast(sarama.V2_3_0_0):
		req.Version = 11
	case v.IsAtLeast(sarama.V2_1_0_0):
		req.Version = 10
	case v.IsAtLeast(sarama.V0_11_0_0):
		req.Version = 4
	case v.IsAtLeast(sarama.V0_10_0_0):
		req.Version = 2
	}
	return req
}

// firstRecordAtOrAfter finds the first data record with offset >= want and
// returns its timestamp (the batch's append time under LogAppendTime).
func firstRecordAtOrAfter(block *sarama.FetchResponseBlock, want int64) (kafka.RecordTimestamp, bool) {
	for _, records := range block.RecordsSet {
		if records == nil {
			continue
		}
		if batch := records.RecordBatch; batch != nil {
			if batch.Control {
				continue
			}
			for _, r := range batch.Records {
				offset := batch.FirstOffset + r.OffsetDelta
				if offset < want {
					continue
				}
				ts := batch.FirstTimestamp.Add(r.TimestampDelta)
				if batch.LogAppendTime {
					ts = batch.MaxTimestamp
				}
				return kafka.RecordTimestamp{Offset: offset, Timestamp: ts.UnixNano()}, true
			}
		}
		if set := records.MsgSet; set != nil {
			for _, mb := range set.Messages {
				if mb.Offset < want || mb.Msg == nil {
					continue
				}
				if len(mb.Messages()) > 0 {
					for _, inner := range mb.Messages() {
						if inner.Offset >= want && inner.Msg != nil {
							return kafka.RecordTimestamp{Offset: inner.Offset, Timestamp: inner.Msg.Timestamp.UnixNano()}, true
						}
					}
					continue
				}
				return kafka.RecordTimestamp{Offset: mb.Offset, Timestamp: mb.Msg.Timestamp.UnixNano()}, true
			}
		}
	}
	return kafka.RecordTimestamp{}, false
}
