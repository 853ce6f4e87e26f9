package retention

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// lagged is a pair committed at 1,000 of a partition ending at end,
// appended to at rate offsets a second, whose record at 1,000 is timeLag
// seconds old.
func lagged(topic string, end int64, rate, timeLag float64) lag.PartitionLag {
	return lag.PartitionLag{Group: "g", TopicPartition: kafka.TopicPartition{Topic: topic}, Committed: 1000, End: end, Lag: end - 1000,
		HasEnd: true, HasTimeLag: true, TimeLag: timeLag, ProduceRate: rate, HasProduceRate: true}
}

var (
	week     = kafka.TopicRetention{Delete: true, RetentionMs: 604_800_000, RetentionBytes: -1}
	forever  = kafka.TopicRetention{Delete: true, RetentionMs: -1, RetentionBytes: -1}
	tenMin   = kafka.TopicRetention{Delete: true, RetentionMs: 600_000, RetentionBytes: -1}
	capped   = kafka.TopicRetention{Delete: true, RetentionMs: 604_800_000, RetentionBytes: 300 << 10}
	tightCap = kafka.TopicRetention{Delete: true, RetentionMs: 600_000, RetentionBytes: 10 << 20}
)

// TestPredictPair: a topic capped at 300 KiB, written at 10 KiB/s (10
// records of 1 KiB a second), a group 270 records behind: the 269 records
// after the one it sits on hold 269 KiB, so 31 KiB, 3.1 s, are left before
// the partition holds 300 KiB after it; the 7-day retention.ms is far
// later. A topic
// with both limits reports the sooner; a topic that deletes nothing has no
// margin; what cannot be predicted makes the margin unknown.
func TestPredictPair(t *testing.T) {
	const kib = 1024.0
	pl := lagged("t", 1270, 10, 27)
	m := PredictPair(&pl, Pair{Retention: capped, HasRetention: true, BytesPerOffset: kib})
	require.Equal(t, Known, m.Outcome)
	require.Equal(t, BasisSize, m.Basis)
	require.InDelta(t, (300-269)/10.0, m.Seconds, 1e-9)

	m = PredictPair(&pl, Pair{Retention: week, HasRetention: true})
	require.Equal(t, Margin{Seconds: 604_800 - 27, Basis: BasisTime, Outcome: Known}, m)

	// Both limits: a minute at 10 MiB left is later than ten minutes less
	// the record's age.
	m = PredictPair(&pl, Pair{Retention: tightCap, HasRetention: true, BytesPerOffset: kib})
	require.Equal(t, Margin{Seconds: 600 - 27, Basis: BasisTime, Outcome: Known}, m)
	m = PredictPair(&pl, Pair{Retention: tightCap, HasRetention: true, BytesPerOffset: 40 * kib})
	require.Equal(t, BasisSize, m.Basis, "at 40 KiB a record the 10 MiB fill first")
	require.InDelta(t, (10*kib*kib-269*40*kib)/(400*kib), m.Seconds, 1e-9)

	for name, r := range map[string]kafka.TopicRetention{"forever": forever, "compacted": {Delete: false, RetentionMs: 600_000, RetentionBytes: 1 << 20}} {
		require.Equal(t, Margin{}, PredictPair(&pl, Pair{Retention: r, HasRetention: true, BytesPerOffset: kib}), name)
	}
	require.Equal(t, Margin{}, PredictPair(&pl, Pair{}), "configuration not read: nothing predicted")

	// Overdue: the bytes after the record passed the limit 2 s ago.
	overdue := lagged("t", 1321, 10, 32)
	m = PredictPair(&overdue, Pair{Retention: capped, HasRetention: true, BytesPerOffset: kib})
	require.Equal(t, BasisSize, m.Basis)
	require.InDelta(t, -2, m.Seconds, 1e-9)
	// Nothing produced: due at the next retention check if past the limit,
	// else size deletes nothing.
	stopped := overdue
	stopped.ProduceRate = 0
	require.Equal(t, Margin{Seconds: 0, Basis: BasisSize, Outcome: Known}, PredictPair(&stopped, Pair{Retention: capped, HasRetention: true, BytesPerOffset: kib}))
	stopped = pl
	stopped.ProduceRate = 0
	require.Equal(t, Margin{Seconds: 604_800 - 27, Basis: BasisTime, Outcome: Known}, PredictPair(&stopped, Pair{Retention: capped, HasRetention: true, BytesPerOffset: kib}))

	// Records already deleted: the oldest left is at the log start.
	lost := lagged("t", 1270, 10, 20)
	lost.Lost = 69
	m = PredictPair(&lost, Pair{Retention: capped, HasRetention: true, BytesPerOffset: kib})
	require.InDelta(t, (300-200)/10.0, m.Seconds, 1e-9)

	for name, unknown := range map[string]func(*lag.PartitionLag){
		"no end offset":      func(p *lag.PartitionLag) { p.HasEnd = false },
		"no time lag":        func(p *lag.PartitionLag) { p.HasTimeLag = false },
		"no production rate": func(p *lag.PartitionLag) { p.HasProduceRate = false },
	} {
		p := pl
		unknown(&p)
		require.Equal(t, Unknown, PredictPair(&p, Pair{Retention: capped, HasRetention: true, BytesPerOffset: kib}).Outcome, name)
	}
	require.Equal(t, Unknown, PredictPair(&pl, Pair{Retention: capped, HasRetention: true}).Outcome, "size not read")

	caughtUp := lagged("t", 1000, 10, 0)
	caughtUp.CaughtUp = true
	require.Equal(t, Margin{}, PredictPair(&caughtUp, Pair{Retention: capped, HasRetention: true, BytesPerOffset: kib}), "nothing left to lose")
}

// TestTieredStorage: with remote.storage.enable, retention.ms and
// retention.bytes bound what a consumer reads (local.retention.* only the
// brokers' copy, and are not read). The size a broker gives is of its
// local copy, so no size prediction is made: the time limit, and the log
// start's advance once it moves, give the margin.
func TestTieredStorage(t *testing.T) {
	tiered := kafka.TopicRetention{Delete: true, RetentionMs: 2_592_000_000, RetentionBytes: 100 << 30, RemoteStorage: true}
	pl := lagged("t", 1270, 10, 3600)
	require.Equal(t, Margin{Seconds: 2_592_000 - 3600, Basis: BasisTime, Outcome: Known},
		PredictPair(&pl, Pair{Retention: tiered, HasRetention: true}))
	at := int64(1_700_000_000e9)
	observed := Advance{Rate: 10, Offset: 900, Since: at - 5e9, Interval: 60}
	m := PredictPair(&pl, Pair{Retention: tiered, HasRetention: true, Observed: observed, HasObserved: true, At: at})
	require.Equal(t, BasisLogStart, m.Basis)
	require.InDelta(t, -5+101/10.0, m.Seconds, 1e-9)
}

// TestObservedAdvance: the log start's moves made while the group stood
// still give its rate; one such move, or moves a group's own commits
// caused before it stopped, give none; an advance that stopped expires;
// a new log forgets the old one's moves.
func TestObservedAdvance(t *testing.T) {
	a := kafka.TopicPartition{Topic: "a"}
	t0 := int64(1_700_000_000e9)
	sec := func(s int64) int64 { return t0 + s*1e9 }
	change := func(from, to, since, at int64) timetable.StartChange {
		return timetable.StartChange{TopicPartition: a, From: from, Offset: to, Since: sec(since), At: sec(at)}
	}
	tr := NewTracker()
	require.Empty(t, tr.Moving())
	tr.Observe([]timetable.StartChange{change(0, 100, 50, 60), change(100, 200, 110, 120), change(200, 300, 170, 180)}, sec(185))
	require.Equal(t, []kafka.TopicPartition{a}, tr.Moving(), "its log start is worth reading at every sample")

	adv, ok := tr.Observed(a, sec(0), sec(185))
	require.True(t, ok)
	require.Equal(t, Advance{Rate: 200.0 / 120, Offset: 300, Since: sec(170), Interval: 60}, adv)
	require.InDelta(t, -15+(1000+1-300)/(200.0/120), adv.Until(1000, sec(185)), 1e-9)

	_, ok = tr.Observed(a, sec(100), sec(185))
	require.True(t, ok, "two moves since the group stood still")
	_, ok = tr.Observed(a, sec(150), sec(185))
	require.False(t, ok, "one move since: a deleter following the group's commits makes that one too")
	_, ok = tr.Observed(a, sec(0), sec(180+3*60+1))
	require.False(t, ok, "no move for three intervals: the advance stopped")

	tr.Observe([]timetable.StartChange{{TopicPartition: a, Restart: true}}, sec(190))
	_, ok = tr.Observed(a, sec(0), sec(190))
	require.False(t, ok, "a new log")

	tr.Observe([]timetable.StartChange{change(0, 10, 200, 210)}, sec(210))
	tr.Observe(nil, sec(210)+int64(25*time.Hour))
	require.Empty(t, tr.parts, "forgotten a day after its last move")
}

// TestMarginsUseTheObservedAdvanceOnlyWhenSooner: a log start moving as the
// configuration says (steps of about what size retention deletes) is not
// taken for a sooner deletion, nor for one when the group is not standing
// still; one moving much faster (DeleteRecords) is, and on a topic that
// keeps records for ever it is the only prediction.
func TestMarginsUseTheObservedAdvanceOnlyWhenSooner(t *testing.T) {
	a := kafka.TopicPartition{Topic: "capped"}
	t0 := int64(1_700_000_000e9)
	sec := func(s float64) int64 { return t0 + int64(s*1e9) }
	const kib = 1024.0
	pl := lagged("capped", 1270, 10, 27)
	at := sec(100)
	stuck := []progress.Partition{{Stuck: 100, HasStuck: true}}
	limits := Limits{Topics: map[string]kafka.TopicRetention{"capped": capped, "forever": forever}, BytesPerOffset: map[kafka.TopicPartition]float64{a: kib}}
	step := func(from, to int64, s float64) timetable.StartChange {
		return timetable.StartChange{TopicPartition: a, From: from, Offset: to, Since: sec(s - 1), At: sec(s)}
	}

	// Segments of 30 records deleted every 3 s: the start at 960 at 99 s,
	// 3.1+ s from passing 1,000, as the size prediction says.
	tr := NewTracker()
	tr.Observe([]timetable.StartChange{step(870, 900, 93), step(900, 930, 96), step(930, 960, 99)}, at)
	m := tr.Margins(nil, []lag.PartitionLag{pl}, stuck, limits, at)
	require.Equal(t, BasisSize, m[0].Basis)

	// DeleteRecords took it to 980, 20 records from the group's: sooner by
	// more than its 2 s steps.
	tr = NewTracker()
	tr.Observe([]timetable.StartChange{step(920, 940, 94), step(940, 960, 96), step(960, 980, 98)}, at)
	adv, _ := tr.Observed(a, sec(0), at)
	m = tr.Margins(nil, []lag.PartitionLag{pl}, stuck, limits, at)
	require.Equal(t, Margin{Seconds: adv.Until(1000, at), Basis: BasisLogStart, Outcome: Known}, m[0])
	require.Less(t, m[0].Seconds, 3.1)
	m = tr.Margins(nil, []lag.PartitionLag{pl}, nil, limits, at)
	require.Equal(t, BasisSize, m[0].Basis, "not known to stand still: the advance may be its own commits'")

	forEver := pl
	forEver.Topic = "forever"
	tr = NewTracker()
	tr.Observe([]timetable.StartChange{
		{TopicPartition: forEver.TopicPartition, From: 900, Offset: 910, Since: sec(95), At: sec(96)},
		{TopicPartition: forEver.TopicPartition, From: 910, Offset: 930, Since: sec(97), At: sec(98)},
	}, at)
	m = tr.Margins(nil, []lag.PartitionLag{forEver}, stuck, limits, at)
	require.Equal(t, BasisLogStart, m[0].Basis, "records kept for ever, deleted all the same")
	m = tr.Margins(nil, []lag.PartitionLag{forEver}, []progress.Partition{{}}, limits, at)
	require.Equal(t, Margin{}, m[0])
}

func TestTopicMargins(t *testing.T) {
	pl := func(group, topic string) lag.PartitionLag {
		return lag.PartitionLag{Group: group, TopicPartition: kafka.TopicPartition{Topic: topic}}
	}
	lags := []lag.PartitionLag{pl("a", "billing"), pl("a", "orders"), pl("a", "orders"), pl("a", "orders"), pl("a", "users"), pl("b", "orders"), pl("c", "orders"), pl("c", "orders")}
	margins := []Margin{
		{Seconds: -2, Basis: BasisTime, Outcome: Known},
		{Seconds: 20, Basis: BasisTime, Outcome: Known},
		{Seconds: 3, Basis: BasisSize, Outcome: Known},
		{}, // caught up
		{},
		{},
		{Seconds: 3, Basis: BasisSize, Outcome: Known},
		{Outcome: Unknown}, // may be the one nearest deletion
	}
	require.Equal(t, []TopicMargin{
		{Group: "a", Topic: "billing", Margin: Margin{Seconds: -2, Basis: BasisTime, Outcome: Known}},
		{Group: "a", Topic: "orders", Margin: Margin{Seconds: 3, Basis: BasisSize, Outcome: Known}},
		{Group: "c", Topic: "orders", Margin: Margin{Outcome: Unknown}},
	}, TopicMargins(nil, lags, margins))
}
