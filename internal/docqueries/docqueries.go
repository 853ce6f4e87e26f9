// Package docqueries reads the PromQL a user is told to run in the docs:
// each ```promql block, and each inline code span that names a series of
// the receiver, its rules or the collector (kafka_consumer_group…,
// kafka_share_group…, kafka_partition…, kafka_topic…, kafka_timelag:…,
// otelcol_…), so that tests can check that every name exists and every
// query returns data against the demo.
package docqueries

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/docblocks"
)

// Query is one expression of the docs.
type Query struct {
	File string
	Line int // 1-based
	Expr string
}

func (q Query) String() string { return fmt.Sprintf("%s:%d: %s", q.File, q.Line, q.Expr) }

var (
	fence      = regexp.MustCompile("^\\s*```(\\w*)")
	inlineCode = regexp.MustCompile("`([^`]+)`")
	family     = regexp.MustCompile(`[a-z_:]\*|\.\.\.`)
	seriesName = regexp.MustCompile(`\b(kafka_consumer_group|kafka_share_group|kafka_partition_|kafka_topic_|kafka_timelag:|otelcol_)`)
)

// Read returns the queries of the files the glob patterns match, in order.
func Read(patterns ...string) ([]Query, error) {
	var out []Query
	err := docblocks.EachFile(patterns, func(file, text string) { out = append(out, parse(file, text)...) })
	return out, err
}

func parse(file, text string) []Query {
	var out []Query
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if m := fence.FindStringSubmatch(lines[i]); m != nil {
			start := i
			var body []string
			for i++; i < len(lines) && fence.FindStringSubmatch(lines[i]) == nil; i++ {
				body = append(body, lines[i])
			}
			if m[1] == "promql" {
				out = append(out, Query{File: file, Line: start + 1, Expr: strings.TrimSpace(strings.Join(body, "\n"))})
			}
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(lines[i], -1) {
			// kafka_consumer_group_* names a family, not a query
			if seriesName.MatchString(m[1]) && !family.MatchString(m[1]) {
				out = append(out, Query{File: file, Line: i + 1, Expr: m[1]})
			}
		}
	}
	return out
}

var (
	quoted   = regexp.MustCompile(`"(\\.|[^"\\])*"|'(\\.|[^'\\])*'`)
	matchers = regexp.MustCompile(`\{[^}]*\}`)
	grouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	ranges   = regexp.MustCompile(`\[[^\]]*\]`)
	ident    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	keywords = []string{"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "inf", "nan", "atan2"}
)

// Names returns the series names an expression selects: its identifiers
// other than functions, keywords and label names.
func Names(expr string) []string {
	s := quoted.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, "")
	s = grouping.ReplaceAllString(s, "")
	s = ranges.ReplaceAllString(s, "")
	var names []string
	for _, m := range ident.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || slices.Contains(keywords, strings.ToLower(m)) || slices.Contains(names, m) {
			continue
		}
		names = append(names, m)
	}
	return names
}
