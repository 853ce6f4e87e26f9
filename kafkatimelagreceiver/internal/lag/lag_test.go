package lag

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// fakeLagEstimate is what the fake AppendTimeFunc answers for one offset.
type fakeLagEstimate struct {
	at     int64
	method Method
}

// fakeLagAppendTimes answers from a fixed map and records every call.
type fakeLagAppendTimes struct {
	known map[recordAt]fakeLagEstimate
	calls []recordAt
}

func (f *fakeLagAppendTimes) appendTime(tp kafka.TopicPartition, c int64) (int64, Method, bool) {
	f.calls = append(f.calls, recordAt{TopicPartition: tp, Offset: c})
	e, ok := f.known[recordAt{TopicPartition: tp, Offset: c}]
	if !ok {
		return 0, MethodNone, false
	}
	return e.at, e.method, true
}

func TestComputeLags(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "orders", Partition: 3}
	snapAt := unixSec(1_700_000_000)
	secondsAgo := func(s float64) int64 { return snapAt - int64(s*float64(time.Second)) }

	tests := []struct {
		name      string
		committed int64
		end       *int64 // nil: the end offset could not be read
		start     *int64 // nil: the log start is unknown
		known     map[int64]fakeLagEstimate
		want      PartitionLag
		wantCalls []int64 // offsets appendTime must have been asked about
	}{
		{
			name:      "lagging, estimate from the table",
			committed: 900,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{900: {secondsAgo(42.5), MethodTable}},
			want:      PartitionLag{Committed: 900, HasEnd: true, End: 1000, Lag: 100, TimeLag: 42.5, HasTimeLag: true, Method: MethodTable},
			wantCalls: []int64{900},
		},
		{
			name:      "lagging, estimate from the record's timestamp",
			committed: 10,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{10: {secondsAgo(86400), MethodRecord}},
			want:      PartitionLag{Committed: 10, HasEnd: true, End: 1000, Lag: 990, TimeLag: 86400, HasTimeLag: true, Method: MethodRecord},
			wantCalls: []int64{10},
		},
		{
			name:      "caught up: committed equals end",
			committed: 1000,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{1000: {secondsAgo(30), MethodTable}},
			want:      PartitionLag{Committed: 1000, HasEnd: true, End: 1000, Lag: 0, TimeLag: 0, HasTimeLag: true, Method: MethodCaughtUp, CaughtUp: true},
		},
		{
			name:      "committed above end: no negative lag",
			committed: 1005,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{1005: {secondsAgo(30), MethodTable}},
			want:      PartitionLag{Committed: 1005, HasEnd: true, End: 1000, Lag: 0, TimeLag: 0, HasTimeLag: true, Method: MethodCaughtUp, CaughtUp: true},
		},
		{
			name:      "appended after the snapshot: time lag clamped to 0",
			committed: 999,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{999: {snapAt + int64(2*time.Second), MethodTable}},
			want:      PartitionLag{Committed: 999, HasEnd: true, End: 1000, Lag: 1, TimeLag: 0, HasTimeLag: true, Method: MethodTable},
			wantCalls: []int64{999},
		},
		{
			name:      "appended exactly at the snapshot",
			committed: 999,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{999: {snapAt, MethodTable}},
			want:      PartitionLag{Committed: 999, HasEnd: true, End: 1000, Lag: 1, TimeLag: 0, HasTimeLag: true, Method: MethodTable},
			wantCalls: []int64{999},
		},
		{
			name:      "no estimate: time lag omitted, lag kept",
			committed: 500,
			end:       lagPtr(int64(1000)),
			want:      PartitionLag{Committed: 500, HasEnd: true, End: 1000, Lag: 500, Method: MethodNone},
			wantCalls: []int64{500},
		},
		{
			name:      "no end offset: neither lag nor time lag",
			committed: 500,
			known:     map[int64]fakeLagEstimate{500: {secondsAgo(1), MethodTable}},
			want:      PartitionLag{Committed: 500},
		},
		{
			name:      "no end offset, start known: nothing lost is claimed",
			committed: 500,
			start:     lagPtr(int64(800)),
			want:      PartitionLag{Committed: 500},
		},
		{
			name:      "committed below the log start: lost records, estimate from the start",
			committed: 100,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(400)),
			known: map[int64]fakeLagEstimate{
				100: {secondsAgo(7200), MethodRecord}, // must not be used: deleted
				400: {secondsAgo(3600), MethodTable},
			},
			want:      PartitionLag{Committed: 100, HasEnd: true, End: 1000, Lag: 900, Lost: 300, TimeLag: 3600, HasTimeLag: true, Method: MethodTable},
			wantCalls: []int64{400},
		},
		{
			name:      "committed below the log start, start estimate unavailable",
			committed: 100,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(400)),
			known:     map[int64]fakeLagEstimate{100: {secondsAgo(7200), MethodRecord}},
			want:      PartitionLag{Committed: 100, HasEnd: true, End: 1000, Lag: 900, Lost: 300, Method: MethodNone},
			wantCalls: []int64{400},
		},
		{
			name:      "committed below the log start, everything left was deleted",
			committed: 100,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(1000)),
			want:      PartitionLag{Committed: 100, HasEnd: true, End: 1000, Lag: 900, Lost: 900, TimeLag: 0, HasTimeLag: true, Method: MethodCaughtUp},
		},
		{
			name:      "committed at the log start: nothing lost",
			committed: 400,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(400)),
			known:     map[int64]fakeLagEstimate{400: {secondsAgo(60), MethodTable}},
			want:      PartitionLag{Committed: 400, HasEnd: true, End: 1000, Lag: 600, TimeLag: 60, HasTimeLag: true, Method: MethodTable},
			wantCalls: []int64{400},
		},
		{
			name:      "committed above the log start: estimate from the committed offset",
			committed: 700,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(400)),
			known:     map[int64]fakeLagEstimate{700: {secondsAgo(0.25), MethodTable}},
			want:      PartitionLag{Committed: 700, HasEnd: true, End: 1000, Lag: 300, TimeLag: 0.25, HasTimeLag: true, Method: MethodTable},
			wantCalls: []int64{700},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &Snapshot{
				At:        snapAt,
				Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: tt.committed}}),
				End:       map[kafka.TopicPartition]int64{},
				Start:     map[kafka.TopicPartition]int64{},
			}
			if tt.end != nil {
				snap.End[tp] = *tt.end
			}
			if tt.start != nil {
				snap.Start[tp] = *tt.start
			}
			fake := &fakeLagAppendTimes{known: map[recordAt]fakeLagEstimate{}}
			for offset, e := range tt.known {
				fake.known[recordAt{TopicPartition: tp, Offset: offset}] = e
			}

			got := computeLags(snap, fake.appendTime)

			want := tt.want
			want.Group, want.TopicPartition = "g", tp
			require.Equal(t, []PartitionLag{want}, got)
			var wantCalls []recordAt
			for _, offset := range tt.wantCalls {
				wantCalls = append(wantCalls, recordAt{TopicPartition: tp, Offset: offset})
			}
			require.Equal(t, wantCalls, fake.calls)
		})
	}
}

func TestComputeLagsEmpty(t *testing.T) {
	fake := &fakeLagAppendTimes{}
	require.Empty(t, computeLags(&Snapshot{}, fake.appendTime))
	require.Empty(t, computeLags(&Snapshot{Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {}})}, fake.appendTime))
	require.Empty(t, fake.calls)
}

func TestComputeLagsSorted(t *testing.T) {
	// Many groups and partitions, so that map order would show if the output
	// were not sorted.
	committed := map[string]map[kafka.TopicPartition]int64{}
	snap := &Snapshot{At: unixSec(1000), End: map[kafka.TopicPartition]int64{}}
	groups := []string{"b", "a", "c", "a-1", "B"}
	topics := []string{"t2", "t1", "t10", "__x"}
	for _, g := range groups {
		committed[g] = map[kafka.TopicPartition]int64{}
		for _, topic := range topics {
			for p := int32(11); p >= 0; p-- {
				tp := kafka.TopicPartition{Topic: topic, Partition: p}
				committed[g][tp] = 5
				snap.End[tp] = 10
			}
		}
	}
	// A group on a few of the scrape's partitions is ordered apart from
	// the groups on most of them.
	committed["sparse"] = map[kafka.TopicPartition]int64{{Topic: "t2", Partition: 0}: 5, {Topic: "t10", Partition: 7}: 5}
	snap.Committed = kafka.CommitsByGroup(committed)
	fake := &fakeLagAppendTimes{}
	for range 5 {
		lags := computeLags(snap, fake.appendTime)
		require.Len(t, lags, len(groups)*len(topics)*12+2)
		for i := 1; i < len(lags); i++ {
			a, b := lags[i-1], lags[i]
			less := a.Group < b.Group ||
				a.Group == b.Group && (a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition)
			require.True(t, less, "%s/%s/%d before %s/%s/%d", a.Group, a.Topic, a.Partition, b.Group, b.Topic, b.Partition)
		}
	}
}

func TestAggregateLags(t *testing.T) {
	snapAt := unixSec(1_700_000_000)
	secondsAgo := func(s float64) int64 { return snapAt - int64(s*float64(time.Second)) }
	tp := func(topic string, p int32) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: topic, Partition: p}
	}
	snap := &Snapshot{
		At: snapAt,
		Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
			"billing": {
				tp("orders", 0): 90,  // lag 10, 5 s
				tp("orders", 1): 100, // caught up
				tp("orders", 2): 50,  // lag 50, no estimate
				tp("orders", 3): 10,  // no end offset
				tp("audit", 0):  0,   // lag 20, 120 s
				tp("audit", 1):  30,  // committed above end
			},
			"analytics": {
				tp("orders", 0): 0,   // lag 100, 3600 s
				tp("orders", 1): 100, // caught up
			},
			"stuck": {
				tp("orders", 2): 40, // lag 60, no estimate
				tp("orders", 3): 10, // no end offset
			},
			"gone": {
				tp("orders", 3): 10, // no end offset
			},
		}),
		End: map[kafka.TopicPartition]int64{
			tp("orders", 0): 100,
			tp("orders", 1): 100,
			tp("orders", 2): 100,
			tp("audit", 0):  20,
			tp("audit", 1):  20,
		},
	}
	fake := &fakeLagAppendTimes{known: map[recordAt]fakeLagEstimate{
		{TopicPartition: tp("orders", 0), Offset: 90}: {secondsAgo(5), MethodTable},
		{TopicPartition: tp("audit", 0), Offset: 0}:   {secondsAgo(120), MethodRecord},
		{TopicPartition: tp("orders", 0), Offset: 0}:  {secondsAgo(3600), MethodRecord},
	}}

	lags := computeLags(snap, fake.appendTime)
	got := Aggregate(nil, lags)

	require.Equal(t, []TopicLag{
		{Group: "analytics", Topic: "orders", LagSum: 100, LagMax: 100, HasLag: true, TimeLagMax: 3600, HasTimeLag: true},
		{Group: "billing", Topic: "audit", LagSum: 20, LagMax: 20, HasLag: true, TimeLagMax: 120, HasTimeLag: true},
		// orders/3 unread and orders/2 undated: a sum or maximum over the
		// other two would understate both.
		{Group: "billing", Topic: "orders", Unread: 1, Undated: 1},
		{Group: "gone", Topic: "orders", Unread: 1},
		{Group: "stuck", Topic: "orders", Unread: 1, Undated: 1},
	}, got)
}

func TestAggregateLagsTable(t *testing.T) {
	pl := func(group, topic string, partition int32, hasEnd bool, lag int64, hasTimeLag bool, timeLag float64) PartitionLag {
		return PartitionLag{
			Group: group, TopicPartition: kafka.TopicPartition{Topic: topic, Partition: partition},
			HasEnd: hasEnd, Lag: lag, HasTimeLag: hasTimeLag, TimeLag: timeLag,
		}
	}
	tests := []struct {
		name string
		in   []PartitionLag
		want []TopicLag
	}{
		{name: "empty", in: nil, want: nil},
		{
			name: "one partition",
			in:   []PartitionLag{pl("g", "t", 0, true, 7, true, 1.5)},
			want: []TopicLag{{Group: "g", Topic: "t", LagSum: 7, LagMax: 7, HasLag: true, TimeLagMax: 1.5, HasTimeLag: true}},
		},
		{
			name: "no max time lag while a partition has no estimate",
			in: []PartitionLag{
				pl("g", "t", 0, true, 1000, false, 0),
				pl("g", "t", 1, true, 3, true, 0.5),
				pl("g", "t", 2, true, 0, true, 0),
			},
			want: []TopicLag{{Group: "g", Topic: "t", LagSum: 1003, LagMax: 1000, HasLag: true, Undated: 1}},
		},
		{
			name: "nothing while a partition's end offset is unread",
			in: []PartitionLag{
				pl("g", "t", 0, true, 1, true, 0.04),
				pl("g", "t", 1, false, 0, false, 0),
			},
			want: []TopicLag{{Group: "g", Topic: "t", Unread: 1}},
		},
		{
			name: "all caught up: zeros are reported, not omitted",
			in: []PartitionLag{
				pl("g", "t", 0, true, 0, true, 0),
				pl("g", "t", 1, true, 0, true, 0),
			},
			want: []TopicLag{{Group: "g", Topic: "t", HasLag: true, HasTimeLag: true}},
		},
		{
			name: "no estimate anywhere",
			in: []PartitionLag{
				pl("g", "t", 0, true, 4, false, 0),
				pl("g", "t", 1, false, 0, false, 0),
			},
			want: []TopicLag{{Group: "g", Topic: "t", Unread: 1, Undated: 1}},
		},
		{
			name: "groups and topics split",
			in: []PartitionLag{
				pl("a", "t1", 0, true, 1, true, 10),
				pl("a", "t1", 1, true, 2, true, 20),
				pl("a", "t2", 0, true, 3, true, 30),
				pl("b", "t1", 0, true, 4, true, 40),
				pl("b", "t1", 1, true, 5, true, 5),
			},
			want: []TopicLag{
				{Group: "a", Topic: "t1", LagSum: 3, LagMax: 2, HasLag: true, TimeLagMax: 20, HasTimeLag: true},
				{Group: "a", Topic: "t2", LagSum: 3, LagMax: 3, HasLag: true, TimeLagMax: 30, HasTimeLag: true},
				{Group: "b", Topic: "t1", LagSum: 9, LagMax: 5, HasLag: true, TimeLagMax: 40, HasTimeLag: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Aggregate(nil, tt.in))
		})
	}
}

func TestEstimateMethodString(t *testing.T) {
	require.Equal(t, "none", MethodNone.String())
	require.Equal(t, "caught_up", MethodCaughtUp.String())
	require.Equal(t, "interpolation", MethodTable.String())
	require.Equal(t, "record_timestamp", MethodRecord.String())
	require.Equal(t, "none", Method(99).String())
}

func lagPtr[T any](v T) *T { return &v }

// computeLags is every group's lags, in the order a scrape computes them.
func computeLags(snap *Snapshot, appendTime partitionDates) []PartitionLag {
	groups := make([]string, 0, len(snap.Committed))
	for group := range snap.Committed {
		groups = append(groups, group)
	}
	slices.Sort(groups)
	est := estimated(snap, appendTime)
	var out []PartitionLag
	for _, group := range groups {
		out = est.GroupLags(out, group, snap.At)
	}
	return out
}

// estimated is snap's index, with append times from appendTime.
func estimated(snap *Snapshot, appendTime partitionDates) *Estimates {
	idx := NewIndex(snap)
	return Estimate(idx, byPartition(idx, appendTime))
}

// partitionDates dates the record at c of partition tp.
type partitionDates func(tp kafka.TopicPartition, c int64) (int64, Method, bool)

// byPartition is appendTime over idx's ranks.
func byPartition(idx *Index, appendTime partitionDates) AppendTimeFunc {
	return func(rank int32, c int64) (int64, Method, bool) { return appendTime(idx.Parts[rank].TopicPartition, c) }
}

// A scrape's aggregates are built group by group, appended to the ones
// before: the result is the same as over all the lags at once.
func TestAggregateLagsAppends(t *testing.T) {
	a := []PartitionLag{{Group: "a", TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, HasEnd: true, Lag: 2}}
	b := []PartitionLag{{Group: "b", TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, HasEnd: true, Lag: 3}}
	require.Equal(t, Aggregate(nil, append(append([]PartitionLag(nil), a...), b...)), Aggregate(Aggregate(nil, a), b))
}

func unixSec(s int64) int64 { return s * int64(time.Second) }

// TestEstimateDatesEachRecordOnce: groups that lag from the same offset of
// a partition share one estimate, asked once; a caught-up group, a
// partition without an end offset and one nobody lags on ask nothing; the
// lags read before Estimate have no time lag but the caught-up ones.
func TestEstimateDatesEachRecordOnce(t *testing.T) {
	p0 := kafka.TopicPartition{Topic: "t", Partition: 0}
	p1 := kafka.TopicPartition{Topic: "t", Partition: 1}
	noEnd := kafka.TopicPartition{Topic: "u", Partition: 0}
	idle := kafka.TopicPartition{Topic: "u", Partition: 1}
	snap := &Snapshot{
		At: unixSec(100),
		Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
			"a": {p0: 5, p1: 3, noEnd: 1, idle: 8},
			"b": {p0: 5, p1: 9, idle: 8},
			"c": {p0: 7, idle: 8},
		}),
		End: map[kafka.TopicPartition]int64{p0: 10, p1: 9, idle: 8},
	}
	idx := NewIndex(snap)
	before := idx.GroupLags(nil, "b", snap.At)
	require.False(t, before[0].HasTimeLag, "not estimated yet")
	require.True(t, before[1].HasTimeLag && before[1].CaughtUp)

	fake := &fakeLagAppendTimes{known: map[recordAt]fakeLagEstimate{
		{TopicPartition: p0, Offset: 5}: {at: unixSec(40), method: MethodTable},
		{TopicPartition: p0, Offset: 7}: {at: unixSec(70), method: MethodRecord},
		{TopicPartition: p1, Offset: 3}: {at: unixSec(90), method: MethodTable},
	}}
	est := Estimate(idx, byPartition(idx, fake.appendTime))
	require.Equal(t, []recordAt{
		{TopicPartition: p0, Offset: 5}, {TopicPartition: p0, Offset: 7}, {TopicPartition: p1, Offset: 3},
	}, fake.calls, "each lagging record once, partition by partition")

	timeLags := map[string][]float64{}
	for _, g := range []string{"a", "b", "c"} {
		for _, pl := range est.GroupLags(nil, g, snap.At) {
			if pl.HasTimeLag {
				timeLags[g] = append(timeLags[g], pl.TimeLag)
			}
		}
	}
	require.Equal(t, map[string][]float64{"a": {60, 10, 0}, "b": {60, 0, 0}, "c": {30, 0}}, timeLags)
}
