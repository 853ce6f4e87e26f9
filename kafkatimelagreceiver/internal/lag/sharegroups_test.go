package lag

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
)

func TestShareGroupLags(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "jobs", Partition: 2}
	at := unixSec(1_700_000_000)
	secondsAgo := func(s float64) int64 { return at - int64(s*float64(time.Second)) }

	tests := []struct {
		name      string
		offset    kafka.ShareOffset // the partition set to tp
		end       *int64            // nil: the end offset could not be read
		start     *int64            // nil: the log start is unknown
		known     map[int64]fakeLagEstimate
		want      SharePartitionLag // Group and TopicPartition set to the test's
		wantCalls []int64
	}{
		{
			name:      "unfinished records: the broker's lag, the age of the record at the start offset",
			offset:    kafka.ShareOffset{StartOffset: 900, Lag: 60},
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{900: {secondsAgo(42.5), MethodTable}},
			want:      SharePartitionLag{StartOffset: 900, End: 1000, Lag: 60, TimeLag: 42.5, Method: MethodTable, HasEnd: true, HasLag: true, LagFromBroker: true, HasTimeLag: true},
			wantCalls: []int64{900},
		},
		{
			name:      "no lag from the broker (v0): end offset minus start offset",
			offset:    kafka.ShareOffset{StartOffset: 900, Lag: -1},
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{900: {secondsAgo(3600), MethodRecord}},
			want:      SharePartitionLag{StartOffset: 900, End: 1000, Lag: 100, TimeLag: 3600, Method: MethodRecord, HasEnd: true, HasLag: true, HasTimeLag: true},
			wantCalls: []int64{900},
		},
		{
			name:   "caught up: start offset at the end, time lag 0 without an estimate",
			offset: kafka.ShareOffset{StartOffset: 1000, Lag: 0},
			end:    lagPtr(int64(1000)),
			want:   SharePartitionLag{StartOffset: 1000, End: 1000, Lag: 0, Method: MethodCaughtUp, HasEnd: true, HasLag: true, LagFromBroker: true, HasTimeLag: true},
		},
		{
			name:   "start offset past the end offset: caught up, no negative lag, counted beyond the end",
			offset: kafka.ShareOffset{StartOffset: 1010, Lag: -1},
			end:    lagPtr(int64(1000)),
			want:   SharePartitionLag{StartOffset: 1010, End: 1000, Lag: 0, Method: MethodCaughtUp, HasEnd: true, HasLag: true, HasTimeLag: true, BeyondEnd: true},
		},
		{
			name:   "start offset far past the end, the broker counting 7 left: neither lag nor time lag",
			offset: kafka.ShareOffset{StartOffset: 5000, Lag: 7},
			end:    lagPtr(int64(20)),
			want:   SharePartitionLag{StartOffset: 5000, End: 20, HasEnd: true, BeyondEnd: true},
		},
		{
			name:   "start offset past the end, the broker counting none left: caught up",
			offset: kafka.ShareOffset{StartOffset: 5000, Lag: 0},
			end:    lagPtr(int64(20)),
			want:   SharePartitionLag{StartOffset: 5000, End: 20, HasEnd: true, HasLag: true, LagFromBroker: true, Method: MethodCaughtUp, HasTimeLag: true, BeyondEnd: true},
		},
		{
			name:   "start offset at the end, the broker counting 3 left: neither lag nor time lag",
			offset: kafka.ShareOffset{StartOffset: 20, Lag: 3},
			end:    lagPtr(int64(20)),
			want:   SharePartitionLag{StartOffset: 20, End: 20, HasEnd: true},
		},
		{
			name:      "the record at the start offset deleted by retention: the oldest left is dated",
			offset:    kafka.ShareOffset{StartOffset: 100, Lag: 900},
			end:       lagPtr(int64(1000)),
			start:     lagPtr(int64(400)),
			known:     map[int64]fakeLagEstimate{400: {secondsAgo(600), MethodTable}},
			want:      SharePartitionLag{StartOffset: 100, End: 1000, Lag: 900, TimeLag: 600, Method: MethodTable, HasEnd: true, HasLag: true, LagFromBroker: true, HasTimeLag: true},
			wantCalls: []int64{400},
		},
		{
			name:      "only transaction markers and aborted records left: caught up",
			offset:    kafka.ShareOffset{StartOffset: 990, Lag: 0},
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{990: {secondsAgo(99), MethodCaughtUp}},
			want:      SharePartitionLag{StartOffset: 990, End: 1000, Lag: 0, Method: MethodCaughtUp, HasEnd: true, HasLag: true, LagFromBroker: true, HasTimeLag: true},
			wantCalls: []int64{990},
		},
		{
			name:      "appended after the read (a producer clock ahead): 0, not negative",
			offset:    kafka.ShareOffset{StartOffset: 900, Lag: 100},
			end:       lagPtr(int64(1000)),
			known:     map[int64]fakeLagEstimate{900: {at + int64(5*time.Second), MethodRecord}},
			want:      SharePartitionLag{StartOffset: 900, End: 1000, Lag: 100, Method: MethodRecord, HasEnd: true, HasLag: true, LagFromBroker: true, HasTimeLag: true},
			wantCalls: []int64{900},
		},
		{
			name:      "no estimate: the lag without a time lag",
			offset:    kafka.ShareOffset{StartOffset: 900, Lag: -1},
			end:       lagPtr(int64(1000)),
			want:      SharePartitionLag{StartOffset: 900, End: 1000, Lag: 100, HasEnd: true, HasLag: true},
			wantCalls: []int64{900},
		},
		{
			name:   "end offset not read: the broker's lag alone",
			offset: kafka.ShareOffset{StartOffset: 900, Lag: 7},
			want:   SharePartitionLag{StartOffset: 900, Lag: 7, HasLag: true, LagFromBroker: true},
		},
		{
			name:   "end offset not read, no lag from the broker: nothing",
			offset: kafka.ShareOffset{StartOffset: 900, Lag: -1},
			want:   SharePartitionLag{StartOffset: 900},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := &Snapshot{At: at, End: map[kafka.TopicPartition]int64{}, Start: map[kafka.TopicPartition]int64{}}
			if tc.end != nil {
				snap.End[tp] = *tc.end
			}
			if tc.start != nil {
				snap.Start[tp] = *tc.start
			}
			known := map[recordAt]fakeLagEstimate{}
			for o, e := range tc.known {
				known[recordAt{TopicPartition: tp, Offset: o}] = e
			}
			fake := &fakeLagAppendTimes{known: known}
			offset := tc.offset
			offset.TopicPartition = tp
			idx := NewIndex(snap)
			idx.AddShareGroups(map[string][]kafka.ShareOffset{"workers": {offset}}, nil)
			got := Estimate(idx, byPartition(idx, fake.appendTime)).ShareGroupLags(nil, "workers", at)
			want := tc.want
			want.Group, want.TopicPartition = "workers", tp
			require.Equal(t, []SharePartitionLag{want}, got)
			var calls []int64
			for _, c := range fake.calls {
				calls = append(calls, c.Offset)
			}
			require.Equal(t, tc.wantCalls, calls)
			require.False(t, math.IsNaN(got[0].TimeLag) || math.IsInf(got[0].TimeLag, 0) || got[0].TimeLag < 0)
		})
	}
}

// The estimator is the consumer groups': a share group at the same offset
// as a consumer group's commit has the same time lag, from the table and
// from a record read, and a record stamped after the scrape dates nothing
// for either.
func TestShareGroupTimeLagIsTheConsumerGroupsEstimate(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	groups := []string{"old", "older", "in-table", "caught-up"}
	shares := map[string][]kafka.ShareOffset{}
	for _, group := range groups {
		committed := idx.commits[group][0].committed
		shares["share-"+group] = []kafka.ShareOffset{{TopicPartition: tp, StartOffset: committed, Lag: -1}}
	}
	idx.AddShareGroups(shares, nil)
	records := appendStamped()
	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{
		{TopicPartition: tp, Offset: 50}: {Offset: 50, Timestamp: time.Unix(1_699_999_000, 0).UnixNano()},
		// A producer clock 10 hours ahead: the stamp gives no time.
		{TopicPartition: tp, Offset: 20}: {Offset: 20, Timestamp: at + int64(10*time.Hour)},
	}), recordcache.Existed{Received: at}, recordcache.Proof{})
	est := Estimate(idx.Index, AppendTimes(idx, tables, records, at))
	for _, group := range groups {
		consumer := est.GroupLags(nil, group, at)
		share := est.ShareGroupLags(nil, "share-"+group, at)
		require.Len(t, consumer, 1)
		require.Len(t, share, 1)
		// "older" sits before the table on a record stamped in the future:
		// no estimate for either.
		require.Equal(t, group != "older", share[0].HasTimeLag, group)
		require.Equal(t, consumer[0].HasTimeLag, share[0].HasTimeLag, group)
		require.Equal(t, consumer[0].TimeLag, share[0].TimeLag, group)
		require.Equal(t, consumer[0].Method, share[0].Method, group)
		require.Equal(t, consumer[0].Lag, share[0].Lag, group)
		require.GreaterOrEqual(t, share[0].TimeLag, 0.0, group)
	}
}

// A share group's start offset older than the table is a record to read,
// as a consumer group's commit there is, and is read once however many
// groups sit on it.
func TestOutOfTableListsShareGroupStartOffsets(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	idx.AddShareGroups(map[string][]kafka.ShareOffset{
		"workers": {{TopicPartition: tp, StartOffset: 30, Lag: 5}},
		"mailers": {{TopicPartition: tp, StartOffset: 50, Lag: 5}}, // where the consumer group "old" is
		"unread":  {{TopicPartition: kafka.TopicPartition{Topic: "gone", Partition: 0}, StartOffset: 1, Lag: 1}},
	}, nil)
	missing, _ := OutOfTable(idx, at, tables, recordcache.New())
	require.Equal(t, []recordAt{
		{TopicPartition: tp, Offset: 20},
		{TopicPartition: tp, Offset: 30}, // the share group's
		{TopicPartition: tp, Offset: 50},
		{TopicPartition: tp, Offset: 150},
	}, recordsOf(missing))
	require.Equal(t, []SharePartitionLag{{Group: "unread", TopicPartition: kafka.TopicPartition{Topic: "gone", Partition: 0}, StartOffset: 1, Lag: 1, HasLag: true, LagFromBroker: true}},
		idx.ShareGroupLags(nil, "unread", at), "a partition without an end offset: the broker's lag alone")
}

func TestAggregateSharesIsOverEveryPartitionOrAbsent(t *testing.T) {
	sl := func(group, topic string, p int32, lag int64, hasLag bool, timeLag float64, hasTimeLag bool) SharePartitionLag {
		return SharePartitionLag{Group: group, TopicPartition: kafka.TopicPartition{Topic: topic, Partition: p},
			Lag: lag, HasLag: hasLag, TimeLag: timeLag, HasTimeLag: hasTimeLag}
	}
	got := AggregateShares(nil, []SharePartitionLag{
		sl("a", "jobs", 0, 5, true, 10, true),
		sl("a", "jobs", 1, 7, true, 30, true),
		sl("a", "mail", 0, 3, true, 0, false), // no estimate on one partition
		sl("a", "mail", 1, 1, true, 2, true),
		sl("b", "jobs", 0, 0, false, 0, false), // nothing read
		sl("b", "jobs", 1, math.MaxInt64, true, 1, true),
		sl("c", "jobs", 0, math.MaxInt64, true, 1, true),
		sl("c", "jobs", 1, 1, true, 1, true),
	})
	require.Equal(t, []TopicLag{
		{Group: "a", Topic: "jobs", LagSum: 12, LagMax: 7, HasLag: true, TimeLagMax: 30, HasTimeLag: true},
		{Group: "a", Topic: "mail", LagSum: 4, LagMax: 3, HasLag: true, Undated: 1},
		{Group: "b", Topic: "jobs", Unread: 1},
		{Group: "c", Topic: "jobs", LagSum: math.MaxInt64, LagMax: math.MaxInt64, HasLag: true, TimeLagMax: 1, HasTimeLag: true},
	}, got)
}

func TestMethodCountsOfShareGroups(t *testing.T) {
	var c MethodCounts
	c.AddShares([]SharePartitionLag{
		{HasEnd: true, HasTimeLag: true, Method: MethodRecord},
		{HasEnd: true, HasTimeLag: true, Method: MethodCaughtUp},
		{HasEnd: true, Method: MethodNone},
		{Method: MethodNone}, // no end offset: nothing to estimate
	})
	require.Equal(t, MethodCounts{MethodNone: 1, MethodCaughtUp: 1, MethodRecord: 1}, c)
}
