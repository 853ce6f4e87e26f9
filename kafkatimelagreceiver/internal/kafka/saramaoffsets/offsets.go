// Package saramaoffsets reads, with sarama, where the partitions and the
// consumer groups stand: the partitions' end, stable and start offsets
// (ListOffsets, one request per leader), the consumer groups (ListGroups),
// their committed offsets (OffsetFetch, one request per coordinator) and
// their members (DescribeGroups, ConsumerGroupDescribe). Its calls go
// through a saramaconn.Conn, which gives each its deadline.
package saramaoffsets

import (
	"context"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
)

// Offsets reads the offsets and groups on a connection. The listing of the
// groups is kept from one call to the next: it names each group's
// coordinator.
type Offsets struct {
	conn *saramaconn.Conn

	// listedBy is the broker whose ListGroups listed each group in the last
	// listing: a broker lists exactly the groups it coordinates, so the
	// listing every scrape sends anyway answers FindCoordinator for every
	// group at once (there is no batched FindCoordinator below v4, which
	// sarama does not speak). A group listed by two brokers (mid-move) is
	// left out and asked for the usual way.
	listedMu sync.Mutex
	listedBy map[string]int32
	// listedShare are the share groups the last listing saw, sorted: the
	// ListGroups that lists the consumer groups lists them too, so that
	// reading share groups costs no listing of its own.
	listedShare []string
}

// New reads the offsets and groups on conn, which it does not close.
func New(conn *saramaconn.Conn) *Offsets {
	return &Offsets{conn: conn}
}

// EndOffsets reads the high watermark of each partition.
func (c *Offsets) EndOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return c.listOffsets(ctx, partitions, sarama.OffsetNewest, sarama.ReadUncommitted)
}

// StableOffsets reads the last stable offset of each partition: the latest
// offset a read_committed ListOffsets gives (from Kafka 0.11; older brokers
// give the high watermark).
func (c *Offsets) StableOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return c.listOffsets(ctx, partitions, sarama.OffsetNewest, sarama.ReadCommitted)
}

// StartOffsets reads the log start offset of each partition.
func (c *Offsets) StartOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return c.listOffsets(ctx, partitions, sarama.OffsetOldest, sarama.ReadUncommitted)
}

// listOffsets sends one ListOffsets per leader carrying all its partitions,
// asking each for which.
func (c *Offsets) listOffsets(ctx context.Context, partitions []kafka.TopicPartition, which int64, isolation sarama.IsolationLevel) (kafka.OffsetRead, error) {
	call, stop := c.conn.Begin(ctx)
	defer stop()
	read := kafka.OffsetRead{Offsets: make(map[kafka.TopicPartition]int64, len(partitions))}
	client, err := c.conn.Connected(ctx)
	if err != nil {
		return read, err
	}
	attempts, unknown, err := c.conn.ListRetrying(ctx, call, client, partitions, offsetsListing(which, isolation, read.Offsets))
	read.Unknown = unknown
	read.Sent, read.Received = attempts[0].Sent, attempts[0].Received
	for _, retry := range attempts[1:] {
		if len(retry.Answered) > 0 {
			read.Retries = append(read.Retries, kafka.Retry{Partitions: retry.Answered, Sent: retry.Sent, Received: retry.Received})
		}
	}
	return read, err
}

// offsetsListing asks every partition for which (the end, start or stable
// offset) and keeps the offsets it reads in offsets.
func offsetsListing(which int64, isolation sarama.IsolationLevel, offsets map[kafka.TopicPartition]int64) saramaconn.Listing {
	return saramaconn.Listing{
		Isolation: isolation,
		Timestamp: func(kafka.TopicPartition) int64 { return which },
		Take: func(tp kafka.TopicPartition, block *sarama.OffsetResponseBlock, version int16) error {
			offset := block.Offset
			if version == 0 && len(block.Offsets) > 0 {
				offset = block.Offsets[0]
			}
			if offset < 0 {
				// No log has a negative end, start or stable offset: a
				// broker that answers one is broken or hostile, and the
				// lag measured from it would mean nothing.
				return fmt.Errorf("negative offset %d", offset)
			}
			offsets[tp] = offset
			return nil
		},
	}
}
