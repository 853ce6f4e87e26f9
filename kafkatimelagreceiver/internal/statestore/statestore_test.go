package statestore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// memoryStorage is a storage extension keeping values in memory, standing
// in for file_storage so that a restart can be simulated in-process.
type memoryStorage struct {
	component.StartFunc
	component.ShutdownFunc
	mu     sync.Mutex
	values map[string][]byte
	opened int
	closed int
}

func newMemoryStorage() *memoryStorage { return &memoryStorage{values: map[string][]byte{}} }

func (m *memoryStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opened++
	return &memoryClient{m}, nil
}

type memoryClient struct{ m *memoryStorage }

func (c *memoryClient) Get(_ context.Context, key string) ([]byte, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return append([]byte(nil), c.m.values[key]...), nil
}

func (c *memoryClient) Set(_ context.Context, key string, value []byte) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	c.m.values[key] = append([]byte(nil), value...)
	return nil
}

func (c *memoryClient) Delete(_ context.Context, key string) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	delete(c.m.values, key)
	return nil
}

func (c *memoryClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value, _ = c.Get(ctx, op.Key)
		case storage.Set:
			_ = c.Set(ctx, op.Key, op.Value)
		case storage.Delete:
			_ = c.Delete(ctx, op.Key)
		}
	}
	return nil
}

func (c *memoryClient) Close(context.Context) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	c.m.closed++
	return nil
}

// hostWith is a component.Host offering the given extensions.
type hostWith map[component.ID]component.Component

func (h hostWith) GetExtensions() map[component.ID]component.Component { return h }

func TestCorruptStoredStateIsIgnoredWithWarning(t *testing.T) {
	store := newMemoryStorage()
	store.values[statestore.TablesKey] = []byte("KTLT\x01\x05garbage")
	tables := timetable.NewStore(16, 0, time.Now)
	core, logs := observer.New(zap.WarnLevel)
	s := statestore.New(statestore.Settings{Client: &memoryClient{store}, Tables: tables, Interval: time.Hour, Logger: zap.New(core)})
	s.Load(context.Background())
	require.Empty(t, tables.Partitions())
	require.Equal(t, 1, logs.FilterMessageSnippet("ignoring saved tables").Len())
}

func TestStorageExtensionMissingOrWrongKind(t *testing.T) {
	id := component.MustNewID("file_storage")
	_, err := statestore.Open(context.Background(), hostWith{}, id, component.MustNewID("kafka_time_lag"))
	require.ErrorContains(t, err, `storage: extension "file_storage" is not configured`)
	_, err = statestore.Open(context.Background(), hostWith{id: struct {
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

	store := newMemoryStorage()
	store.values[statestore.TablesKey] = saved.EncodeState()
	tables := timetable.NewStore(16, 0, time.Now)
	core, logs := observer.New(zap.WarnLevel)
	s := statestore.New(statestore.Settings{Client: &memoryClient{store}, Tables: tables, Interval: time.Hour, Logger: zap.New(core)})
	s.Load(context.Background())
	require.Equal(t, []kafka.TopicPartition{present}, tables.Partitions(), "only the table from the past is restored")
	require.Equal(t, 1, logs.FilterMessageSnippet("left out").Len(), "the left-out table is reported: %v", logs.All())
}
