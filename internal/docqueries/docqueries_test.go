package docqueries

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const repoRoot = "../.."

// DocFiles are the files whose queries are checked: the README and
// docs/, but docs/migrating.md, whose names are other exporters' series
// (made by deploy/prometheus/migration-rules.yml and checked by its
// promtool tests).
func docFiles(t *testing.T) []Query {
	t.Helper()
	queries, err := Read(filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	return slices.DeleteFunc(queries, func(q Query) bool { return strings.HasSuffix(q.File, "migrating.md") })
}

// otherTelemetry are series of the collector itself the docs name beside
// the receiver's (docs/metrics.md lists the receiver's own); e2e queries
// them against the demo.
var otherTelemetry = []string{"otelcol_exporter_send_failed_metric_points"}

// TestDocsQueriesNameSeriesThatExist: every series a query of the docs
// selects is one docs/metrics.md lists (the series the receiver writes),
// a recording rule of deploy/prometheus/kafka-timelag-rules.yml, or the
// collector's own telemetry: a runbook that names a series that does not
// exist returns nothing when it is needed.
func TestDocsQueriesNameSeriesThatExist(t *testing.T) {
	known := map[string]bool{}
	metrics, err := os.ReadFile(filepath.Join(repoRoot, "docs", "metrics.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(metrics), "<!-- prometheus-series:")
	require.True(t, ok, "docs/metrics.md: no prometheus-series table")
	table, _, _ = strings.Cut(table, "<!-- /prometheus-series -->")
	for _, line := range strings.Split(table, "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 {
			for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
				known[m[1]] = true
			}
		}
	}
	require.Greater(t, len(known), 20, "the series table of docs/metrics.md")
	rules, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "prometheus", "kafka-timelag-rules.yml"))
	require.NoError(t, err)
	for _, m := range regexp.MustCompile(`(?m)^\s*- record: (\S+)`).FindAllStringSubmatch(string(rules), -1) {
		known[m[1]] = true
	}
	for _, name := range otherTelemetry {
		known[name] = true
	}

	queries := docFiles(t)
	require.Greater(t, len(queries), 30, "queries in the docs")
	var unknown []string
	for _, q := range queries {
		names := Names(q.Expr)
		require.NotEmpty(t, names, "%s selects no series", q)
		for _, name := range names {
			if !known[name] {
				unknown = append(unknown, fmt.Sprintf("%s: no series %s", q, name))
			}
		}
	}
	require.Empty(t, unknown, "docs/metrics.md lists the series; the rules file the recorded ones")
}

func TestNames(t *testing.T) {
	for expr, want := range map[string][]string{
		"kafka_consumer_group_lag": {"kafka_consumer_group_lag"},
		`topk(5, kafka_consumer_group_time_lag_seconds{group="<group>", topic="a"})`: {"kafka_consumer_group_time_lag_seconds"},
		"topk(10,\n  kafka_consumer_group_time_lag_seconds\n  * on (kafka_cluster_alias, group, topic, partition) group_left (member, host)\n  kafka_consumer_group_partition_owner)": {
			"kafka_consumer_group_time_lag_seconds", "kafka_consumer_group_partition_owner"},
		`sum by (topic) (rate(otelcol_kafka_time_lag_requests{outcome="failure"}[5m])) > 0 and kafka_timelag:scrape_job`: {
			"otelcol_kafka_time_lag_requests", "kafka_timelag:scrape_job"},
		"kafka_partition_current_offset - on (kafka_cluster_alias, topic, partition) group_right kafka_consumer_group_lag": {"kafka_partition_current_offset", "kafka_consumer_group_lag"},
	} {
		require.Equal(t, want, Names(expr), expr)
	}
}

func TestParse(t *testing.T) {
	doc := "Compare `kafka_consumer_group_consume_rate_per_second` with `kafka_cluster_alias`\n" +
		"and `receivers.kafka_time_lag`.\n\n```promql\nsum(kafka_partition_produce_rate_per_second)\n```\n\n" +
		"```yaml\nexpr: kafka_consumer_group_lag\n```\n"
	require.Equal(t, []Query{
		{File: "f.md", Line: 1, Expr: "kafka_consumer_group_consume_rate_per_second"},
		{File: "f.md", Line: 4, Expr: "sum(kafka_partition_produce_rate_per_second)"},
	}, parse("f.md", doc))
}
