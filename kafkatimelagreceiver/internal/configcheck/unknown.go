package configcheck

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// UnknownKeys returns an error for each key of conf that no field of the
// configuration type t decodes (its mapstructure keys, squashed structs
// included), naming its path as the collector does (groups::inclde) and the
// known key nearest to it, and removes those keys from conf. The
// collector's own decoder refuses the same keys, but names the Go type and
// not the path.
func UnknownKeys(t reflect.Type, conf map[string]any) error {
	var errs []error
	unknownKeys(t, conf, "", &errs)
	return errors.Join(errs...)
}

func unknownKeys(t reflect.Type, value any, prefix string, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := value.(map[string]any)
		if !ok {
			return // a wrong type is the decoder's to report
		}
		fields := keysOf(t)
		for _, key := range slices.Sorted(maps.Keys(m)) {
			field, ok := fields[key]
			if !ok {
				field, ok = fields[strings.ToLower(key)]
			}
			if !ok {
				*errs = append(*errs, unknownKey(prefix, key, fields))
				delete(m, key)
				continue
			}
			unknownKeys(field, m[key], prefix+key+"::", errs)
		}
	case reflect.Map:
		if m, ok := value.(map[string]any); ok {
			for _, key := range slices.Sorted(maps.Keys(m)) {
				unknownKeys(t.Elem(), m[key], prefix+key+"::", errs)
			}
		}
	case reflect.Slice:
		if list, ok := value.([]any); ok {
			for i, v := range list {
				unknownKeys(t.Elem(), v, fmt.Sprintf("%s%d::", prefix, i), errs)
			}
		}
	}
}

// keysOf maps each key a struct decodes to the type of its value.
func keysOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		switch {
		case name == "-":
			continue
		case strings.Contains(opts, "squash"):
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range keysOf(ft) {
				out[k] = v
			}
			continue
		case name == "":
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// unknownKey names the key's path and, when one is a few letters apart,
// the known key meant.
func unknownKey(prefix, key string, known map[string]reflect.Type) error {
	best, bestDistance := "", len(key)/3+2
	for _, k := range slices.Sorted(maps.Keys(known)) {
		if d := editDistance(strings.ToLower(key), k); d < bestDistance {
			best, bestDistance = k, d
		}
	}
	if best != "" {
		return fmt.Errorf("%s%s: not a key of the receiver; did you mean %s%s?", prefix, key, prefix, best)
	}
	return fmt.Errorf("%s%s: not a key of the receiver (docs/configuration.md lists them)", prefix, key)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
