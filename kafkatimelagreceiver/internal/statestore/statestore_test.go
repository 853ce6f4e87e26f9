package statestore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
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

// A saved table whose bytes were damaged in storage is left out with one
// warning that names its partition, and counted; the others are restored.
// A damaged header refuses the whole state, counted once.
func TestRestoreDamagedStateWarnsAndCounts(t *testing.T) {
	intact := kafka.TopicPartition{Topic: "orders", Partition: 3}
	damaged := kafka.TopicPartition{Topic: "payments", Partition: 0}
	saved := timetable.NewStore(16, 0, nil)
	saved.Track(map[kafka.TopicPartition]struct{}{damaged: {}, intact: {}}, time.Now(), 0)
	for i, ago := range []time.Duration{2 * time.Minute, time.Minute} {
		at := time.Now().Add(-ago).Round(0)
		saved.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{damaged: int64(i), intact: int64(i)}, Sent: at, Received: at})
	}
	data := saved.EncodeState()
	flipAt := func(i int) []byte {
		d := append([]byte(nil), data...)
		d[i] ^= 0x10
		return d
	}

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	tb, err := metadata.NewTelemetryBuilder(tt.NewTelemetrySettings())
	require.NoError(t, err)
	load := func(data []byte) (*timetable.Store, *observer.ObservedLogs) {
		store := memorystorage.New()
		store.Put(statestore.TablesKey, data)
		tables := timetable.NewStore(16, 0, time.Now)
		core, logs := observer.New(zap.WarnLevel)
		statestore.New(statestore.Settings{Client: store.Client(), Tables: tables, Interval: time.Hour, LeftOut: tb.KafkaTimeLagRestoreTablesLeftOut, Logger: zap.New(core)}).Load(context.Background())
		return tables, logs
	}

	// payments sorts last: the state's last byte is its checksum's.
	tables, logs := load(flipAt(len(data) - 1))
	require.Equal(t, []kafka.TopicPartition{intact}, tables.Partitions())
	require.Equal(t, 1, logs.Len(), "one warning: %v", logs.All())
	fields := logs.All()[0].ContextMap()
	require.Equal(t, []any{"table 2 of 2, saved as payments/0 (as far as its damaged bytes tell): checksum mismatch: damaged in storage"}, fields["first_reasons"])
	require.Equal(t, int64(1), fields["tables_damaged"])

	// The header: magic, version, an empty cluster id, the count, then its
	// checksum.
	tables, logs = load(flipAt(len("KTLT") + 3))
	require.Empty(t, tables.Partitions())
	require.Equal(t, 1, logs.FilterMessageSnippet("ignoring saved tables").Len())
	require.Contains(t, logs.All()[0].ContextMap()["error"], "header: checksum mismatch: damaged in storage")

	metadatatest.AssertEqualKafkaTimeLagRestoreTablesLeftOut(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("failed_check", "checksum")), Value: 1},
		{Attributes: attribute.NewSet(attribute.String("failed_check", "state")), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
}
