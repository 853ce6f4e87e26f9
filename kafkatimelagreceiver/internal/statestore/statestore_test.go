package statestore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore/memorystorage"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

func TestCorruptStoredStateIsIgnoredWithWarning(t *testing.T) {
	store := memorystorage.New()
	store.Put(statestore.TablesKey, []byte("KTLT\x01\x05garbage"))
	tables := timetable.NewStore(16, 0, time.Now)
	core, logs := observer.New(zap.WarnLevel)
	s := statestore.New(statestore.Settings{Client: store.Client(), Tables: tables, Interval: time.Hour, Logger: zap.New(core)})
	s.Load(context.Background())
	require.Empty(t, tables.Partitions())
	require.Equal(t, 1, logs.FilterMessageSnippet("ignoring saved tables").Len())
}

func TestStorageExtensionMissingOrWrongKind(t *testing.T) {
	id := component.MustNewID("file_storage")
	_, err := statestore.Open(context.Background(), memorystorage.Host{}, id, component.MustNewID("kafka_time_lag"))
	require.ErrorContains(t, err, `storage: extension "file_storage" is not configured`)
	_, err = statestore.Open(context.Background(), memorystorage.Host{id: struct {
		component.StartFunc
		component.ShutdownFunc
	}{}}, id, component.MustNewID("kafka_time_lag"))
	require.ErrorContains(t, err, "is not a storage extension")
}

// State saved while the wall clock was ahead (or restored on a host whose
// clock was stepped back since) holds times in the future: estimates from
// it would be later than the scrape, and every new sample older than the
// table's newest point would be ignored. Such tables are left out with a
// warning; the rest of the state is restored.
func TestRestoredStateFromTheFutureIsRejected(t *testing.T) {
	future := kafka.TopicPartition{Topic: "from-2200", Partition: 0}
	present := kafka.TopicPartition{Topic: "today", Partition: 0}
	saved := timetable.NewStore(16, 0, nil)
	saved.Track(map[kafka.TopicPartition]struct{}{future: {}, present: {}}, time.Now(), 0)
	at2200 := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
	saved.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{future: 10}, Sent: at2200, Received: at2200})
	yesterday := time.Now().Add(-24 * time.Hour).Round(0)
	saved.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{present: 10}, Sent: yesterday, Received: yesterday})

	store := memorystorage.New()
	store.Put(statestore.TablesKey, saved.EncodeState())
	tables := timetable.NewStore(16, 0, time.Now)
	core, logs := observer.New(zap.WarnLevel)
	s := statestore.New(statestore.Settings{Client: store.Client(), Tables: tables, Interval: time.Hour, Logger: zap.New(core)})
	s.Load(context.Background())
	require.Equal(t, []kafka.TopicPartition{present}, tables.Partitions(), "only the table from the past is restored")
	require.Equal(t, 1, logs.FilterMessageSnippet("left out").Len(), "the left-out table is reported: %v", logs.All())
}
