package kafkatimelagreceiver

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeLagEstimate is what the fake appendTimeFunc answers for one offset.
type fakeLagEstimate struct {
	at     int64
	method estimateMethod
}

// fakeLagAppendTimes answers from a fixed map and records every call.
type fakeLagAppendTimes struct {
	known map[recordAt]fakeLagEstimate
	calls []recordAt
}

func (f *fakeLagAppendTimes) appendTime(p *indexedPartition, c int64) (int64, estimateMethod, bool) {
	tp := p.topicPartition
	f.calls = append(f.calls, recordAt{tp, c})
	e, ok := f.known[recordAt{tp, c}]
	if !ok {
		return 0, methodNone, false
	}
	return e.at, e.method, true
}

func TestComputeLags(t *testing.T) {
	tp := topicPartition{topic: "orders", partition: 3}
	snapAt := unixSec(1_700_000_000)
	secondsAgo := func(s float64) int64 { return snapAt - int64(s*float64(time.Second)) }

	tests := []struct {
		name      string
		committed int64
		end       *int64 // nil: the end offset could not be read
		start     *int64 // nil: the log start is unknown
		known     map[int64]fakeLagEstimate
		want      partitionLag
		wantCalls []int64 // offsets appendTime must have been asked about
	}{
		{
			name:      "lagging, estimate from the table",
			committed: 900,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{900: {secondsAgo(42.5), methodTable}},
			want:      partitionLag{committed: 900, hasEnd: true, end: 1000, lag: 100, timeLag: 42.5, hasTimeLag: true, method: methodTable},
			wantCalls: []int64{900},
		},
		{
			name:      "lagging, estimate from the record's timestamp",
			committed: 10,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{10: {secondsAgo(86400), methodRecord}},
			want:      partitionLag{committed: 10, hasEnd: true, end: 1000, lag: 990, timeLag: 86400, hasTimeLag: true, method: methodRecord},
			wantCalls: []int64{10},
		},
		{
			name:      "caught up: committed equals end",
			committed: 1000,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{1000: {secondsAgo(30), methodTable}},
			want:      partitionLag{committed: 1000, hasEnd: true, end: 1000, lag: 0, timeLag: 0, hasTimeLag: true, method: methodCaughtUp},
		},
		{
			name:      "committed above end: no negative lag",
			committed: 1005,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{1005: {secondsAgo(30), methodTable}},
			want:      partitionLag{committed: 1005, hasEnd: true, end: 1000, lag: 0, timeLag: 0, hasTimeLag: true, method: methodCaughtUp},
		},
		{
			name:      "appended after the snapshot: time lag clamped to 0",
			committed: 999,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{999: {snapAt + int64(2*time.Second), methodTable}},
			want:      partitionLag{committed: 999, hasEnd: true, end: 1000, lag: 1, timeLag: 0, hasTimeLag: true, method: methodTable},
			wantCalls: []int64{999},
		},
		{
			name:      "appended exactly at the snapshot",
			committed: 999,
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{999: {snapAt, methodTable}},
			want:      partitionLag{committed: 999, hasEnd: true, end: 1000, lag: 1, timeLag: 0, hasTimeLag: true, method: methodTable},
			wantCalls: []int64{999},
		},
		{
			name:      "no estimate: time lag omitted, lag kept",
			committed: 500,
			end:       lagPtr(int64(1000)),
			want:      partitionLag{committed: 500, hasEnd: true, end: 1000, lag: 500, method: methodNone},
			wantCalls: []int64{500},
		},
		{
			name:      "no end offset: neither lag nor time lag",
			committed: 500,
			known:     map[int64]fakeLagEstimate{500: {secondsAgo(1), methodTable}},
			want:      partitionLag{committed: 500},
		},
		{
			name:      "no end offset, start known: nothing lost is claimed",
			committed: 500,
			start:     lagPtr(int64(800)),
			want:      partitionLag{committed: 500},
		},
		{
			name:      "committed below the log start: lost records, estimate from the start",
			committed: 100,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(400)),
			known: map[int64]fakeLagEstimate{
				100: {secondsAgo(7200), methodRecord}, // must not be used: deleted
				400: {secondsAgo(3600), methodTable},
			},
			want:      partitionLag{committed: 100, hasEnd: true, end: 1000, lag: 900, lost: 300, timeLag: 3600, hasTimeLag: true, method: methodTable},
			wantCalls: []int64{400},
		},
		{
			name:      "committed below the log start, start estimate unavailable",
			committed: 100,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(400)),
			known:     map[int64]fakeLagEstimate{100: {secondsAgo(7200), methodRecord}},
			want:      partitionLag{committed: 100, hasEnd: true, end: 1000, lag: 900, lost: 300, method: methodNone},
			wantCalls: []int64{400},
		},
		{
			name:      "committed below the log start, everything left was deleted",
			committed: 100,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(1000)),
			want:      partitionLag{committed: 100, hasEnd: true, end: 1000, lag: 900, lost: 900, timeLag: 0, hasTimeLag: true, method: methodCaughtUp},
		},
		{
			name:      "committed at the log start: nothing lost",
			committed: 400,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(400)),
			known:     map[int64]fakeLagEstimate{400: {secondsAgo(60), methodTable}},
			want:      partitionLag{committed: 400, hasEnd: true, end: 1000, lag: 600, timeLag: 60, hasTimeLag: true, method: methodTable},
			wantCalls: []int64{400},
		},
		{
			name:      "committed above the log start: estimate from the committed offset",
			committed: 700,
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(400)),
			known:     map[int64]fakeLagEstimate{700: {secondsAgo(0.25), methodTable}},
			want:      partitionLag{committed: 700, hasEnd: true, end: 1000, lag: 300, timeLag: 0.25, hasTimeLag: true, method: methodTable},
			wantCalls: []int64{700},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &snapshot{
				at:        snapAt,
				committed: map[string]map[topicPartition]int64{"g": {tp: tt.committed}},
				end:       map[topicPartition]int64{},
				start:     map[topicPartition]int64{},
			}
			if tt.end != nil {
				snap.end[tp] = *tt.end
			}
			if tt.start != nil {
				snap.start[tp] = *tt.start
			}
			fake := &fakeLagAppendTimes{known: map[recordAt]fakeLagEstimate{}}
			for offset, e := range tt.known {
				fake.known[recordAt{tp, offset}] = e
			}

			got := computeLags(snap, fake.appendTime)

			want := tt.want
			want.group, want.topicPartition = "g", tp
			require.Equal(t, []partitionLag{want}, got)
			var wantCalls []recordAt
			for _, offset := range tt.wantCalls {
				wantCalls = append(wantCalls, recordAt{tp, offset})
			}
			require.Equal(t, wantCalls, fake.calls)
		})
	}
}

func TestComputeLagsEmpty(t *testing.T) {
	fake := &fakeLagAppendTimes{}
	require.Empty(t, computeLags(&snapshot{}, fake.appendTime))
	require.Empty(t, computeLags(&snapshot{committed: map[string]map[topicPartition]int64{"g": {}}}, fake.appendTime))
	require.Empty(t, fake.calls)
}

func TestComputeLagsSorted(t *testing.T) {
	// Many groups and partitions, so that map order would show if the output
	// were not sorted.
	snap := &snapshot{at: unixSec(1000), committed: map[string]map[topicPartition]int64{}, end: map[topicPartition]int64{}}
	groups := []string{"b", "a", "c", "a-1", "B"}
	topics := []string{"t2", "t1", "t10", "__x"}
	for _, g := range groups {
		snap.committed[g] = map[topicPartition]int64{}
		for _, topic := range topics {
			for p := int32(11); p >= 0; p-- {
				tp := topicPartition{topic, p}
				snap.committed[g][tp] = 5
				snap.end[tp] = 10
			}
		}
	}
	fake := &fakeLagAppendTimes{}
	for range 5 {
		lags := computeLags(snap, fake.appendTime)
		require.Len(t, lags, len(groups)*len(topics)*12)
		for i := 1; i < len(lags); i++ {
			a, b := lags[i-1], lags[i]
			less := a.group < b.group ||
				a.group == b.group && (a.topic < b.topic || a.topic == b.topic && a.partition < b.partition)
			require.True(t, less, "%s/%s/%d before %s/%s/%d", a.group, a.topic, a.partition, b.group, b.topic, b.partition)
		}
	}
}

func TestAggregateLags(t *testing.T) {
	snapAt := unixSec(1_700_000_000)
	secondsAgo := func(s float64) int64 { return snapAt - int64(s*float64(time.Second)) }
	tp := func(topic string, p int32) topicPartition { return topicPartition{topic, p} }
	snap := &snapshot{
		at: snapAt,
		committed: map[string]map[topicPartition]int64{
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
		},
		end: map[topicPartition]int64{
			tp("orders", 0): 100,
			tp("orders", 1): 100,
			tp("orders", 2): 100,
			tp("audit", 0):  20,
			tp("audit", 1):  20,
		},
	}
	fake := &fakeLagAppendTimes{known: map[recordAt]fakeLagEstimate{
		{tp("orders", 0), 90}: {secondsAgo(5), methodTable},
		{tp("audit", 0), 0}:   {secondsAgo(120), methodRecord},
		{tp("orders", 0), 0}:  {secondsAgo(3600), methodRecord},
	}}

	lags := computeLags(snap, fake.appendTime)
	got := aggregateLags(nil, lags)

	require.Equal(t, []topicLag{
		{group: "analytics", topic: "orders", lagSum: 100, lagMax: 100, hasLag: true, timeLagMax: 3600, hasTimeLag: true},
		{group: "billing", topic: "audit", lagSum: 20, lagMax: 20, hasLag: true, timeLagMax: 120, hasTimeLag: true},
		{group: "billing", topic: "orders", lagSum: 60, lagMax: 50, hasLag: true, timeLagMax: 5, hasTimeLag: true},
		{group: "gone", topic: "orders"},
		{group: "stuck", topic: "orders", lagSum: 60, lagMax: 60, hasLag: true},
	}, got)
}

func TestAggregateLagsTable(t *testing.T) {
	pl := func(group, topic string, partition int32, hasEnd bool, lag int64, hasTimeLag bool, timeLag float64) partitionLag {
		return partitionLag{
			group: group, topicPartition: topicPartition{topic, partition},
			hasEnd: hasEnd, lag: lag, hasTimeLag: hasTimeLag, timeLag: timeLag,
		}
	}
	tests := []struct {
		name string
		in   []partitionLag
		want []topicLag
	}{
		{name: "empty", in: nil, want: nil},
		{
			name: "one partition",
			in:   []partitionLag{pl("g", "t", 0, true, 7, true, 1.5)},
			want: []topicLag{{group: "g", topic: "t", lagSum: 7, lagMax: 7, hasLag: true, timeLagMax: 1.5, hasTimeLag: true}},
		},
		{
			name: "max time lag only over partitions with an estimate",
			in: []partitionLag{
				pl("g", "t", 0, true, 1000, false, 0),
				pl("g", "t", 1, true, 3, true, 0.5),
				pl("g", "t", 2, true, 0, true, 0),
			},
			want: []topicLag{{group: "g", topic: "t", lagSum: 1003, lagMax: 1000, hasLag: true, timeLagMax: 0.5, hasTimeLag: true}},
		},
		{
			name: "all caught up: zeros are reported, not omitted",
			in: []partitionLag{
				pl("g", "t", 0, true, 0, true, 0),
				pl("g", "t", 1, true, 0, true, 0),
			},
			want: []topicLag{{group: "g", topic: "t", hasLag: true, hasTimeLag: true}},
		},
		{
			name: "no estimate anywhere",
			in: []partitionLag{
				pl("g", "t", 0, true, 4, false, 0),
				pl("g", "t", 1, false, 0, false, 0),
			},
			want: []topicLag{{group: "g", topic: "t", lagSum: 4, lagMax: 4, hasLag: true}},
		},
		{
			name: "groups and topics split",
			in: []partitionLag{
				pl("a", "t1", 0, true, 1, true, 10),
				pl("a", "t1", 1, true, 2, true, 20),
				pl("a", "t2", 0, true, 3, true, 30),
				pl("b", "t1", 0, true, 4, true, 40),
				pl("b", "t1", 1, true, 5, true, 5),
			},
			want: []topicLag{
				{group: "a", topic: "t1", lagSum: 3, lagMax: 2, hasLag: true, timeLagMax: 20, hasTimeLag: true},
				{group: "a", topic: "t2", lagSum: 3, lagMax: 3, hasLag: true, timeLagMax: 30, hasTimeLag: true},
				{group: "b", topic: "t1", lagSum: 9, lagMax: 5, hasLag: true, timeLagMax: 40, hasTimeLag: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, aggregateLags(nil, tt.in))
		})
	}
}

func TestEstimateMethodString(t *testing.T) {
	require.Equal(t, "none", methodNone.String())
	require.Equal(t, "caught_up", methodCaughtUp.String())
	require.Equal(t, "interpolation", methodTable.String())
	require.Equal(t, "record_timestamp", methodRecord.String())
	require.Equal(t, "none", estimateMethod(99).String())
}

func lagPtr[T any](v T) *T { return &v }

// computeLags is every group's lags, in the order a scrape computes them.
func computeLags(snap *snapshot, appendTime appendTimeFunc) []partitionLag {
	groups := make([]string, 0, len(snap.committed))
	for group := range snap.committed {
		groups = append(groups, group)
	}
	slices.Sort(groups)
	idx := indexSnapshot(snap)
	var out []partitionLag
	for _, group := range groups {
		out = groupLags(out, group, idx, snap.at, appendTime)
	}
	return out
}

// A scrape's aggregates are built group by group, appended to the ones
// before: the result is the same as over all the lags at once.
func TestAggregateLagsAppends(t *testing.T) {
	a := []partitionLag{{group: "a", topicPartition: topicPartition{"t", 0}, hasEnd: true, lag: 2}}
	b := []partitionLag{{group: "b", topicPartition: topicPartition{"t", 0}, hasEnd: true, lag: 3}}
	require.Equal(t, aggregateLags(nil, append(append([]partitionLag(nil), a...), b...)), aggregateLags(aggregateLags(nil, a), b))
}
