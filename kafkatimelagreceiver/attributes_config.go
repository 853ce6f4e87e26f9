package kafkatimelagreceiver

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// validateAttributeLists refuses a metric's `attributes` that names one
// attribute twice: the writer tells a metric that keeps all its attributes
// by the list's length, and mdatagen does not check for repeats.
func validateAttributeLists(metrics metadata.MetricsConfig) []error {
	var errs []error
	v := reflect.ValueOf(metrics)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("mapstructure"), ",")
		list := v.Field(i).FieldByName("EnabledAttributes")
		if !list.IsValid() {
			continue
		}
		seen := map[string]bool{}
		for j := range list.Len() {
			attr := list.Index(j).String()
			if seen[attr] {
				errs = append(errs, fmt.Errorf("metrics::%s::attributes: %q is listed twice", name, attr))
				break
			}
			seen[attr] = true
		}
	}
	return errs
}

// validateCoordinatedAttributes refuses, under coordination, a metric whose
// attributes no longer include `group`, or `topic` where its topic's
// replica writes it, while the replicas' series carry no
// kafka.time_lag.replica: each replica would write the same series (a sum
// or maximum over its own groups or topics only), so the series would have
// several writers with different values.
func validateCoordinatedAttributes(cfg *Config) []error {
	if !cfg.Coordination.enabled() || cfg.ResourceAttributes.KafkaTimeLagReplica.Enabled {
		return nil
	}
	var errs []error
	v, defaults := reflect.ValueOf(cfg.Metrics), reflect.ValueOf(metadata.DefaultMetricsConfig())
	for i := range v.NumField() {
		list := v.Field(i).FieldByName("EnabledAttributes")
		if !list.IsValid() || !v.Field(i).FieldByName("Enabled").Bool() ||
			!hasAttribute(defaults.Field(i).FieldByName("EnabledAttributes"), "group") || hasAttribute(list, "group") {
			continue
		}
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("mapstructure"), ",")
		errs = append(errs, fmt.Errorf(`metrics::%s::attributes: without "group", every coordinated replica (coordination::group_id is set) would write the same series from its own groups only; keep "group", or turn on resource_attributes::kafka.time_lag.replica so that each replica's series stay apart`, name))
	}
	for i := range v.NumField() {
		list := v.Field(i).FieldByName("EnabledAttributes")
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("mapstructure"), ",")
		if !list.IsValid() || !v.Field(i).FieldByName("Enabled").Bool() || writtenByTheGroupsReplica(name) ||
			!hasAttribute(defaults.Field(i).FieldByName("EnabledAttributes"), "topic") || hasAttribute(list, "topic") {
			continue
		}
		if hasAttribute(defaults.Field(i).FieldByName("EnabledAttributes"), "group") && !hasAttribute(list, "group") {
			continue // refused above
		}
		errs = append(errs, fmt.Errorf(`metrics::%s::attributes: without "topic", every coordinated replica (coordination::group_id is set) would write the same series from its own topics only; keep "topic", or turn on resource_attributes::kafka.time_lag.replica so that each replica's series stay apart`, name))
	}
	return errs
}

// writtenByTheGroupsReplica tells the metrics with a topic that one
// replica writes for a whole group under coordination (ownership: the
// owner of its home topic, or of a share group's id): dropping their topic
// leaves one writer.
func writtenByTheGroupsReplica(metric string) bool {
	return strings.HasPrefix(metric, "kafka.share_group.") ||
		metric == "kafka.consumer_group.partition_owner" || metric == "kafka.consumer_group.partition_status"
}

func hasAttribute(list reflect.Value, attr string) bool {
	for j := range list.Len() {
		if list.Index(j).String() == attr {
			return true
		}
	}
	return false
}
