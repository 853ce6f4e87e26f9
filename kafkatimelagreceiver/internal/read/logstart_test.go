package read_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
)

// deletingPartition is a partition written 100 records a second from t0,
// whose retention deleted the records below start; its group committed
// below that, before the deletion.
type deletingPartition struct {
	kafka.Cluster
	t0          time.Time
	now         time.Time
	start       int64
	committed   int64
	startsAsked int
}

var deleting = kafka.TopicPartition{Topic: "orders", Partition: 0}

func (d *deletingPartition) endAt(t time.Time) int64 {
	return int64(t.Sub(d.t0) / (10 * time.Millisecond))
}

func (*deletingPartition) ConsumerGroups(context.Context) ([]string, error) {
	return []string{"billing"}, nil
}

func (d *deletingPartition) CommittedOffsets(context.Context, []string) (map[string]kafka.Commits, error) {
	return map[string]kafka.Commits{"billing": {{TopicPartition: deleting, Offset: d.committed}}}, nil
}

func (*deletingPartition) Identify(context.Context, []string) (*kafka.Identity, error) {
	return &kafka.Identity{ClusterID: "c"}, nil
}

func (d *deletingPartition) EndOffsets(context.Context, []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{deleting: d.endAt(d.now)}, Sent: d.now, Received: d.now}, nil
}

func (d *deletingPartition) StartOffsets(context.Context, []kafka.TopicPartition) (kafka.OffsetRead, error) {
	d.startsAsked++
	return kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{deleting: d.start}, Sent: d.now, Received: d.now}, nil
}

// TestDeletedLogStartIsNotDated: retention deleted the records of a
// stopped group and, 50 s before the scrape, the segment after them, so
// that the log start the sampler read a minute ago (its full sample comes
// every sampler.FullSampleEvery samples) is itself gone. The group's time
// lag is that of the oldest record still in the log (how-it-works: the
// record the group reads next, auto.offset.reset earliest), 300 s, or none;
// not that of a deleted record, 400 s.
func TestDeletedLogStartIsNotDated(t *testing.T) {
	t0 := time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)
	d := &deletingPartition{t0: t0, start: 30000, committed: 10000}
	r := newReader(t, d, nil)
	r.Now = func() time.Time { return d.now }
	r.Tables.Track(map[kafka.TopicPartition]struct{}{deleting: {}}, t0, time.Hour)
	for s := 0; s < 600; s += 10 {
		at := t0.Add(time.Duration(s) * time.Second)
		r.Tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{deleting: d.endAt(at)}, Sent: at, Received: at})
		if s == 540 {
			// The sampler's last full sample: the log start then.
			r.Tables.RecordStart(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{deleting: 20000}, Sent: at, Received: at})
		}
	}
	d.now = t0.Add(600 * time.Second)
	var errs scrapererror.ScrapeErrors
	in, err := r.Read(t.Context(), nil, kafka.NewDenials(), &errs)
	require.NoError(t, err)
	require.NoError(t, errs.Combine())
	lags := in.Estimates.GroupLags(nil, "billing", in.Snap.At)
	require.Len(t, lags, 1)
	if lags[0].HasTimeLag {
		require.LessOrEqual(t, math.Abs(lags[0].TimeLag-300), 10.0,
			"time lag %.0f s: the oldest record left (offset %d) was appended 300 s before the scrape; the log start read a minute ago (20000) 400 s; log starts read at the scrape: %d",
			lags[0].TimeLag, d.start, d.startsAsked)
	}
}

// A group above the log start known, and one caught up on a log retention
// emptied, cost no read of the log start at the scrape: only a group at or
// below it, with a lag, does (TestDeletedLogStartIsNotDated).
func TestLogStartReadOnlyForGroupsAtIt(t *testing.T) {
	t0 := time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name             string
		committed, start int64
		asked            int
	}{
		{"above the log start", 50000, 20000, 0},
		{"caught up on an emptied log", 60000, 60000, 0},
		{"below the log start", 10000, 20000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &deletingPartition{t0: t0, start: tc.start, committed: tc.committed, now: t0.Add(600 * time.Second)}
			r := newReader(t, d, nil)
			r.Now = func() time.Time { return d.now }
			r.Tables.Track(map[kafka.TopicPartition]struct{}{deleting: {}}, t0, time.Hour)
			r.Tables.RecordStart(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{deleting: tc.start}, Sent: t0, Received: t0})
			var errs scrapererror.ScrapeErrors
			_, err := r.Read(t.Context(), nil, kafka.NewDenials(), &errs)
			require.NoError(t, err)
			require.NoError(t, errs.Combine())
			require.Equal(t, tc.asked, d.startsAsked, "log starts read at the scrape")
		})
	}
}

// retainingPartition is a deletingPartition whose topic deletes records
// retentionMs old.
type retainingPartition struct {
	*deletingPartition
	retentionMs int64
}

func (d retainingPartition) TopicRetention(_ context.Context, topics []string) (map[string]kafka.TopicRetention, error) {
	out := map[string]kafka.TopicRetention{}
	for _, t := range topics {
		out[t] = kafka.TopicRetention{Delete: true, RetentionMs: d.retentionMs, RetentionBytes: -1}
	}
	return out, nil
}

func (retainingPartition) PartitionSizes(context.Context, []kafka.TopicPartition) (map[kafka.TopicPartition]int64, error) {
	return nil, nil
}

// TestRecordRetentionMayHaveDeletedIsNotDated: a stopped group sits above
// the log start the sampler read last (20000), on a record appended 350 s
// before the scrape; the topic keeps 300 s, and retention has since moved
// the log start to 30000. The group's time lag is that of the oldest
// record left (300 s), read at the scrape because its own record is older
// than retention.ms; not its deleted record's, 350 s. A group on a record
// younger than retention.ms costs no read.
func TestRecordRetentionMayHaveDeletedIsNotDated(t *testing.T) {
	t0 := time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		committed int64
		asked     int
		lag       float64
	}{
		{"older than retention.ms", 25000, 1, 300},
		{"younger than retention.ms", 35000, 0, 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &deletingPartition{t0: t0, start: 30000, committed: tc.committed}
			cluster := retainingPartition{deletingPartition: d, retentionMs: 300_000}
			r := newReader(t, cluster, nil)
			r.Retention = retention.NewCache(cluster)
			r.Now = func() time.Time { return d.now }
			r.Tables.Track(map[kafka.TopicPartition]struct{}{deleting: {}}, t0, time.Hour)
			for s := 0; s < 600; s += 10 {
				at := t0.Add(time.Duration(s) * time.Second)
				r.Tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{deleting: d.endAt(at)}, Sent: at, Received: at})
			}
			r.Tables.RecordStart(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{deleting: 20000}, Sent: t0, Received: t0})
			d.now = t0.Add(600 * time.Second)
			require.NoError(t, r.Retention.Refresh(t.Context(), map[kafka.TopicPartition]int64{deleting: d.endAt(d.now)}, d.now))
			d.startsAsked = 0 // the refresh's own, for the partition's size
			var errs scrapererror.ScrapeErrors
			in, err := r.Read(t.Context(), nil, kafka.NewDenials(), &errs)
			require.NoError(t, err)
			require.NoError(t, errs.Combine())
			require.Equal(t, tc.asked, d.startsAsked, "log starts read at the scrape")
			lags := in.Estimates.GroupLags(nil, "billing", in.Snap.At)
			require.Len(t, lags, 1)
			require.True(t, lags[0].HasTimeLag)
			require.InDelta(t, tc.lag, lags[0].TimeLag, 10)
		})
	}
}
