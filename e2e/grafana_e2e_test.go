//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Grafana dashboard (deploy/grafana/kafka-timelag.json), checked against
// the real Prometheus of TestPrometheusEndToEnd: every template variable's
// query returns values (the cluster variable the demo's alias), and every
// panel query runs without error and returns data, except the panels the
// demo cannot exercise (dashboardPanelsNotInTheDemo).

var dashboardPanelsNotInTheDemo = map[string]string{
	"Messages lost to retention": "the demo's topics keep every record: no retention loss",
}

// rateInterval stands in for Grafana's $__rate_interval: at least four
// scrapes of the test's 2 s interval.
const rateInterval = "30s"

type dashboard struct {
	Panels     []dashboardPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

type dashboardPanel struct {
	Title      string `json:"title"`
	Type       string `json:"type"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // a collapsed row's panels
}

// flatten lists the panels, those inside rows included, without the rows.
func flatten(ps []dashboardPanel) []dashboardPanel {
	var out []dashboardPanel
	for _, p := range ps {
		if p.Type == "row" {
			out = append(out, flatten(p.Panels)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

func checkDashboard(t *testing.T, s *stack) {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(repoRoot, "deploy", "grafana", "kafka-timelag.json"))), &d); err != nil {
		t.Fatalf("deploy/grafana/kafka-timelag.json: %v", err)
	}
	panels := flatten(d.Panels)
	for title := range dashboardPanelsNotInTheDemo {
		if !slices.ContainsFunc(panels, func(p dashboardPanel) bool { return p.Title == title }) {
			t.Fatalf("dashboardPanelsNotInTheDemo names panel %q, which the dashboard does not have", title)
		}
	}

	// Variables: the cluster is the demo's alias; every multi-value variable
	// is then "All" (its allValue), as a person opening the dashboard sees it.
	values := map[string]string{"__rate_interval": rateInterval}
	var queries [][2]string // name, definition
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			continue
		case "query":
			queries = append(queries, [2]string{v.Name, v.Definition})
			values[v.Name] = v.AllValue
		default:
			t.Fatalf("dashboard variable %s: type %s is not checked here", v.Name, v.Type)
		}
	}
	if _, ok := values["cluster"]; !ok {
		t.Fatal("the dashboard has no cluster variable")
	}
	values["cluster"] = "demo"

	s.eventually(t, "dashboard variables", func(ctx context.Context) error {
		for _, q := range queries {
			m := labelValuesQuery.FindStringSubmatch(q[1])
			if m == nil {
				return fmt.Errorf("variable %s: %q is not label_values(selector, label)", q[0], q[1])
			}
			got, err := s.prom.LabelValues(ctx, m[2], substitute(m[1], values))
			if err != nil {
				return fmt.Errorf("variable %s: %w", q[0], err)
			}
			if len(got) == 0 {
				return fmt.Errorf("variable %s (%s): no values", q[0], q[1])
			}
			if q[0] == "cluster" && !slices.Contains(got, "demo") {
				return fmt.Errorf("variable cluster: %v, want the demo's alias demo", got)
			}
		}
		return nil
	})

	queried := 0
	for _, p := range panels {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %q, want the dashboard's ${datasource} variable", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			expr := substitute(target.Expr, values)
			_, exempt := dashboardPanelsNotInTheDemo[p.Title]
			s.eventually(t, fmt.Sprintf("panel %q query %s", p.Title, target.RefID), func(ctx context.Context) error {
				samples, err := s.prom.Query(ctx, expr)
				if err != nil {
					// A query error does not go away: fail at once.
					t.Fatalf("panel %q query %s: %s: %v", p.Title, target.RefID, expr, err)
				}
				if len(samples) == 0 && !exempt {
					return fmt.Errorf("%s: empty result", expr)
				}
				return nil
			})
			queried++
		}
	}
	t.Logf("dashboard: %d panels, %d queries run against Prometheus", len(panels), queried)
}

// substitute replaces Grafana's $name and ${name} references by values.
func substitute(expr string, values map[string]string) string {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	// Longest first: $group must not eat part of $group_name.
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	for _, name := range names {
		expr = strings.ReplaceAll(expr, "${"+name+"}", values[name])
		expr = strings.ReplaceAll(expr, "$"+name, values[name])
	}
	return expr
}
