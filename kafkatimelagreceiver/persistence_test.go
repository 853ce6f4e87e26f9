package kafkatimelagreceiver

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
)

func sampleTables(t *testing.T) []storedTable {
	t.Helper()
	base := time.Unix(1_700_000_000, 0)
	a := newOffsetTable(16)
	a.maxGap = int64(30 * time.Second)
	for i := range 10 {
		at := base.Add(time.Duration(i) * 10 * time.Second)
		if i == 6 {
			base = base.Add(5 * time.Minute) // an outage: the next point ends a gap
			at = base.Add(time.Duration(i) * 10 * time.Second)
		}
		a.add(int64(i*100), at, at)
	}
	require.Len(t, a.gaps, 1)
	b := newOffsetTable(16)
	b.add(7, base, base)
	return []storedTable{
		{tp: topicPartition{"orders", 3}, table: a, start: 40, hasStart: true},
		{tp: topicPartition{"ünïcode.topic-with.dots", 0}, table: b},
	}
}

func TestStateRoundTrip(t *testing.T) {
	in := sampleTables(t)
	data := encodeState(in)
	out, err := decodeState(data, 16)
	require.NoError(t, err)
	require.Len(t, out, 2)
	byTP := map[topicPartition]storedTable{}
	for _, st := range out {
		byTP[st.tp] = st
	}
	for _, want := range in {
		got := byTP[want.tp]
		require.Equal(t, want.table.points, got.table.points, want.tp)
		require.Equal(t, want.table.lastRead, got.table.lastRead)
		require.Equal(t, len(want.table.gaps), len(got.table.gaps))
		for at := range want.table.gaps {
			require.Contains(t, got.table.gaps, at)
		}
		require.Equal(t, want.hasStart, got.hasStart)
		require.Equal(t, want.start, got.start)
	}
	// Encoding is deterministic.
	require.Equal(t, data, encodeState(out))
}

func TestStateDecodeThinsToCurrentBound(t *testing.T) {
	big := newOffsetTable(1000)
	base := time.Unix(1_700_000_000, 0)
	for i := range 600 {
		at := base.Add(time.Duration(i) * time.Second)
		big.add(int64(i*10), at, at)
	}
	out, err := decodeState(encodeState([]storedTable{{tp: topicPartition{"t", 0}, table: big}}), 64)
	require.NoError(t, err)
	require.LessOrEqual(t, out[0].table.len(), 64)
	require.Equal(t, big.points[0], out[0].table.points[0], "the oldest point survives thinning")
	require.Equal(t, big.points[599], out[0].table.points[out[0].table.len()-1], "so does the newest")
}

func TestStateDecodeRejectsBadInput(t *testing.T) {
	good := encodeState(sampleTables(t))
	otherVersion := append([]byte(stateMagic), 2, 0)
	cases := map[string][]byte{
		"empty":            nil,
		"bad magic":        []byte("NOPE\x01\x00"),
		"other version":    otherVersion,
		"truncated":        good[:len(good)/2],
		"trailing bytes":   append(append([]byte(nil), good...), 0),
		"huge table count": append([]byte(stateMagic), 1, 0xff, 0xff, 0xff, 0xff, 0x0f),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeState(data, 16)
			require.Error(t, err)
		})
	}
	// Every truncation of a valid state fails cleanly, never panics.
	for n := range len(good) {
		_, err := decodeState(good[:n], 16)
		require.Error(t, err, "prefix of %d bytes", n)
	}
}

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
	store.values[stateKey] = []byte("KTLT\x01\x05garbage")
	tables := newTableStore(16)
	core, logs := observer.New(zap.WarnLevel)
	s := &stateStorage{client: &memoryClient{store}, tables: tables, interval: time.Hour, logger: zap.New(core)}
	s.load(context.Background())
	require.Empty(t, tables.partitions())
	require.Equal(t, 1, logs.FilterMessageSnippet("ignoring saved tables").Len())
}

func TestStorageExtensionMissingOrWrongKind(t *testing.T) {
	id := component.MustNewID("file_storage")
	_, err := openStateStorage(context.Background(), hostWith{}, id, component.MustNewID("kafka_time_lag"))
	require.ErrorContains(t, err, `storage: extension "file_storage" is not configured`)
	_, err = openStateStorage(context.Background(), hostWith{id: struct {
		component.StartFunc
		component.ShutdownFunc
	}{}}, id, component.MustNewID("kafka_time_lag"))
	require.ErrorContains(t, err, "is not a storage extension")
}
