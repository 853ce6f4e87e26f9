package saramatimes

import (
	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// firstFetchBytesPerPartition is what a record read first asks of a
// partition: a producer's batch is rarely larger (batch.size is 16 KiB by
// default), and a cold start reads half the partitions of a cluster in one
// scrape, so that asking each for fetchBytesPerPartition would move up to
// 1 MiB a partition to read one timestamp. A partition whose batch does not
// fit comes back without it and is asked again with fetchBytesPerPartition.
const firstFetchBytesPerPartition = 64 << 10

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
func (c *Times) newFetchRequest() *sarama.FetchRequest {
	req := &sarama.FetchRequest{MaxWaitTime: 0, MinBytes: 1, MaxBytes: 8 << 20, Isolation: sarama.ReadCommitted}
	v := c.conn.Config().Version
	switch {
	case v.IsAtLeast(sarama.V2_3_0_0):
		req.Version = 11
		req.RackID = c.conn.Config().RackID
	case v.IsAtLeast(sarama.V2_1_0_0):
		req.Version = 10
	case v.IsAtLeast(sarama.V0_11_0_0):
		req.Version = 4
	case v.IsAtLeast(sarama.V0_10_0_0):
		req.Version = 2
	}
	return req
}

// askBytes is what a Fetch asks of the partition.
func (r *leaderRead) askBytes(tp kafka.TopicPartition) int32 {
	if r.large[tp] {
		return fetchBytesPerPartition
	}
	return firstFetchBytesPerPartition
}

// filled bounds the bytes of records a response holds, blocks[i] its part
// for pending[i]: what was asked of each partition that came back with
// some (the first batch of a response comes whole however large, KIP-74,
// and may hold more). A broker fills a response in the request's order,
// which is no set order (sarama writes a Fetch's partitions from a map),
// so that whether the response was full when it came to a partition is
// told by the response as a whole.
func (r *leaderRead) filled(pending []kafka.TopicPartition, blocks []*sarama.FetchResponseBlock) int64 {
	var n int64
	for i, tp := range pending {
		if block := blocks[i]; block != nil && len(block.RecordsSet) > 0 {
			n += int64(r.askBytes(tp))
		}
	}
	return n
}
