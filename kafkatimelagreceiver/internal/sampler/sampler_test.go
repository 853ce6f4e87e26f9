package sampler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// fakeReader answers every partition with an end offset that grows by one
// per read, a log start of 0, and err when set.
type fakeReader struct {
	mu          sync.Mutex
	endReads    int
	startReads  int
	err         error
	sawDeadline bool
}

func (f *fakeReader) EndOffsets(ctx context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, f.sawDeadline = ctx.Deadline()
	f.endReads++
	now := time.Now()
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}, Sent: now, Received: now}
	if f.err != nil {
		return read, f.err
	}
	for _, tp := range tps {
		read.Offsets[tp] = int64(f.endReads)
	}
	return read, nil
}

func (f *fakeReader) StartOffsets(_ context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startReads++
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}}
	for _, tp := range tps {
		read.Offsets[tp] = 0
	}
	return read, f.err
}

func (f *fakeReader) reads() (end, start int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.endReads, f.startReads
}

func (f *fakeReader) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

var orders0 = kafka.TopicPartition{Topic: "orders", Partition: 0}

func trackedStore() *timetable.Store {
	tables := timetable.NewStore(16, time.Minute)
	tables.Track(map[kafka.TopicPartition]struct{}{orders0: {}})
	return tables
}

func TestSamplerSamplesUntilStopped(t *testing.T) {
	defer goleak.VerifyNone(t)
	reader := &fakeReader{}
	tables := trackedStore()
	s := New(reader, tables, Settings{Interval: 5 * time.Millisecond, Timeout: time.Second})
	s.Start()
	require.Eventually(t, func() bool {
		end, start := reader.reads()
		return end >= 7 && start >= 2
	}, 10*time.Second, time.Millisecond, "log starts are read every %d samples", startOffsetsEvery)
	s.Stop()
	end, _ := reader.reads()
	time.Sleep(20 * time.Millisecond)
	after, _ := reader.reads()
	require.Equal(t, end, after, "no sample after Stop returned")
	require.Greater(t, tables.Points(), 1)
	require.Equal(t, map[kafka.TopicPartition]int64{orders0: 0}, tables.StartOffsets())
	require.True(t, reader.sawDeadline, "every sample has a deadline")
}

func TestSampleWithNothingTrackedSendsNothing(t *testing.T) {
	reader := &fakeReader{}
	s := New(reader, timetable.NewStore(16, 0), Settings{Interval: time.Hour, Timeout: time.Second})
	require.NoError(t, s.Sample(context.Background(), true))
	end, start := reader.reads()
	require.Zero(t, end+start)
}

func TestStopWithoutStart(t *testing.T) {
	New(&fakeReader{}, trackedStore(), Settings{Interval: time.Hour, Timeout: time.Second}).Stop()
}

// A failing cluster is logged once per failure streak, at warning level,
// and its recovery once; ACL denials are the scrape's to report, not
// failures of the sampler.
func TestSamplerLogsFailureStreaksOnce(t *testing.T) {
	defer goleak.VerifyNone(t)
	core, logs := observer.New(zap.DebugLevel)
	reader := &fakeReader{}
	reader.fail(errors.New("broker down"))
	s := New(reader, trackedStore(), Settings{Interval: 2 * time.Millisecond, Timeout: time.Second, Logger: zap.New(core)})
	s.Start()
	defer s.Stop()
	require.Eventually(t, func() bool { end, _ := reader.reads(); return end >= 5 }, 10*time.Second, time.Millisecond)
	reader.fail(nil)
	require.Eventually(t, func() bool { return logs.FilterMessage("sampling end offsets recovered").Len() == 1 }, 10*time.Second, time.Millisecond)
	reader.fail(kafka.Join(&kafka.TopicError{Topic: "secret", Operation: kafka.OperationDescribe, Err: &kafka.AuthorizationError{Err: errors.New("TOPIC_AUTHORIZATION_FAILED")}}))
	end, _ := reader.reads()
	require.Eventually(t, func() bool { e, _ := reader.reads(); return e >= end+5 }, 10*time.Second, time.Millisecond)
	s.Stop()
	require.Equal(t, 1, logs.FilterMessageSnippet("tables miss this point").Len(), "one warning for the whole streak")
	require.Equal(t, 1, logs.FilterMessage("sampling end offsets recovered").Len(), "denials are not a new streak")
}

func TestReadRecordsIntoTables(t *testing.T) {
	reader := &fakeReader{}
	tables := trackedStore()
	end, start, err := Read(context.Background(), reader, tables, []kafka.TopicPartition{orders0}, false)
	require.NoError(t, err)
	require.Equal(t, map[kafka.TopicPartition]int64{orders0: 1}, end.Offsets)
	require.Nil(t, start.Offsets, "no log starts asked for")
	require.Equal(t, 1, tables.Points())

	_, start, err = Read(context.Background(), reader, tables, []kafka.TopicPartition{orders0}, true)
	require.NoError(t, err)
	require.Equal(t, map[kafka.TopicPartition]int64{orders0: 0}, start.Offsets)
	require.Equal(t, start.Offsets, tables.StartOffsets())
}
