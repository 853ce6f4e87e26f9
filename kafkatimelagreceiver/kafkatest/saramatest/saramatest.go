// Package saramatest is what the tests of the sarama packages under
// internal/kafka share: the receiver's client settings pointed at a test's
// brokers, a broker that answers what it is scripted to, the record reads
// by record, and the goroutine sarama leaves running. It runs no Kafka of
// its own (kfaketest does), so that tests of the unit layer can use it.
package saramatest

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// IgnoreMeterArbiter leaves out of goleak's checks the one process-wide
// meter goroutine sarama's metrics start, which never ends.
var IgnoreMeterArbiter = goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick")

// DefaultSettings are the receiver's defaults.
func DefaultSettings() clientsettings.Settings {
	return clientsettings.Settings{
		Brokers:         []string{"localhost:9092"},
		ClientID:        "otel-kafkatimelag",
		ProtocolVersion: "3.0.0",
		RequestTimeout:  10 * time.Second,
		DialTimeout:     10 * time.Second,
		Metadata:        clientsettings.Metadata{RefreshInterval: 10 * time.Minute},
	}
}

// Settings are the receiver's defaults pointed at brokers (a test's kfake
// cluster): its client id and protocol version, and a 10 s request
// timeout.
func Settings(brokers []string) clientsettings.Settings {
	s := DefaultSettings()
	s.Brokers = brokers
	return s
}

// PatientSettings give every request to brokers a read deadline far beyond
// the test: only the context, or Close, can end a request the broker never
// answers.
func PatientSettings(brokers []string) clientsettings.Settings {
	s := Settings(brokers)
	s.RequestTimeout = 10 * time.Minute
	return s
}

// ReturnsWithin runs call and fails the test unless it returns within
// limit: limits are minutes above what the call should take, and minutes
// below the request timeout that would otherwise end it.
func ReturnsWithin[T any](t *testing.T, limit time.Duration, call func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- call() }()
	select {
	case v := <-done:
		return v
	case <-time.After(limit):
		t.Fatalf("still waiting after %s", limit)
		panic("unreachable")
	}
}

// RecordAt names the record at an offset of a partition.
type RecordAt struct {
	kafka.TopicPartition
	Offset int64
}

// RecordReader reads records' timestamps (kafka.Cluster.RecordTimestamps).
type RecordReader interface {
	RecordTimestamps(ctx context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error)
}

// RecordTimestamps is r.RecordTimestamps of records named one by one, its
// answers by record.
func RecordTimestamps(ctx context.Context, r RecordReader, records []RecordAt) (map[RecordAt]kafka.RecordTimestamp, error) {
	var wanted []kafka.PartitionOffsets
	for _, rec := range records {
		i := slices.IndexFunc(wanted, func(w kafka.PartitionOffsets) bool { return w.TopicPartition == rec.TopicPartition })
		if i < 0 {
			wanted = append(wanted, kafka.PartitionOffsets{TopicPartition: rec.TopicPartition})
			i = len(wanted) - 1
		}
		wanted[i].Offsets = append(wanted[i].Offsets, rec.Offset)
	}
	for i := range wanted {
		slices.Sort(wanted[i].Offsets)
		wanted[i].Offsets = slices.Compact(wanted[i].Offsets)
	}
	reads, err := r.RecordTimestamps(ctx, wanted)
	out := map[RecordAt]kafka.RecordTimestamp{}
	for tp, found := range reads {
		for _, read := range found {
			out[RecordAt{TopicPartition: tp, Offset: read.Wanted}] = read.RecordTimestamp
		}
	}
	return out, err
}
