package sampler

import (
	"context"
	"errors"
	"slices"
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
// per read (unknown topics excepted), a log start of 0, and err when set.
type fakeReader struct {
	mu            sync.Mutex
	endReads      int
	startReads    int
	identifyReads int
	err           error
	sawDeadline   bool
	// unknown are the topics answered as unknown; asked is what each end
	// offset read asked for.
	unknown map[string]bool
	asked   [][]kafka.TopicPartition
}

func (f *fakeReader) EndOffsets(ctx context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, f.sawDeadline = ctx.Deadline()
	f.endReads++
	f.asked = append(f.asked, tps)
	now := time.Now()
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}, Sent: now, Received: now}
	if f.err != nil {
		return read, f.err
	}
	var errs []error
	for _, tp := range tps {
		if f.unknown[tp.Topic] {
			read.Unknown = append(read.Unknown, tp)
			errs = append(errs, &kafka.TopicError{Topic: tp.Topic, Operation: kafka.OperationDescribe, Err: errors.New("UNKNOWN_TOPIC_OR_PARTITION")})
			continue
		}
		read.Offsets[tp] = int64(f.endReads)
	}
	return read, kafka.Join(errs...)
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

func (f *fakeReader) Identify(context.Context, []string) (*kafka.Identity, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.identifyReads++
	return &kafka.Identity{ClusterID: "fake"}, f.err
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
	tables := timetable.NewStore(16, time.Minute, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{orders0: {}}, time.Time{}, 0)
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
	}, 10*time.Second, time.Millisecond, "log starts are read every %d samples", FullSampleEvery)
	s.Stop()
	end, _ := reader.reads()
	// Once no goroutine of the sampler is left (goleak waits until then,
	// and fails if one stays), no sample can come.
	goleak.VerifyNone(t)
	after, _ := reader.reads()
	require.Equal(t, end, after, "no sample after Stop returned")
	require.Greater(t, tables.Points(), 1)
	require.Equal(t, map[kafka.TopicPartition]int64{orders0: 0}, tables.StartOffsets())
	require.True(t, reader.sawDeadline, "every sample has a deadline")
}

func TestSampleWithNothingTrackedSendsNothing(t *testing.T) {
	reader := &fakeReader{}
	s := New(reader, timetable.NewStore(16, 0, nil), Settings{Interval: time.Hour, Timeout: time.Second})
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
	end, start, err := Read(context.Background(), reader, tables, []kafka.TopicPartition{orders0}, ReadOptions{})
	require.NoError(t, err)
	require.Equal(t, map[kafka.TopicPartition]int64{orders0: 1}, end.Offsets)
	require.Nil(t, start.Offsets, "no log starts asked for")
	require.Equal(t, 1, tables.Points())

	_, start, err = Read(context.Background(), reader, tables, []kafka.TopicPartition{orders0}, ReadOptions{WithStart: true})
	require.NoError(t, err)
	require.Equal(t, map[kafka.TopicPartition]int64{orders0: 0}, start.Offsets)
	require.Equal(t, start.Offsets, tables.StartOffsets())
}

// A deleted topic a group still commits on answers UNKNOWN at every read,
// and each ask costs the cluster a metadata refresh. The sampler stops
// asking after a few reads in a row; the scrape's read (Read with every
// tracked partition) keeps asking, and brings it back once it answers.
func TestSamplerStopsSamplingPartitionsTheClusterDoesNotKnow(t *testing.T) {
	gone := kafka.TopicPartition{Topic: "deleted", Partition: 0}
	reader := &fakeReader{unknown: map[string]bool{"deleted": true}}
	tables := timetable.NewStore(16, time.Minute, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{orders0: {}, gone: {}}, time.Time{}, 0)
	s := New(reader, tables, Settings{Interval: time.Hour, Timeout: time.Second})
	ctx := context.Background()
	for range 3 {
		require.Error(t, s.Sample(ctx, false))
	}
	for range 2 {
		require.NoError(t, s.Sample(ctx, false), "not asked, so no error either")
	}
	asked := 0
	for _, tps := range reader.asked {
		if slices.Contains(tps, gone) {
			asked++
		}
	}
	require.Equal(t, 3, asked, "asked three times, then no more")

	// The topic is created again: the scrape's read finds it.
	reader.unknown = nil
	_, _, err := Read(ctx, reader, tables, tables.Partitions(), ReadOptions{})
	require.NoError(t, err)
	reader.asked = nil
	require.NoError(t, s.Sample(ctx, false))
	require.Equal(t, [][]kafka.TopicPartition{{gone, orders0}}, reader.asked)
}

// A full sample reads the topics' identities first, once per sample.
func TestFullSampleReadsIdentity(t *testing.T) {
	reader := &fakeReader{}
	tables := trackedStore()
	s := New(reader, tables, Settings{Interval: time.Hour, Timeout: time.Second})
	require.NoError(t, s.Sample(context.Background(), false))
	require.False(t, tables.Identified())
	require.NoError(t, s.Sample(context.Background(), true))
	require.True(t, tables.Identified())
	require.Equal(t, 1, reader.identifyReads)
}

// The log starts the store watches at every sample (those moving while a
// group stands still) are read at every sample; the others only at the
// full ones.
func TestSampleReadsWatchedStartsEverySample(t *testing.T) {
	reader := &fakeReader{}
	tables := trackedStore()
	s := New(reader, tables, Settings{Interval: time.Hour, Timeout: time.Second})
	require.NoError(t, s.Sample(context.Background(), false))
	_, starts := reader.reads()
	require.Zero(t, starts, "nothing watched: no log start read")
	tables.WatchStartsEverySample([]kafka.TopicPartition{orders0, {Topic: "untracked"}})
	require.Equal(t, []kafka.TopicPartition{orders0}, tables.StartsEverySample(), "only tracked partitions")
	require.NoError(t, s.Sample(context.Background(), false))
	_, starts = reader.reads()
	require.Equal(t, 1, starts, "the watched log start read with the end offsets")
	require.Equal(t, map[kafka.TopicPartition]int64{orders0: 0}, tables.StartOffsets())
	require.NoError(t, s.Sample(context.Background(), true))
	_, starts = reader.reads()
	require.Equal(t, 2, starts, "a full sample reads every log start once")
}
