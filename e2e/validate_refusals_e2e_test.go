//go:build e2e

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateRefusesBadValues runs the built collector's `validate` on
// configurations that each break one key of the receiver, as a user would
// write them (with brokers, but for the row about them): each is refused
// (non-zero exit) with the key in the message.
// The first rows are values that would pass a check of their type alone
// and then fail or mislead at run time.
func TestValidateRefusesBadValues(t *testing.T) {
	bin := os.Getenv("OTELCOL_BIN")
	if bin == "" {
		t.Fatal("OTELCOL_BIN is not set; run `make e2e`, which builds the collector and sets it")
	}
	for _, tc := range []struct {
		name     string
		receiver string // the keys of receivers::kafka_time_lag, in one line
		want     string
		// what the message must not say: keys the user did not write, the
		// decoder's Go types
		notWant []string
	}{
		{"unitless collection_interval", "collection_interval: 30", "collection_interval: 30 was read as 30ns; write 30s", []string{"sampling_interval"}},
		{"misspelt key", "colection_interval: 30s", "colection_interval: not a key of the receiver; did you mean collection_interval?", []string{"decoding failed", "kafkatimelagreceiver.Config"}},
		{"misspelt nested key", "groups: {inclde: [payments]}", "groups::inclde: not a key of the receiver; did you mean groups::include?", []string{"decoding failed"}},
		{"misspelt SASL key", "auth: {sasl: {mechanism: PLAIN, usrname: u, password: p}}", "auth::sasl::usrname: not a key of the receiver; did you mean auth::sasl::username?", []string{"decoding failed", "SASLConfig"}},
		{"unitless timeout", "timeout: 5", "timeout: 5 was read as 5ns; write 5s", nil},
		{"metadata refresh every millisecond", "metadata: {refresh_interval: 1ms}", "metadata::refresh_interval: must be at least 10s, got 1ms", nil},
		{"storage saved every nanosecond", "storage: file_storage, storage_interval: 1ns", "storage_interval: 1 was read as 1ns; write 1s", nil},
		{"broker without port", "brokers: [localhost]", `brokers::0: "localhost" has no port`, nil},
		{"timeout of a nanosecond", "timeout: 1ns", "timeout: 1 was read as 1ns; write 1s", nil},
		{"protocol_version too old", "protocol_version: 0.8.0", "protocol_version: must be 1.1.0 or later", nil},
		{"status window wrapping in 32 bits", "status: {window: 4294967297}", "status::window: must be between 2 and 10000, got 4294967297", nil},
		{"coordination partitions wrapping in 32 bits", "coordination: {group_id: lag, topic_partitions: 4294967297}", "coordination::topic_partitions: must be between 1 and 10000, got 4294967297", nil},
		{"unitless status max_time_lag", "status: {max_time_lag: 300}", "status::max_time_lag: 300 was read as 300ns; write 300s", nil},
		{"unitless dial_timeout", "dial_timeout: 10", "dial_timeout: 10 was read as 10ns; write 10s", nil},
		{"unitless metadata retry backoff", "metadata: {retry: {backoff: 250}}", "metadata::retry::backoff: 250 was read as 250ns; write 250ms", nil},
		// Brokers have no default; a list belongs in a list.
		{"no brokers", "cluster_alias: prod", "brokers: must list at least one broker, such as [kafka-1:9092, kafka-2:9092]; there is no default", nil},
		{"brokers comma-joined in one entry", `brokers: ["kafka-1:9092,kafka-2:9092"]`, `brokers::0: "kafka-1:9092,kafka-2:9092" is several addresses in one entry; list each on its own: [kafka-1:9092, kafka-2:9092]`, nil},
		{"sampling longer than collection", "collection_interval: 30s, sampling_interval: 1m", "sampling_interval: 1m is longer than collection_interval (30s): every scrape already adds a point to the tables; set it to at most 30s", nil},
		{"unitless storage_interval, storage not on", "storage_interval: 60", "storage_interval: 60 was read as 60ns; write 60s", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			receiver := tc.receiver
			if tc.name != "no brokers" && !strings.Contains(receiver, "brokers:") {
				receiver = "brokers: [kafka-1:9092], " + receiver
			}
			config := strings.Join([]string{
				"receivers:",
				"  kafka_time_lag: {" + receiver + "}",
				"exporters:",
				"  debug:",
				"extensions:",
				"  file_storage:",
				"    directory: " + dir,
				"service:",
				"  extensions: [file_storage]",
				"  pipelines:",
				"    metrics:",
				"      receivers: [kafka_time_lag]",
				"      exporters: [debug]",
				"",
			}, "\n")
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "validate", "--config="+path).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("validate accepted %q (err %v):\n%s", tc.receiver, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("validate refused %q without saying %q:\n%s", tc.receiver, tc.want, out)
			}
			for _, not := range tc.notWant {
				if strings.Contains(string(out), not) {
					t.Fatalf("validate refused %q saying %q:\n%s", tc.receiver, not, out)
				}
			}
			t.Logf("exit %d: %s", exit.ExitCode(), strings.TrimSpace(string(out)))
		})
	}
}
