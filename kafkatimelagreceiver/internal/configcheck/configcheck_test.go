package configcheck_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/configcheck"
)

func TestDuration(t *testing.T) {
	interval := configcheck.Duration{Key: "collection_interval", Min: time.Second, Max: time.Hour}
	timeout := configcheck.Duration{Key: "timeout", Zero: "the default", Min: time.Second, Max: 10 * time.Minute}
	backoff := configcheck.Duration{Key: "metadata::retry::backoff", Zero: "no wait", Min: time.Millisecond, Max: time.Minute}
	noCeiling := configcheck.Duration{Key: "conn_idle_timeout", Min: time.Second}
	for _, tc := range []struct {
		d    configcheck.Duration
		got  time.Duration
		want string // "" accepted
	}{
		{interval, time.Second, ""},
		{interval, time.Hour, ""},
		{interval, 30 * time.Second, ""},
		{interval, 30, "collection_interval: 30 was read as 30ns; write 30s (a duration without a unit is in nanoseconds; between 1s and 1h)"},
		{interval, 999 * time.Millisecond, "collection_interval: must be between 1s and 1h, got 999ms"},
		{interval, 0, "collection_interval: must be between 1s and 1h, got 0s"},
		{interval, -time.Second, "collection_interval: must be between 1s and 1h, got -1s"},
		{interval, 90 * time.Minute, "collection_interval: must be between 1s and 1h, got 1h30m"},
		{timeout, 0, ""},
		{timeout, 1, "timeout: 1 was read as 1ns; write 1s (a duration without a unit is in nanoseconds; 0 (the default) or between 1s and 10m)"},
		// 5000 s is beyond the ceiling: the unit that fits is suggested.
		{timeout, 5000, "timeout: 5000 was read as 5µs; write 5000ms"},
		{timeout, -time.Second, "timeout: must be 0 (the default) or between 1s and 10m, got -1s"},
		{backoff, 0, ""},
		{backoff, 250, "metadata::retry::backoff: 250 was read as 250ns; write 250ms"},
		{noCeiling, 540, "conn_idle_timeout: 540 was read as 540ns; write 540s (a duration without a unit is in nanoseconds; at least 1s)"},
		{noCeiling, 1000 * time.Hour, ""},
		// No unit fits: the message still says what was read.
		{configcheck.Duration{Key: "k", Min: time.Hour, Max: 2 * time.Hour}, 5, "k: 5 was read as 5ns; write it with a unit, such as s or m"},
	} {
		err := tc.d.Check(tc.got)
		if tc.want == "" {
			require.NoError(t, err, "%s %d", tc.d.Key, tc.got)
			continue
		}
		require.ErrorContains(t, err, tc.want)
		require.True(t, strings.HasPrefix(err.Error(), tc.d.Key+": "), "the error starts with its key: %v", err)
	}
}

func TestInt(t *testing.T) {
	window := configcheck.Int{Key: "status::window", Min: 2, Max: 10000}
	rf := configcheck.Int{Key: "coordination::topic_replication_factor", Or: -1, OrMeans: "the brokers' default", Min: 1, Max: 32767}
	reads := configcheck.Int{Key: "max_record_reads_per_scrape", Min: 0}
	require.NoError(t, window.Check(2))
	require.NoError(t, window.Check(10000))
	require.EqualError(t, window.Check(4294967297), "status::window: must be between 2 and 10000, got 4294967297")
	require.EqualError(t, window.Check(1), "status::window: must be between 2 and 10000, got 1")
	require.NoError(t, rf.Check(-1))
	require.NoError(t, rf.Check(3))
	require.EqualError(t, rf.Check(0), "coordination::topic_replication_factor: must be -1 (the brokers' default) or between 1 and 32767, got 0")
	require.EqualError(t, rf.Check(65539), "coordination::topic_replication_factor: must be -1 (the brokers' default) or between 1 and 32767, got 65539")
	require.NoError(t, reads.Check(0))
	require.NoError(t, reads.Check(1<<40))
	require.EqualError(t, reads.Check(-1), "max_record_reads_per_scrape: must be at least 0, got -1")
}

func TestBroker(t *testing.T) {
	for address, want := range map[string]string{
		"kafka-1:9092":       "",
		"10.0.0.1:9093":      "",
		"[::1]:9092":         "",
		"localhost":          `brokers::0: "localhost" has no port; write host:port, such as localhost:9092`,
		"[::1]":              `brokers::0: "[::1]" has no port; write host:port, such as [::1]:9092`,
		"::1":                `brokers::0: "::1" is not host:port (an IPv6 address is written [::1]:9092)`,
		":9092":              `brokers::0: ":9092" has no host; write host:port, such as kafka-1:9092`,
		"kafka:":             `brokers::0: "kafka:": the port must be a number from 1 to 65535`,
		"kafka:0":            `brokers::0: "kafka:0": the port must be a number from 1 to 65535`,
		"kafka:65536":        `brokers::0: "kafka:65536": the port must be a number from 1 to 65535`,
		"kafka:ninety":       `brokers::0: "kafka:ninety": the port must be a number from 1 to 65535`,
		"kafka 1:9092":       `brokers::0: "kafka 1:9092": the host must not contain spaces`,
		"":                   "brokers::0: must not be empty",
		"kafka-1:9092,k2:90": `brokers::0: "kafka-1:9092,k2:90" is several addresses in one entry; list each on its own: [kafka-1:9092, k2:90]`,
		"k1:9092, k2:9092,":  `brokers::0: "k1:9092, k2:9092," is several addresses in one entry; list each on its own: [k1:9092, k2:9092]`,
	} {
		err := configcheck.Broker("brokers::0", address)
		if want == "" {
			require.NoError(t, err, address)
			continue
		}
		require.ErrorContains(t, err, want, address)
	}
}

// TestBrokerPatternIsBroker: the chart's pattern accepts exactly what
// Broker accepts, over the addresses above and their near misses.
func TestBrokerPatternIsBroker(t *testing.T) {
	pattern := regexp.MustCompile(configcheck.BrokerPattern)
	for _, address := range []string{
		"kafka-1:9092", "10.0.0.1:9093", "[::1]:9092", "[fe80::1%eth0]:9092", "kafka.svc.cluster.local:1", "k:65535", "k:09092",
		"localhost", "[::1]", "::1", ":9092", "kafka:", "kafka:0", "kafka:65536", "kafka:99999", "kafka:ninety", "kafka 1:9092",
		" kafka:9092", "kafka:9092 ", "kafka\t1:9092", "", "kafka-1:9092,k2:90", "k1:9092, k2:9092,", "a:b:9092", "[a]b:9092",
		"a[b:9092", "a]b:9092", "[]:9092", "[::1]9092", "kafka:-1", "kafka:9092/", "kafka:9092x",
	} {
		accepted := configcheck.Broker("brokers::0", address) == nil
		require.Equal(t, accepted, pattern.MatchString(address), "%q: Broker accepts it: %v", address, accepted)
	}
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour: "1h", 24 * time.Hour: "24h", 10 * time.Minute: "10m", 90 * time.Second: "1m30s",
		100 * time.Millisecond: "100ms", 0: "0s", time.Hour + time.Second: "1h0m1s",
	} {
		require.Equal(t, want, configcheck.Short(d))
	}
}

// TestDocsListEachRange: docs/configuration.md states each key's range as
// the check does, in the row of the key (dotted, as the docs write keys).
func TestDocsListEachRange(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "configuration.md"))
	require.NoError(t, err)
	for key, r := range configcheck.All() {
		dotted := strings.ReplaceAll(key, "::", ".")
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(dotted) + "` \\|.*$").Find(doc)
		require.NotNil(t, row, "docs/configuration.md has no row for %s", dotted)
		stated := regexp.MustCompile(`Range: ` + regexp.QuoteMeta(r.Range()) + `[.:( ]`)
		require.Regexp(t, stated, string(row), "the row of %s states its range", dotted)
	}
}
