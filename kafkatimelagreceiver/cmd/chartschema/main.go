// Command chartschema writes what the Helm chart knows of the receiver's
// configuration, so that the chart refuses at render time what the
// collector would refuse at start:
//
//   - the `receiver` property of the chart's values.schema.json: every key
//     of the receiver's configuration (read from its Go types, as the
//     collector decodes them), its type, a unit for every duration, and the
//     range of every whole number (internal/configcheck);
//   - files/receiver-durations.json: the range of every duration key
//     (internal/configcheck), which a JSON schema cannot compare and the
//     chart's templates check (templates/_receiver.tpl).
//
// Run it from the receiver's module after changing the configuration:
//
//	cd kafkatimelagreceiver && go run ./cmd/chartschema
//
// Its test fails when the chart's files are not what it writes.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	chart := flag.String("chart", "../deploy/helm/otelcol-kafkatimelag", "the chart directory")
	flag.Parse()
	if err := write(*chart); err != nil {
		fmt.Fprintln(os.Stderr, "chartschema:", err)
		os.Exit(1)
	}
}

// Paths of the generated files in the chart.
const (
	schemaFile    = "values.schema.json"
	durationsFile = "files/receiver-durations.json"
)

func write(chart string) error {
	files, err := generate(chart)
	if err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(chart, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Println("wrote", path)
	}
	return nil
}

// generate returns the chart's generated files, by name relative to the
// chart: values.schema.json as it stands with its `receiver` property
// replaced, and the durations' ranges.
func generate(chart string) (map[string][]byte, error) {
	receiver, durations, err := receiverSchema()
	if err != nil {
		return nil, err
	}
	current, err := os.ReadFile(filepath.Join(chart, schemaFile))
	if err != nil {
		return nil, err
	}
	schema, err := spliceReceiver(current, receiver)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", schemaFile, err)
	}
	ranges, err := marshal(durations, "")
	if err != nil {
		return nil, err
	}
	return map[string][]byte{schemaFile: schema, durationsFile: ranges}, nil
}

// receiverProperty is how the `receiver` property starts in
// values.schema.json: a property of the root object, indented by four.
const receiverProperty = "\n    \"receiver\": "

// spliceReceiver replaces the value of the root's `receiver` property in
// schema (the rest of the file is written by hand, and kept as it is).
func spliceReceiver(schema []byte, receiver any) ([]byte, error) {
	if n := bytes.Count(schema, []byte(receiverProperty)); n != 1 {
		return nil, fmt.Errorf("%d root properties named receiver (indented by four spaces), want 1", n)
	}
	start := bytes.Index(schema, []byte(receiverProperty)) + len(receiverProperty)
	dec := json.NewDecoder(bytes.NewReader(schema[start:]))
	var old json.RawMessage
	if err := dec.Decode(&old); err != nil {
		return nil, fmt.Errorf("the receiver property: %w", err)
	}
	end := start + int(dec.InputOffset())
	value, err := marshal(receiver, "    ")
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Write(schema[:start])
	out.Write(bytes.TrimSuffix(value, []byte("\n")))
	out.Write(schema[end:])
	if !json.Valid(out.Bytes()) {
		return nil, errors.New("the result is not JSON")
	}
	return out.Bytes(), nil
}

// marshal writes v as indented JSON with a final newline, keeping <, > and
// & as they are.
func marshal(v any, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimPrefix(buf.String(), prefix)), nil
}
