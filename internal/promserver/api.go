package promserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Sample is one element of an instant query's result: a series' labels
// (__name__ included when the query keeps it) and its value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// response is the envelope of every /api/v1 answer.
type response struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

// get calls an /api/v1 endpoint and decodes its data into out. A query
// Prometheus rejects comes back as an error naming its errorType.
func (s *Server) get(ctx context.Context, path string, params url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: read: %w", path, err)
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("GET %s: HTTP %d, not an API answer: %.200s", path, resp.StatusCode, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("GET %s %v: %s: %s", path, params, r.ErrorType, r.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return fmt.Errorf("GET %s: decode data: %w", path, err)
	}
	return nil
}

// Query runs an instant query at the current time. A scalar result is one
// sample without labels.
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &vec); err != nil {
			return nil, fmt.Errorf("query %q: decode vector: %w", expr, err)
		}
		out := make([]Sample, 0, len(vec))
		for _, v := range vec {
			f, err := parseValue(v.Value[1])
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", expr, err)
			}
			out = append(out, Sample{Labels: v.Metric, Value: f})
		}
		return out, nil
	case "scalar":
		var sc [2]any
		if err := json.Unmarshal(data.Result, &sc); err != nil {
			return nil, fmt.Errorf("query %q: decode scalar: %w", expr, err)
		}
		f, err := parseValue(sc[1])
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", expr, err)
		}
		return []Sample{{Value: f}}, nil
	default:
		return nil, fmt.Errorf("query %q: result type %q, want vector or scalar", expr, data.ResultType)
	}
}

// QueryValue runs an instant query whose result is one sample and returns
// its value; ok is false when the result is empty.
func (s *Server) QueryValue(ctx context.Context, expr string) (value float64, ok bool, err error) {
	samples, err := s.Query(ctx, expr)
	if err != nil || len(samples) == 0 {
		return 0, false, err
	}
	if len(samples) > 1 {
		return 0, false, fmt.Errorf("query %q: %d samples, want one", expr, len(samples))
	}
	return samples[0].Value, true, nil
}

func parseValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	return strconv.ParseFloat(s, 64)
}

// LabelValues lists the values of label on the series matching match (all
// series when match is empty).
func (s *Server) LabelValues(ctx context.Context, label string, match ...string) ([]string, error) {
	var values []string
	err := s.get(ctx, "/api/v1/label/"+url.PathEscape(label)+"/values", url.Values{"match[]": match}, &values)
	return values, err
}

// Alert is an alert of the server's rules, pending or firing.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

// Alerts lists the alerts the server's rules have produced.
func (s *Server) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	err := s.get(ctx, "/api/v1/alerts", nil, &data)
	return data.Alerts, err
}

// RuleGroups lists the names of the rules loaded, by group.
func (s *Server) RuleGroups(ctx context.Context) (map[string][]string, error) {
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name   string `json:"name"`
				Health string `json:"health"`
				Error  string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := s.get(ctx, "/api/v1/rules", nil, &data); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			if r.Health == "err" {
				return nil, fmt.Errorf("rule %s of group %s: %s", r.Name, g.Name, r.Error)
			}
			out[g.Name] = append(out[g.Name], r.Name)
		}
	}
	return out, nil
}

// SelfMetric reads a metric of the server's own /metrics, summed over its
// series (e.g. prometheus_tsdb_head_samples_appended_total, which Prometheus
// 3 splits by sample type), without a scrape job for it.
func (s *Server) SelfMetric(ctx context.Context, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("/metrics line %q: %w", line, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("GET /metrics: %w", err)
	}
	if !found {
		return 0, fmt.Errorf("no series %s in Prometheus's /metrics", name)
	}
	return sum, nil
}
