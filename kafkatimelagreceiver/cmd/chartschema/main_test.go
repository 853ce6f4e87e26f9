package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/configcheck"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconfig"
)

const chart = "../../../deploy/helm/otelcol-kafkatimelag"

// TestChartFilesAreGenerated: the chart's values.schema.json and
// files/receiver-durations.json are what this command writes from the
// receiver's configuration as it is, so that a key added, renamed or given
// another range reaches the chart's render-time checks.
func TestChartFilesAreGenerated(t *testing.T) {
	files, err := generate(chart)
	require.NoError(t, err)
	require.Len(t, files, 2)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(chart, name))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got),
			"%s is not what the receiver's configuration gives: run `cd kafkatimelagreceiver && go run ./cmd/chartschema` and commit the result", name)
	}
}

// TestReceiverSchema: what the schema says of a few keys, as the receiver
// checks them.
func TestReceiverSchema(t *testing.T) {
	root, durations, err := receiverSchema()
	require.NoError(t, err)
	data, err := json.Marshal(root)
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(data, &schema))
	prop := func(path ...string) map[string]any {
		t.Helper()
		n := schema
		for _, p := range path {
			require.Equal(t, false, n["additionalProperties"], "%v refuses unknown keys", path)
			next, ok := n["properties"].(map[string]any)[p].(map[string]any)
			require.True(t, ok, "no property %s in %v", p, path)
			n = next
		}
		return n
	}

	interval := prop("collection_interval")
	require.Equal(t, []any{"string", "integer"}, interval["type"], "a number is refused by the chart's template, naming the unit it needs")
	require.Equal(t, durationPattern, interval["pattern"])
	require.Equal(t, durationRange{Min: 1e9, Max: 3600e9, Range: "between 1s and 1h"}, durations["collection_interval"])
	require.Equal(t, durationRange{Min: 1e9, ZeroMeans: "off", Range: "0 (off) or at least 1s"}, durations["status::max_time_lag"])
	require.Equal(t, durationRange{}, durations["tls::reload_interval"], "no range: listed for its unit only")

	samples := prop("max_samples")
	require.Equal(t, "integer", samples["type"])
	require.EqualValues(t, 2, samples["minimum"])
	require.EqualValues(t, 10000, samples["maximum"])
	reads := prop("max_record_reads_per_scrape")
	require.EqualValues(t, 0, reads["minimum"])
	require.NotContains(t, reads, "maximum", "no ceiling")
	rf := prop("coordination", "topic_replication_factor")
	require.Equal(t, []any{map[string]any{"const": float64(-1)}, map[string]any{"minimum": float64(1), "maximum": float64(32767)}}, rf["anyOf"])

	require.Equal(t, "string", prop("tls", "ca_file")["type"], "the squashed configtls keys")
	require.Equal(t, "string", prop("storage")["type"], "a component ID")
	require.Equal(t, "boolean", prop("metrics", "kafka.consumer_group.time_lag", "enabled")["type"])
	require.Equal(t, "array", prop("brokers")["type"])
	require.Equal(t, configcheck.BrokerPattern, prop("brokers")["items"].(map[string]any)["pattern"])
	require.Equal(t, []any{"time_index", "record_reads"}, prop("timestamp_source")["enum"])
	require.Equal(t, saramaconfig.VersionPattern, prop("protocol_version")["pattern"])
	require.Regexp(t, prop("auth", "sasl", "mechanism")["pattern"], "scram-sha-512", "any case, as the receiver reads it")
	require.NotRegexp(t, prop("auth", "sasl", "mechanism")["pattern"], "SCRAM-SHA512")
	require.Equal(t, true, prop("metrics", "kafka.consumer_group.lag", "attributes")["uniqueItems"])
}

// TestChartBrokersAreTheReceiversBrokers: the chart's kafka.brokers, written
// by hand, holds each entry to the pattern of the receiver's brokers.
func TestChartBrokersAreTheReceiversBrokers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chart, schemaFile))
	require.NoError(t, err)
	var schema struct {
		Properties struct {
			Kafka struct {
				Properties struct {
					Brokers struct {
						Items struct {
							Pattern string `json:"pattern"`
						} `json:"items"`
					} `json:"brokers"`
				} `json:"properties"`
			} `json:"kafka"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(data, &schema))
	require.Equal(t, configcheck.BrokerPattern, schema.Properties.Kafka.Properties.Brokers.Items.Pattern)
}

func TestSpliceReceiverKeepsTheRest(t *testing.T) {
	in := []byte("{\n  \"properties\": {\n    \"a\": {\"type\": \"string\"},\n    \"receiver\": {\n      \"type\": \"object\"\n    },\n    \"z\": 1\n  }\n}\n")
	out, err := spliceReceiver(in, &node{Type: "object", AdditionalProperties: false})
	require.NoError(t, err)
	require.Equal(t, "{\n  \"properties\": {\n    \"a\": {\"type\": \"string\"},\n    \"receiver\": {\n      \"type\": \"object\",\n      \"additionalProperties\": false\n    },\n    \"z\": 1\n  }\n}\n", string(out))

	_, err = spliceReceiver([]byte(`{"properties": {}}`), &node{})
	require.ErrorContains(t, err, "0 root properties named receiver")
}
