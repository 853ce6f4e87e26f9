package dating

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// The phases of Date, each tested as values in and a value out.

// The plan wants the records no table dates, largest lags first, within
// what is left of MaxReads, and makes a search of the time index for each:
// three partitions sampled for the last 100 s, one record a second, with
// a group older than every table, 150, 120 and 130 s behind; MaxReads 2.
func TestPlanWantsTheLargestLagsWithinTheBudget(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	at := t0 + int64(200*time.Second)
	tables := timetable.NewStore(64, 0, nil)
	behind := map[kafka.TopicPartition]int64{{Topic: "a"}: 150, {Topic: "b"}: 120, {Topic: "c"}: 130}
	tracked := map[kafka.TopicPartition]struct{}{}
	commits := map[kafka.TopicPartition]int64{}
	end := map[kafka.TopicPartition]int64{}
	for tp, n := range behind {
		tracked[tp], commits[tp], end[tp] = struct{}{}, 200-n, 200
	}
	tables.Track(tracked, time.Unix(0, t0), 0)
	for s := int64(100); s <= 200; s += 10 {
		read := time.Unix(0, t0+s*int64(time.Second))
		ends := map[kafka.TopicPartition]int64{}
		for tp := range behind {
			ends[tp] = s
		}
		tables.Record(kafka.OffsetRead{Offsets: ends, Sent: read, Received: read})
	}
	snap := &lag.Snapshot{At: at, Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": commits}), End: end, Start: map[kafka.TopicPartition]int64{}}
	d := &dater{records: recordcache.New(), snap: snap, opt: Options{MaxReads: 2, TimeIndex: true}, reads: 2}
	var p plan
	tables.Locked(func(v timetable.View) { p = d.plan(lag.NewIndex(snap).ResolveTables(v), v) })

	require.Len(t, p.wanted, 2)
	require.Equal(t, kafka.TopicPartition{Topic: "a"}, p.wanted[0].TopicPartition, "150 s behind first")
	require.Equal(t, kafka.TopicPartition{Topic: "c"}, p.wanted[1].TopicPartition, "then 130 s")
	require.Equal(t, Report{Wanted: 3, Read: 2}, d.rep)
	require.Zero(t, d.reads, "the budget is spent")
	require.Equal(t, 3, d.used.Len(), "every record no table dates is in use, wanted now or not")
	searched := map[kafka.TopicPartition]bool{}
	for _, ps := range p.searches {
		searched[ps.tp] = true
		for _, target := range ps.targets {
			if target.Offset == 200-behind[ps.tp] {
				// Older than the table: before its first point, at its rate.
				require.Less(t, target.GuessMillis, (t0+100*int64(time.Second))/int64(time.Millisecond), "%+v", target)
			}
		}
	}
	require.Equal(t, map[kafka.TopicPartition]bool{{Topic: "a"}: true, {Topic: "c"}: true}, searched)
	require.Empty(t, p.markerChecks, "written every 10 s for 100 s: neither still nor too young to tell, no marker check")
}

// What the search found becomes findings in the order they are applied
// (the index's exact points, which measure its clock, then the records
// dated), and a record the plan wants read for a transaction marker is
// left to the read rather than dated from the index.
func TestIndexFindingsLeaveMarkerChecksToTheRead(t *testing.T) {
	const base = 1_700_000_000_000 // unix milliseconds
	var l indexLog
	for o := range int64(40) {
		l.stamps = append(l.stamps, base+o*100)
	}
	s := searchOf(tp,
		IndexTarget{Offset: 10, GuessMillis: base + 1_000, PrecisionMillis: 1},
		IndexTarget{Offset: 30, GuessMillis: base + 3_000, PrecisionMillis: 1},
	)
	run(s, l)
	p := plan{wanted: []kafka.PartitionOffsets{{TopicPartition: tp, Offsets: []int64{10, 30}}},
		markerChecks: []kafka.PartitionOffsets{{TopicPartition: tp, Offsets: []int64{30}}}}
	readAt := time.UnixMilli(base + 10_000)
	var rep Report
	found, reads, stillReads := indexFindings(s, p, readAt, readAt.UnixNano(), &rep)
	require.Empty(t, stillReads, "no partition of the plan is still")

	require.Equal(t, []kafka.PartitionOffsets{{TopicPartition: tp, Offsets: []int64{30}}}, reads)
	require.Len(t, found.batches, 3)
	points, dated, reRead := found.batches[0], found.batches[1], found.batches[2]
	require.True(t, points.measure && !points.counted, "the points measure the index's clock")
	require.NotEmpty(t, points.reads[tp])
	require.True(t, !dated.measure && dated.counted)
	require.Len(t, dated.reads[tp], 1)
	require.Equal(t, int64(10), dated.reads[tp][0].Wanted)
	require.Equal(t, (base+10*100)*int64(time.Millisecond), dated.reads[tp][0].Timestamp, "in nanoseconds, the record's own stamp")
	require.Equal(t, int64(30), reRead.reads[tp][0].Wanted, "dated, and read again for the marker check")
	require.Equal(t, readAt.UnixNano(), dated.received)
	require.Zero(t, rep.Unsearched)
}

// Apply puts the findings into the record cache in the order they were
// found, once each, and counts the records that give no time only for
// the batches that count (a record dated from the index and read again
// is counted once, with its read).
func TestApplyPutsEachFindingOnceAndCountsTheCounted(t *testing.T) {
	at := time.Unix(1_700_000_000, 0).UnixNano()
	snap := &lag.Snapshot{At: at, End: map[kafka.TopicPartition]int64{tp: 100}, Start: map[kafka.TopicPartition]int64{}}
	tables := timetable.NewStore(64, 0, nil)
	records := recordcache.New()
	d := &dater{records: records, snap: snap}
	untimed := kafka.RecordReads{tp: {{Wanted: 5, RecordTimestamp: kafka.RecordTimestamp{Offset: 5, Found: kafka.RecordUntimed}}}}
	timed := kafka.RecordReads{tp: {{Wanted: 7, RecordTimestamp: kafka.RecordTimestamp{Offset: 7, Timestamp: at - int64(time.Second), Found: kafka.RecordTimed}}}}
	var found findings
	found.add(untimed, false, false, time.Unix(0, at))
	found.add(timed, false, true, time.Unix(0, at))
	found.add(untimed, true, true, time.Unix(0, at))
	tables.Locked(func(v timetable.View) {
		idx := lag.NewIndex(snap).ResolveTables(v)
		d.apply(idx, v, &found)
		d.apply(idx, v, &found) // nothing new: nothing put twice
	})
	require.Equal(t, recordcache.Untimed{Invalid: 1}, d.rep.Untimed, "the untimed record counted once, with the batch that counts")
	require.Equal(t, len(found.batches), found.applied)
	rec, ok := records.Known(tp, 7)
	require.True(t, ok)
	require.Equal(t, at-int64(time.Second), rec.Timestamp)
	rec, ok = records.Known(tp, 5)
	require.True(t, ok)
	require.Equal(t, kafka.RecordUntimed, rec.Found)
}
