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
