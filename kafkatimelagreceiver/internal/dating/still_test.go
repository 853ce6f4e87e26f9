package dating

import (
	"context"

	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// countedLogs are partitions whose records are all stamped stamps[i]
// (milliseconds, producer 1, outside transactions) at offset i, counting
// the partitions each request asks about.
type countedLogs struct {
	stamps          []int64
	searched, reads map[kafka.TopicPartition]int
}

func (l *countedLogs) TimestampOffsets(_ context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error) {
	for _, a := range asks {
		l.searched[a.TopicPartition]++
	}
	return indexLog{stamps: l.stamps}.answer(asks), nil
}

func (l *countedLogs) RecordTimestamps(_ context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error) {
	out := kafka.RecordReads{}
	for _, w := range wanted {
		l.reads[w.TopicPartition]++
		for _, o := range append(append([]int64(nil), w.Offsets...), w.Near...) {
			if o >= 0 && o < int64(len(l.stamps)) {
				rec := kafka.RecordTimestamp{Offset: o, Timestamp: l.stamps[o] * int64(time.Millisecond), Found: kafka.RecordTimed, ByProducer: true, Producer: 1}
				out[w.TopicPartition] = append(out[w.TopicPartition], kafka.RecordRead{Wanted: o, RecordTimestamp: rec})
			}
		}
	}
	return out, nil
}

func (l *countedLogs) StartOffsets(_ context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}}
	for _, tp := range tps {
		read.Offsets[tp] = 0
	}
	return read, nil
}

// take returns what was asked since the last take.
func (l *countedLogs) take() (searched, reads map[kafka.TopicPartition]int) {
	searched, reads = l.searched, l.reads
	l.searched, l.reads = map[kafka.TopicPartition]int{}, map[kafka.TopicPartition]int{}
	return searched, reads
}

// TestStillPartitionsAreCheckedForMarkersOnce: 40 partitions written an
// hour before the collector started and never since, each with a group 4
// records behind. Only a read tells whether a group sits on transaction
// markers there. Once their tables show them still (two samples a minute
// apart at the same end offset), one scrape reads them all, within
// max_record_reads_per_scrape and not within the byte budget (4 partitions
// a scrape: 10 scrapes of Fetch), and every later scrape asks nothing of
// them: each partition's answer is kept until it is written again. While
// the tables are too young to tell a still partition, the byte budget
// holds.
func TestStillPartitionsAreCheckedForMarkersOnce(t *testing.T) {
	const partitions = 40
	t0 := time.Unix(1_700_000_000, 0)
	logs := &countedLogs{searched: map[kafka.TopicPartition]int{}, reads: map[kafka.TopicPartition]int{}}
	for i := range 5 {
		logs.stamps = append(logs.stamps, t0.Add(time.Duration(i)*time.Second).UnixMilli())
	}
	tps := map[kafka.TopicPartition]struct{}{}
	committed := map[kafka.TopicPartition]int64{}
	end := map[kafka.TopicPartition]int64{}
	for p := range int32(partitions) {
		tp := kafka.TopicPartition{Topic: "quiet", Partition: p}
		tps[tp], committed[tp], end[tp] = struct{}{}, 1, 5
	}
	for _, tc := range []struct {
		name string
		// span is how long the tables watched the partitions stand still.
		span      time.Duration
		firstRead int
	}{
		{"still", 2 * time.Minute, partitions},
		{"too young to tell", 20 * time.Second, int(timeIndexBudget / FetchBytesPerPartition)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.take()
			started := t0.Add(time.Hour)
			tables := timetable.NewStore(512, 0, nil)
			tables.Track(tps, started, 0)
			for _, at := range []time.Time{started, started.Add(tc.span)} {
				tables.Record(kafka.OffsetRead{Offsets: end, Sent: at, Received: at})
			}
			records := recordcache.New()
			scrape := func(at time.Time) {
				snap := &lag.Snapshot{At: at.UnixNano(), Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": committed}),
					End: end, Start: map[kafka.TopicPartition]int64{}}
				idx := lag.NewIndex(snap)
				_, _, err := Date(context.Background(), logs, tables, records, snap, idx, Options{
					MaxReads: 1000, TimeIndex: true, MaxReadBytes: timeIndexBudget, Now: func() time.Time { return at },
				})
				require.NoError(t, err)
			}
			at := started.Add(tc.span + time.Second)
			scrape(at)
			searched, reads := logs.take()
			require.Len(t, searched, partitions, "every lagging record searched in the time index")
			require.Len(t, reads, tc.firstRead, "partitions read for markers by the first scrape")
			if tc.firstRead < partitions {
				return
			}
			for i := range 5 {
				scrape(at.Add(time.Duration(i+1) * 10 * time.Second))
				searched, reads := logs.take()
				require.Empty(t, searched, "scrape %d: a still partition whose answer is known is not searched again", i+2)
				require.Empty(t, reads, "scrape %d: nor read", i+2)
			}
		})
	}
}

// timeIndexBudget is the receiver's byte budget for record reads with the
// time index (read.TimeIndexRecordReadBytes): 4 partitions.
const timeIndexBudget = 4 * FetchBytesPerPartition
