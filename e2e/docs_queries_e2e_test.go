//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/docqueries"
)

// queriesNotInTheDemo are the docs' queries that select only what the demo
// cannot show, with the reason (besides the series of notInTheDemo).
var queriesNotInTheDemo = map[string]string{
	"kafka_consumer_group:abandoned":                     "no demo group has been without members for abandoned_after_seconds (a day)",
	`otelcol_kafka_time_lag_requests{outcome="failure"}`: "the demo's brokers answer every request",
	"otelcol_exporter_send_failed_metric_points":         "the demo pulls (the prometheus exporter): nothing is pushed to fail",
}

// placeholder is a label value a runbook leaves to the reader: group="<group>".
var placeholder = regexp.MustCompile(`(\w+)="<[a-z_-]+>"`)

// checkDocsQueries: every PromQL expression of the README and docs/ (a
// ```promql block, or an inline span naming a series; docqueries) returns
// data from the demo's Prometheus, a placeholder label value matching any.
// A runbook whose query returns nothing fails the reader when it is needed.
func checkDocsQueries(t *testing.T, s *stack) {
	t.Helper()
	queries, err := docqueries.Read(filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	// docs/migrating.md names other exporters' series (made by the
	// migration rules, which promtool tests).
	queries = slices.DeleteFunc(queries, func(q docqueries.Query) bool { return strings.HasSuffix(q.File, "migrating.md") })
	if len(queries) < 30 {
		t.Fatalf("%d queries in the docs, want every one", len(queries))
	}
	s.eventually(t, "every query of the docs returns data", func(ctx context.Context) error {
		var empty []string
		for _, q := range queries {
			if _, skip := queriesNotInTheDemo[q.Expr]; skip {
				continue
			}
			if slices.ContainsFunc(docqueries.Names(q.Expr), func(name string) bool { _, skip := notInTheDemo[name]; return skip }) {
				continue
			}
			expr := placeholder.ReplaceAllString(q.Expr, `$1=~".+"`)
			samples, err := s.prom.Query(ctx, expr)
			switch {
			case err != nil:
				empty = append(empty, fmt.Sprintf("%s: %v", q, err))
			case len(samples) == 0:
				empty = append(empty, q.String())
			}
		}
		if len(empty) > 0 {
			return fmt.Errorf("queries that fail or return nothing:\n%s", strings.Join(empty, "\n"))
		}
		return nil
	})
}
