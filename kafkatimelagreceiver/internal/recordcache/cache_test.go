package recordcache

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Forget drops what the cache knows of a partition whose log was
// recreated or truncated: its records and its producers' clocks.
func TestForgetDropsThePartitionsClocks(t *testing.T) {
	r := New()
	tp := kafka.TopicPartition{Topic: "orders"}
	r.clocks[tp], _, _ = clocks.Partition{}.Learn(7, 0, 0, 1, 0)
	r.known[tp] = r.known[tp].put(5, kafka.RecordTimestamp{Offset: 5, Found: kafka.RecordTimed})
	r.Forget([]kafka.TopicPartition{tp})
	require.Empty(t, r.clocks)
	require.Empty(t, r.known)
}

// Retain keeps the records in use in room of their size: a scrape that put
// 60 records of each partition and keeps 20 holds 20 a partition, not the
// arrays the 60 grew into, until the next put. Measured on the heap, over
// 2,000 partitions: 40 bytes a record kept, where the grown arrays hold
// 64 records' room.
func TestRetainLetsTheRoomOfRecordsNoLongerUsedGo(t *testing.T) {
	const partitions, put, kept, entryBytes = 2000, 60, 20, 40
	r := New()
	found := kafka.RecordReads{}
	used := Used{}
	for p := range int32(partitions) {
		tp := kafka.TopicPartition{Topic: "orders", Partition: p}
		reads := make([]kafka.RecordRead, put)
		for i := range reads {
			o := int64(100 + i)
			reads[i] = kafka.RecordRead{Wanted: o, RecordTimestamp: kafka.RecordTimestamp{Offset: o, Timestamp: o * 1e6, Found: kafka.RecordTimed}}
		}
		found[tp] = reads
		for o := int64(100 + put - kept); o < 100+put; o++ {
			used[tp] = append(used[tp], o)
		}
	}
	r.PutAll(found, Existed{Received: 1e12}, Proof{})
	found = nil
	before := liveHeap()
	r.Retain(used)
	letGo := before - liveHeap()
	// At least the room of the 40 records a partition no longer used.
	require.Greater(t, letGo, int64(partitions*(put-kept)*entryBytes), "bytes let go")
	tp := kafka.TopicPartition{Topic: "orders", Partition: 7}
	for _, o := range used[tp] {
		rec, ok := r.Known(tp, o)
		require.True(t, ok, "offset %d", o)
		require.Equal(t, o*1e6, rec.Timestamp)
	}
	_, ok := r.Known(tp, 100+put-kept-1)
	require.False(t, ok)
}

// liveHeap is the bytes the heap holds after a collection.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
