//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// appendWindow is when a produced record was appended: after the produce
// call started and by the time it returned.
type appendWindow struct{ after, by time.Time }

// TestEventTimeStampsDateNothing: producers stamping records with when
// their events happened (Kafka Streams, Connect sources, MirrorMaker 2), 1
// to 30 minutes before they are appended and in no order, write 10 records
// a partition every round on 3 partitions; one group sits 20 records
// behind the end, one about 30 rounds behind, one stuck at the start.
// Every time lag the receiver sends lies within the target (max(1 s, 1 %))
// of the records' append times; the tables date what they bound, and what
// only the stamps could date is withheld, counted as unproven.
func TestEventTimeStampsDateNothing(t *testing.T) {
	for _, source := range []string{TimestampSourceTimeIndex, TimestampSourceRecordReads} {
		t.Run(source, func(t *testing.T) {
			k := newTestKafka(t, 1)
			const partitions = 3
			k.CreateTopic("events", partitions)
			cfg := k.testConfig()
			cfg.TimestampSource = source
			s, tt := startTelemetryScraper(t, cfg)
			rng := rand.New(rand.NewPCG(7, 50))
			var windows [partitions][]appendWindow
			produce := func() {
				for p := range int32(partitions) {
					stamps := make([]time.Time, 10)
					for i := range stamps {
						stamps[i] = time.Now().Add(-time.Minute - time.Duration(rng.Int64N(int64(29*time.Minute))))
					}
					w := appendWindow{after: time.Now()}
					k.Produce("events", p, stamps...)
					w.by = time.Now()
					for range stamps {
						windows[p] = append(windows[p], w)
					}
				}
			}
			dated, checked := 0, 0
			for round := range 60 {
				produce()
				require.NoError(t, s.sampler.Sample(context.Background(), round%6 == 0))
				time.Sleep(50 * time.Millisecond)
				if round < 3 || round%3 != 0 {
					continue
				}
				end := int64(len(windows[0]))
				for p := range int32(partitions) {
					k.Commit("near", "events", map[int32]int64{p: end - 20})
					k.Commit("behind", "events", map[int32]int64{p: max(0, end-300)})
					k.Commit("stuck", "events", map[int32]int64{p: 0})
				}
				before := time.Now()
				md, err := s.scrape(context.Background())
				require.NoError(t, err)
				after := time.Now()
				for key, pt := range pointsOf(md, "kafka.consumer_group.time_lag") {
					if key.topic != "events" {
						continue
					}
					c := map[string]int64{"near": end - 20, "behind": max(0, end-300), "stuck": 0}[key.group]
					w := windows[key.partition][c]
					lo, hi := before.Sub(w.by).Seconds(), after.Sub(w.after).Seconds()
					slack := max(1, hi/100)
					checked++
					require.GreaterOrEqual(t, pt.doubleValue, lo-slack, "round %d, %s/%d: %.3f s for a record appended %.3f to %.3f s before", round, key.group, key.partition, pt.doubleValue, lo, hi)
					require.LessOrEqual(t, pt.doubleValue, hi+slack, "round %d, %s/%d: %.3f s for a record appended %.3f to %.3f s before", round, key.group, key.partition, pt.doubleValue, lo, hi)
					if key.group != "stuck" {
						dated++
					}
				}
			}
			require.Greater(t, dated, 40, "the tables date the groups inside them")
			require.Equal(t, dated, checked, "the stuck group's record, older than the tables, only its stamp could date")
			require.Positive(t, estimatesBy(t, tt, "unproven"), "what only a stamp could date is withheld and counted")
		})
	}
}

// estimatesBy is how many time lag estimates the receiver counted with
// method (otelcol_kafka_time_lag_estimates).
func estimatesBy(t *testing.T, tt *componenttest.Telemetry, method string) int64 {
	t.Helper()
	m, err := tt.GetMetric("otelcol_kafka_time_lag_estimates")
	require.NoError(t, err)
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := dp.Attributes.Value("method"); ok && v.AsString() == method {
			return dp.Value
		}
	}
	return 0
}
