package kfaketest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// ScaleBrokers is the broker count of every scale cluster.
const ScaleBrokers = 3

// ScaleWorkload is a scaleload.Workload with the name its benchmark runs
// under.
type ScaleWorkload struct {
	Name string
	scaleload.Workload
}

// ScrapeWorkloads are the scrape sizes of the receiver's BenchmarkScrape,
// which saramaoffsets' BenchmarkNaiveEndOffsets runs as well; 100k is 50
// groups on one topic of 2,000 partitions.
var ScrapeWorkloads = []ScaleWorkload{
	{"1k", scaleload.Workload{Groups: 10, Topics: 1, PartitionsPerTopic: 100}},
	{"10k", scaleload.Workload{Groups: 20, Topics: 1, PartitionsPerTopic: 500}},
	{"100k", scaleload.Workload{Groups: 50, Topics: 1, PartitionsPerTopic: 2000}},
}

// Scale is the scale cluster of one test or benchmark: a scaleload.Cluster
// of ScaleBrokers brokers, closed with it.
type Scale struct{ *scaleload.Cluster }

// NewScale serves a scale cluster configured by opts until tb's cleanup.
func NewScale(tb testing.TB, opts ...kfake.Opt) *Scale {
	tb.Helper()
	c, err := scaleload.Start(ScaleBrokers, opts...)
	require.NoError(tb, err)
	tb.Cleanup(c.Close)
	return &Scale{c}
}

// LoadWorkload loads w: scaleload.RecordsPerPartition records an hour to ten
// minutes old on every partition, every group committed on every partition.
func (k *Scale) LoadWorkload(tb testing.TB, w scaleload.Workload) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(tb, k.Load(ctx, w))
}

// ReportRequests adds one metric per API key seen, as requests per
// operation ("ListOffsets/op"), and their total ("requests/op").
func ReportRequests(b *testing.B, counts kafkacount.Counts) {
	for key, n := range counts {
		if n != 0 {
			b.ReportMetric(float64(n)/float64(b.N), kmsg.NameForKey(int16(key))+"/op")
		}
	}
	b.ReportMetric(float64(counts.Total())/float64(b.N), "requests/op")
}

// ReportCPU reports CPU time per operation ("cpu-ms/op"). kfake runs in the
// benchmark's process: its share is in it.
func ReportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}
