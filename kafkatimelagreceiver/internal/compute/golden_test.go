package compute_test

import (
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/compute"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// updateGoldenInput rewrites testdata/golden_input.yaml from the scrape.
var updateGoldenInput = flag.Bool("update-golden", false, "rewrite testdata/golden_input.yaml from TestGoldenScrapeFromInput")

// goldenInput is a read of a small cluster, made of values: topics orders
// (2 partitions) and payments (1), written a record a minute from an hour
// before the scrape, sampled every minute then and read again by the
// scrape; group billing, one member
// holding orders, 3 and 3 records behind; group audit, empty, caught up on
// payments. orders deletes after a week.
func goldenInput() *read.Input {
	at := time.Unix(1_700_003_600, 0)
	start := at.Add(-time.Hour)
	orders0, orders1 := kafka.TopicPartition{Topic: "orders"}, kafka.TopicPartition{Topic: "orders", Partition: 1}
	payments := kafka.TopicPartition{Topic: "payments"}
	written := map[kafka.TopicPartition]int64{orders0: 10, orders1: 4, payments: 3}
	tables := timetable.NewStore(timetable.DefaultMaxSamples, 0, nil)
	tracked := map[kafka.TopicPartition]struct{}{}
	for tp := range written {
		tracked[tp] = struct{}{}
	}
	tables.Track(tracked, start, 0)
	for minute := range int64(11) {
		sampled := start.Add(time.Duration(minute) * time.Minute)
		ends := map[kafka.TopicPartition]int64{}
		for tp, n := range written {
			ends[tp] = min(minute, n)
		}
		tables.Record(kafka.OffsetRead{Offsets: ends, Sent: sampled, Received: sampled})
	}
	// The scrape's own end-offset read is the tables' newest point.
	tables.Record(kafka.OffsetRead{Offsets: written, Sent: at, Received: at})
	snap := &lag.Snapshot{
		At: at.UnixNano(),
		Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
			"billing": {orders0: 7, orders1: 1},
			"audit":   {payments: 3},
		}),
		End:   written,
		Start: map[kafka.TopicPartition]int64{orders0: 0, orders1: 0, payments: 0},
	}
	idx := lag.NewIndex(snap)
	tabled := idx.ResolveTables(tables)
	est := lag.Estimate(idx, lag.AppendTimes(tabled, tables, recordcache.New(), snap.At))
	est.ResolveProduceRates(tabled, tables, 5*time.Minute)
	member := kafka.GroupMember{MemberID: "billing-1", ClientID: "billing", Host: "/10.0.0.7", Assignment: []kafka.TopicPartition{orders0, orders1}, AssignmentKnown: true}
	return &read.Input{
		Snap: snap, Index: idx, Estimates: est, Pairs: 3, Owned: 0, Tracked: 3,
		Groups: []read.Group{
			{Name: "audit", Reported: true, Described: true, Description: kafka.GroupDescription{State: kafka.GroupStateEmpty, Protocol: "", Epoch: -1}},
			{Name: "billing", Reported: true, Described: true, Description: kafka.GroupDescription{State: kafka.GroupStateStable, Protocol: "range", Epoch: -1, Members: []kafka.GroupMember{member}}},
		},
		Retention: retention.Limits{Topics: map[string]kafka.TopicRetention{
			"orders":   {Delete: true, RetentionMs: 7 * 24 * 3_600_000, RetentionBytes: -1},
			"payments": {Delete: true, RetentionMs: -1, RetentionBytes: -1},
		}},
	}
}

// TestGoldenScrapeFromInput: a scrape computed and written from a read of
// values (goldenInput), without Kafka, point for point against
// testdata/golden_input.yaml: every metric on by default, with the
// computation the receiver runs at its defaults (health, progress and
// retention trackers). Every value is fixed, the time lags included; the
// golden file keeps no timestamps (golden.WriteMetrics normalizes them). `go test ./internal/compute -run TestGoldenScrapeFromInput
// -update-golden` rewrites the file.
func TestGoldenScrapeFromInput(t *testing.T) {
	cfg := emit.DefaultMetricsBuilderConfig()
	w, err := emit.New(emit.Settings{MetricsBuilderConfig: cfg, ClusterAlias: "golden", Replica: "test"}, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	wants := emit.WantsOf(cfg.Metrics)
	c := &compute.Computer{ProduceRates: wants.ProduceRates, Owners: wants.Owners}
	if wants.GroupHealth {
		c.Health = health.NewTracker(10, 0)
	}
	if wants.Progress {
		c.Progress = progress.NewTracker(5 * time.Minute)
	}
	if wants.Retention {
		c.Retention = retention.NewTracker()
	}
	in := goldenInput()
	out := w.Begin(t.Context(), in.Snap.At, in.Pairs)
	c.Scrape(in, out, time.Unix(0, in.Snap.At))
	md, err := out.Finish()
	require.NoError(t, err)

	path := filepath.Join("testdata", "golden_input.yaml")
	if *updateGoldenInput {
		require.NoError(t, golden.WriteMetrics(t, path, md))
	}
	want, err := golden.ReadMetrics(path)
	require.NoError(t, err)
	require.NoError(t, pmetrictest.CompareMetrics(want, md,
		pmetrictest.IgnoreTimestamp(),
		pmetrictest.IgnoreStartTimestamp(),
		pmetrictest.IgnoreScopeVersion(),
		pmetrictest.IgnoreMetricsOrder(),
		pmetrictest.IgnoreMetricDataPointsOrder(),
	))
}
