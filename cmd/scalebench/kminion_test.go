//go:build !unit

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestKminionConfig: the brokers, lag only at kminion's consumer-group
// defaults, its exporter on the loopback port given.
func TestKminionConfig(t *testing.T) {
	var cfg struct {
		Logger struct {
			Level string `json:"level"`
		} `json:"logger"`
		Kafka struct {
			Brokers  []string `json:"brokers"`
			ClientID string   `json:"clientId"`
		} `json:"kafka"`
		Minion   map[string]map[string]any `json:"minion"`
		Exporter struct {
			Host string `json:"host"`
			Port int    `json:"port"`
		} `json:"exporter"`
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(kminionConfig([]string{"127.0.0.1:9092", "127.0.0.1:9093"}, 41234)), &cfg))
	require.Equal(t, []string{"127.0.0.1:9092", "127.0.0.1:9093"}, cfg.Kafka.Brokers)
	require.Equal(t, kminionClientID, cfg.Kafka.ClientID)
	require.Equal(t, map[string]any{"enabled": true, "scrapeMode": "adminApi", "granularity": "partition"}, cfg.Minion["consumerGroups"])
	for _, off := range []string{"topics", "logDirs", "endToEnd"} {
		require.Equal(t, map[string]any{"enabled": false}, cfg.Minion[off], off)
	}
	require.Equal(t, "127.0.0.1", cfg.Exporter.Host)
	require.Equal(t, 41234, cfg.Exporter.Port)
}

// exposition is a kminion-like exposition with lag series for groups x
// partitions, in the Prometheus text or the OpenMetrics format.
func exposition(groups, partitions int, openMetrics bool) string {
	var b strings.Builder
	b.WriteString("# HELP kminion_kafka_consumer_group_topic_lag The number of messages a consumer group is lagging behind across all partitions in a topic\n")
	b.WriteString("# TYPE kminion_kafka_consumer_group_topic_lag gauge\n")
	for g := range groups {
		fmt.Fprintf(&b, "kminion_kafka_consumer_group_topic_lag{group_id=\"g%d\",topic_name=\"t\"} 3\n", g)
	}
	b.WriteString("# HELP " + kminionLagMetric + " The number of messages a consumer group is lagging behind the latest offset of a partition\n")
	b.WriteString("# TYPE " + kminionLagMetric + " gauge\n")
	for g := range groups {
		for p := range partitions {
			fmt.Fprintf(&b, "%s{group_id=\"g%d\",partition_id=\"%d\",topic_name=\"t\"} 1\n", kminionLagMetric, g, p)
		}
	}
	b.WriteString("kminion_kafka_consumer_group_topic_partition_lag_total 0\n") // another metric sharing the prefix
	if openMetrics {
		b.WriteString("# EOF\n")
	}
	return b.String()
}

// TestCountLagSeries counts the per-partition lag samples only, in either
// format, past lines longer than the reader's buffer, and the last line
// without its newline.
func TestCountLagSeries(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want int
	}{
		{"text", exposition(3, 7, false), 21},
		{"openmetrics", exposition(2, 5, true), 10},
		{"none", "# HELP kminion_exporter_up\nkminion_exporter_up 1\n", 0},
		{"empty", "", 0},
		{"long line", kminionLagMetric + `{group_id="` + strings.Repeat("g", 200<<10) + "\"} 1\n" + exposition(1, 2, false), 3},
		{"no final newline", strings.TrimSuffix(exposition(1, 2, false), "kminion_kafka_consumer_group_topic_partition_lag_total 0\n") + kminionLagMetric + `{group_id="x"} 1`, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := countLagSeries(strings.NewReader(tc.body))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestGetMetricsAsPrometheus: the scrape asks as Prometheus does (its
// Accept header, gzip, a timeout), inflates and reads the whole body; a
// non-200 answer is an error.
func TestGetMetricsAsPrometheus(t *testing.T) {
	body := exposition(4, 25, false)
	var header http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Clone()
		if r.URL.Path != "/metrics" {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		_, _ = zw.Write([]byte(body))
		_ = zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(zipped.Bytes())
	}))
	defer srv.Close()
	client := srv.Client()

	s := getMetrics(context.Background(), client, srv.URL+"/metrics", 15*time.Second)
	require.NoError(t, s.err)
	require.Equal(t, 100, s.lagSeries)
	require.False(t, s.end.Before(s.start))
	require.Equal(t, prometheusAccept, header.Get("Accept"))
	require.Equal(t, "gzip", header.Get("Accept-Encoding"))
	require.Equal(t, "15", header.Get("X-Prometheus-Scrape-Timeout-Seconds"))

	s = getMetrics(context.Background(), client, srv.URL+"/other", time.Second)
	require.ErrorContains(t, s.err, "503")
}

// TestKminionScrapesMustCarryEveryPair: a steady window with no scrape, a
// failed scrape or one short of a series is an error, so a kminion that
// reports nothing never reads as a fast one.
func TestKminionScrapesMustCarryEveryPair(t *testing.T) {
	at := time.Unix(1000, 0)
	ok := metricsScrape{start: at, end: at.Add(time.Second), lagSeries: 1000}
	require.NoError(t, checkKminionScrapes([]metricsScrape{ok, ok}, 1000))
	require.ErrorContains(t, checkKminionScrapes(nil, 1000), "no kminion scrape ended in the steady window")
	short := ok
	short.lagSeries = 0
	require.ErrorContains(t, checkKminionScrapes([]metricsScrape{ok, short}, 1000), "steady scrape 2 of kminion: 0 series of "+kminionLagMetric+", want one per (group, partition): 1000")
	failed := ok
	failed.err = context.DeadlineExceeded
	require.ErrorContains(t, checkKminionScrapes([]metricsScrape{failed, ok}, 1000), "steady scrape 1 of kminion (1s): context deadline exceeded")
}

// TestKminionFiguresOverTheCollectorsIntervals: kminion's CPU per
// interval is read at the collector's marks, warm-up and steady split where
// the collector's are, its steady RSS the largest at a steady mark; only
// the scrapes that ended in the steady window are checked.
func TestKminionFiguresOverTheCollectorsIntervals(t *testing.T) {
	start := time.Unix(1000, 0)
	var marks []mark
	for i, cpu := range []time.Duration{1, 3, 6, 10, 15, 21} { // 2, 3 | 4, 5, 6 s per interval
		marks = append(marks, mark{at: start.Add(time.Duration(i) * 15 * time.Second), kminion: kminionMark{cpu: cpu * time.Second, rss: int64(100+i) << 20}})
	}
	run := &kminionRun{begun: []scrapeStart{
		{at: start.Add(20 * time.Second), cpu: 2 * time.Second},
		{at: start.Add(35 * time.Second), cpu: 4 * time.Second},
		{at: start.Add(50 * time.Second), cpu: 9 * time.Second},
		{at: start.Add(65 * time.Second), cpu: 15 * time.Second},
		{at: start.Add(80 * time.Second), cpu: 22 * time.Second},
	}, scrapes: []metricsScrape{
		{start: start.Add(20 * time.Second), end: start.Add(25 * time.Second), lagSeries: 0, cpuAtStart: 2 * time.Second}, // warm-up: not checked
		{start: start.Add(35 * time.Second), end: start.Add(40 * time.Second), lagSeries: 6, cpuAtStart: 4 * time.Second},
		{start: start.Add(50 * time.Second), end: start.Add(55 * time.Second), lagSeries: 6, cpuAtStart: 9 * time.Second},
		{start: start.Add(65 * time.Second), end: start.Add(70 * time.Second), lagSeries: 6, cpuAtStart: 15 * time.Second},
		{start: start.Add(80 * time.Second), end: start.Add(85 * time.Second), lagSeries: 6, cpuAtStart: 22 * time.Second}, // after the window
	}}
	// The window's last scrape's next began past it; the run measured it
	// before any other began: to now.
	lastNext := run.begun[4]
	run.begun = run.begun[:4]
	kr := kminionWindow(run, marks, 3, 3, 6, 24*time.Second)
	require.Equal(t, []time.Duration{2 * time.Second, 3 * time.Second}, kr.warmup)
	require.Equal(t, []time.Duration{4 * time.Second, 5 * time.Second, 6 * time.Second}, kr.steady)
	require.Equal(t, int64(105)<<20, kr.maxRSS)
	require.Len(t, kr.scrapes, 3)
	require.NoError(t, kr.err)
	// From each steady scrape's start to the next's, the last one's to now.
	require.Equal(t, []time.Duration{5 * time.Second, 6 * time.Second, 9 * time.Second}, kr.perScrape)
	run.begun = append(run.begun, lastNext)
	require.Equal(t, []time.Duration{5 * time.Second, 6 * time.Second, 7 * time.Second}, kminionWindow(run, marks, 3, 3, 6, 24*time.Second).perScrape)

	kr = kminionWindow(run, marks, 3, 3, 7, 24*time.Second)
	require.ErrorContains(t, kr.err, "want one per (group, partition): 7")
}

// TestNoKminionWithoutTheFlag: without -kminion the report says nothing of
// kminion.
func TestNoKminionWithoutTheFlag(t *testing.T) {
	var out bytes.Buffer
	printReport(&out, options{interval: 15 * time.Second, sampling: 5 * time.Second, brokers: 3}, []*result{{}})
	require.NotContains(t, out.String(), "kminion")
}

// TestKminionReportMarksWhatWasNotWhole: a ratio over a collector that cut
// a scrape short says so; over an incomplete kminion there is none.
func TestKminionReportMarksWhatWasNotWhole(t *testing.T) {
	report := func(kr *kminionResult) string {
		var out bytes.Buffer
		r := &result{steady: []interval{{cpu: time.Second, wall: 15 * time.Second}}, kminion: kr}
		printKminionReport(&out, options{interval: 15 * time.Second, kminion: "kminion"}, []*result{r})
		return out.String()
	}
	whole := &kminionResult{steady: []time.Duration{4 * time.Second}, perScrape: []time.Duration{4 * time.Second}, wantSeries: 10, collectorLagPts: []int{10}}
	require.Contains(t, report(whole), "| 4.00x | 4.000 s (4.000 s-4.000 s), 1 | 4.00x |")

	short := *whole
	short.collectorLagPts = []int{10, 7}
	require.Contains(t, report(&short), "| 4.00x (collector cut short) | 4.000 s (4.000 s-4.000 s), 1 | 4.00x (collector cut short) |")

	incomplete := *whole
	incomplete.err = errors.New("short")
	require.Contains(t, report(&incomplete), "| kminion incomplete | 4.000 s (4.000 s-4.000 s), 1 | kminion incomplete |")
}
