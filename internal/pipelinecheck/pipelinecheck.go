// Package pipelinecheck checks a collector configuration for what breaks
// the receiver's measured memory bound: with sending_queue.wait_for_result
// on an exporter, the receiver holds one chunk of a large scrape at a time
// because each push returns only once that chunk is exported. A processor
// that returns before its consumer does (batch enqueues and returns nil)
// puts every chunk of the scrape in memory at once, and the exporter's
// errors never reach the receiver, which then counts nothing as refused.
package pipelinecheck

import (
	"fmt"
	"slices"
	"strings"
)

// synchronous lists the processors that hand the data on in the caller's
// goroutine and return their consumer's result (or refuse the data
// themselves): they keep the bound.
var synchronous = []string{
	"memory_limiter", "resource", "attributes", "filter", "transform",
	"metricstransform", "resourcedetection", "k8sattributes", "cumulativetodelta",
}

// Check returns an error naming each metrics pipeline where a processor
// that is not known to pass the exporter's result back stands between a
// kafka_time_lag receiver and an exporter with wait_for_result. conf is the
// whole collector configuration as decoded YAML.
func Check(conf map[string]any) error {
	exporters, _ := conf["exporters"].(map[string]any)
	service, _ := conf["service"].(map[string]any)
	pipelines, _ := service["pipelines"].(map[string]any)
	var problems []string
	for name, p := range pipelines {
		pipeline, _ := p.(map[string]any)
		if !strings.HasPrefix(name, "metrics") || !slices.ContainsFunc(names(pipeline["receivers"]), isType("kafka_time_lag")) {
			continue
		}
		waiting := slices.ContainsFunc(names(pipeline["exporters"]), func(id string) bool {
			exporter, _ := exporters[id].(map[string]any)
			queue, _ := exporter["sending_queue"].(map[string]any)
			return queue["wait_for_result"] == true
		})
		if !waiting {
			continue
		}
		for _, processor := range names(pipeline["processors"]) {
			if !slices.ContainsFunc(synchronous, func(t string) bool { return isType(t)(processor) }) {
				problems = append(problems, fmt.Sprintf("pipeline %s: processor %s stands between the kafka_time_lag receiver and an exporter with sending_queue.wait_for_result, and is not known to pass the exporter's result back (batch returns at once: every chunk of a scrape is held, export errors are lost)", name, processor))
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func names(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// isType matches a component id (type or type/name) against a type.
func isType(componentType string) func(string) bool {
	return func(id string) bool {
		t, _, _ := strings.Cut(id, "/")
		return t == componentType
	}
}
