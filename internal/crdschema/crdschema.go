// Package crdschema checks a decoded manifest against a CustomResource
// definition's structural OpenAPI v3 schema, the way the API server prunes
// and validates it: a field the schema does not name is an error (unless
// the schema preserves unknown fields there), as are a wrong type, a
// missing required field and a value outside an enum. It covers what
// structural CRD schemas use (properties, additionalProperties, items,
// type, required, enum, x-kubernetes-int-or-string,
// x-kubernetes-preserve-unknown-fields), not formats or patterns.
package crdschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Schema is a node of an OpenAPI v3 schema.
type Schema struct {
	Type                 string             `json:"type"`
	Properties           map[string]*Schema `json:"properties"`
	AdditionalProperties *Schema            `json:"additionalProperties"`
	Items                *Schema            `json:"items"`
	Required             []string           `json:"required"`
	Enum                 []any              `json:"enum"`
	IntOrString          bool               `json:"x-kubernetes-int-or-string"`
	PreserveUnknown      bool               `json:"x-kubernetes-preserve-unknown-fields"`
}

// Validate returns every violation of schema by value (as decoded from
// JSON or YAML into any), each naming its path.
func Validate(schema *Schema, value any) error {
	var problems []string
	// The API server validates metadata as ObjectMeta, whatever the CRD's
	// schema says of it (usually just type: object).
	if obj, ok := value.(map[string]any); ok {
		value = without(obj, "metadata")
	}
	walk(schema, value, "", &problems)
	sort.Strings(problems)
	return errors.Join(toErrors(problems)...)
}

func toErrors(problems []string) []error {
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = errors.New(p)
	}
	return errs
}

func walk(s *Schema, v any, path string, problems *[]string) {
	if s == nil || v == nil {
		return
	}
	at := path
	if at == "" {
		at = "."
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		*problems = append(*problems, fmt.Sprintf("%s: %v is not one of %v", at, v, s.Enum))
	}
	if s.IntOrString {
		switch v.(type) {
		case string, float64, int, int64, json.Number:
		default:
			*problems = append(*problems, fmt.Sprintf("%s: want an integer or a string, got %T", at, v))
		}
		return
	}
	switch s.Type {
	case "object", "":
		obj, ok := v.(map[string]any)
		if !ok {
			if s.Type == "object" {
				*problems = append(*problems, fmt.Sprintf("%s: want an object, got %T", at, v))
			}
			return
		}
		for _, name := range s.Required {
			if _, ok := obj[name]; !ok {
				*problems = append(*problems, fmt.Sprintf("%s: required field %q missing", at, name))
			}
		}
		for name, child := range obj {
			childPath := path + "." + name
			switch {
			case s.Properties[name] != nil:
				walk(s.Properties[name], child, childPath, problems)
			case s.AdditionalProperties != nil:
				walk(s.AdditionalProperties, child, childPath, problems)
			case s.PreserveUnknown:
			default:
				*problems = append(*problems, fmt.Sprintf("%s: unknown field (known: %s)", childPath, strings.Join(keys(s.Properties), ", ")))
			}
		}
	case "array":
		list, ok := v.([]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: want an array, got %T", at, v))
			return
		}
		for i, item := range list {
			walk(s.Items, item, fmt.Sprintf("%s[%d]", path, i), problems)
		}
	case "string":
		if _, ok := v.(string); !ok {
			*problems = append(*problems, fmt.Sprintf("%s: want a string, got %T", at, v))
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			*problems = append(*problems, fmt.Sprintf("%s: want an integer, got %v", at, v))
		}
	case "number":
		if _, ok := v.(float64); !ok {
			*problems = append(*problems, fmt.Sprintf("%s: want a number, got %T", at, v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			*problems = append(*problems, fmt.Sprintf("%s: want a boolean, got %T", at, v))
		}
	}
}

func without(obj map[string]any, key string) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func keys(m map[string]*Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
