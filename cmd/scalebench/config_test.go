//go:build !unit

package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTimestampSourceFlag: -timestamp-source sets the receiver's key, under
// the receiver beside the keys a path adds; unset, the key is left out and
// the receiver's default applies; a value the receiver would refuse is
// refused before any cluster is loaded.
func TestTimestampSourceFlag(t *testing.T) {
	parse := func(args ...string) (options, error) {
		var o options
		fs := flag.NewFlagSet("scalebench", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		registerTimestampSource(fs, &o.timestampSource)
		return o, fs.Parse(args)
	}
	o, err := parse("-timestamp-source", "time_index")
	require.NoError(t, err)
	cfg := collectorConfig([]string{"127.0.0.1:9092"}, o, "    cluster_alias: bench\n", "otlp_http", "    endpoint: http://127.0.0.1:1")
	require.Contains(t, cfg, "  kafka_time_lag:\n    brokers: [\"127.0.0.1:9092\"]\n    timestamp_source: time_index\n    cluster_alias: bench\n")

	o, err = parse()
	require.NoError(t, err)
	require.NotContains(t, collectorConfig([]string{"127.0.0.1:9092"}, o, "", "otlp_http", ""), "timestamp_source")

	_, err = parse("-timestamp-source", "index")
	require.ErrorContains(t, err, `"index": want record_reads or time_index`)
}
