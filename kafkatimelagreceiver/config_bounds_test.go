package kafkatimelagreceiver

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/configcheck"
)

// loadYAML decodes receiver keys, written as a user writes them, over the
// default configuration: a number where a duration goes takes the
// collector's own path (nanoseconds).
func loadYAML(t *testing.T, doc string) *Config {
	t.Helper()
	retrieved, err := confmap.NewRetrievedFromYAML([]byte(doc))
	require.NoError(t, err)
	conf, err := retrieved.AsConf()
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, conf.Unmarshal(cfg))
	return cfg
}

// requireRefusedWithKey: validation fails, and one of its errors starts
// with the key (as the collector names it, outer::inner) and says want.
func requireRefusedWithKey(t *testing.T, err error, key, want string) {
	t.Helper()
	require.Error(t, err, "%s must be refused", key)
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.HasPrefix(line, key+": ") && strings.Contains(line, want) {
			return
		}
	}
	t.Fatalf("no error starts with %q and says %q:\n%v", key+": ", want, err)
}

// badValues are values that each break one key, first those the issue
// found validating and then failing or misleading at run time.
var badValues = []struct {
	name, yaml, key, want string
}{
	// A duration without a unit is nanoseconds.
	{"unitless collection_interval", "collection_interval: 30", "collection_interval", "30 was read as 30ns; write 30s"},
	{"unitless timeout", "timeout: 5", "timeout", "5 was read as 5ns; write 5s"},
	{"metadata refresh every millisecond", "metadata: {refresh_interval: 1ms}", "metadata::refresh_interval", "must be at least 10s, got 1ms"},
	{"storage saved every nanosecond", "{storage: file_storage, storage_interval: 1ns}", "storage_interval", "1 was read as 1ns; write 1s"},
	{"unitless storage_interval, storage not on yet", "storage_interval: 60", "storage_interval", "60 was read as 60ns; write 60s"},
	// Brokers: none written (there is no default), or a list in one entry.
	{"no brokers", "{}", "brokers", "must list at least one broker, such as [kafka-1:9092, kafka-2:9092]; there is no default"},
	{"brokers comma-joined in one entry", `brokers: ["kafka-1:9092,kafka-2:9092"]`, "brokers::0", `"kafka-1:9092,kafka-2:9092" is several addresses in one entry; list each on its own: [kafka-1:9092, kafka-2:9092]`},
	// Values that validated and failed or misled at run time.
	{"broker without port", "brokers: [localhost]", "brokers::0", `"localhost" has no port; write host:port, such as localhost:9092`},
	{"timeout of a nanosecond", "timeout: 1ns", "timeout", "1 was read as 1ns; write 1s"},
	{"protocol_version too old", "protocol_version: 0.8.0", "protocol_version", "must be 1.1.0 or later, the oldest the receiver's requests work at, got 0.8.0"},
	{"status window wrapping in 32 bits", "status: {window: 4294967297}", "status::window", "must be between 2 and 10000, got 4294967297"},
	// Every other bounded key, past its floor or its ceiling.
	{"collection_interval above an hour", "collection_interval: 2h", "collection_interval", "must be between 1s and 1h, got 2h"},
	{"negative initial_delay", "initial_delay: -1s", "initial_delay", "must be between 0s and 1h, got -1s"},
	{"timeout above ten minutes", "timeout: 1h", "timeout", "or between 1s and 10m, got 1h"},
	{"unitless sampling_interval", "sampling_interval: 10", "sampling_interval", "10 was read as 10ns; write 10s"},
	{"sampling_interval above an hour", "sampling_interval: 2h", "sampling_interval", "must be between 100ms and 1h, got 2h"},
	{"one sample", "max_samples: 1", "max_samples", "must be between 2 and 10000, got 1"},
	{"negative record reads", "max_record_reads_per_scrape: -1", "max_record_reads_per_scrape", "must be at least 0, got -1"},
	{"storage_interval above a day", "{storage: file_storage, storage_interval: 48h}", "storage_interval", "must be between 1s and 24h, got 48h"},
	{"unitless rate_window", "rate_window: 300", "rate_window", "300 was read as 300ns; write 300s"},
	{"status window of one", "status: {window: 1}", "status::window", "must be between 2 and 10000, got 1"},
	{"unitless status max_time_lag", "status: {max_time_lag: 300}", "status::max_time_lag", "300 was read as 300ns; write 300s"},
	{"unitless conn_idle_timeout", "conn_idle_timeout: 540", "conn_idle_timeout", "540 was read as 540ns; write 540s"},
	{"unitless dial_timeout", "dial_timeout: 10", "dial_timeout", "10 was read as 10ns; write 10s"},
	{"dial_timeout above two minutes", "dial_timeout: 5m", "dial_timeout", "must be between 1s and 2m, got 5m"},
	{"negative metadata retries", "metadata: {retry: {max: -1}}", "metadata::retry::max", "must be at least 0, got -1"},
	{"unitless metadata retry backoff", "metadata: {retry: {backoff: 250}}", "metadata::retry::backoff", "250 was read as 250ns; write 250ms"},
	{"coordination partitions wrapping in 32 bits", "coordination: {group_id: lag, topic_partitions: 4294967297}", "coordination::topic_partitions", "must be between 1 and 10000, got 4294967297"},
	{"coordination replication factor wrapping in 16 bits", "coordination: {group_id: lag, topic_replication_factor: 65539}", "coordination::topic_replication_factor", "or between 1 and 32767, got 65539"},
	{"unitless coordination session_timeout", "coordination: {group_id: lag, session_timeout: 45}", "coordination::session_timeout", "45 was read as 45ns; write 45s"},
	{"coordination session_timeout above 30 minutes", "coordination: {group_id: lag, session_timeout: 1h}", "coordination::session_timeout", "must be between 1s and 30m, got 1h"},
	{"unitless coordination heartbeat_interval", "coordination: {group_id: lag, heartbeat_interval: 3}", "coordination::heartbeat_interval", "3 was read as 3ns; write 3s"},
}

// TestValidateRefusesEachBadValue: each bad value is refused by Validate
// with an error that starts with its key.
func TestValidateRefusesEachBadValue(t *testing.T) {
	for _, tc := range badValues {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadYAML(t, tc.yaml)
			requireRefusedWithKey(t, confmap.Validate(cfg), tc.key, tc.want)
		})
	}
}

// TestValidateAcceptsEachBound: the floors and ceilings themselves, and the
// values that mean "off" or "the default", are accepted.
func TestValidateAcceptsEachBound(t *testing.T) {
	for _, doc := range []string{
		"{collection_interval: 1s, initial_delay: 0s, timeout: 1s, sampling_interval: 100ms, max_samples: 2, max_record_reads_per_scrape: 0, rate_window: 1s}",
		"{collection_interval: 1h, initial_delay: 1h, timeout: 10m, sampling_interval: 1h, max_samples: 10000, rate_window: 24h}",
		"{timeout: 0s, storage: file_storage, storage_interval: 1s, status: {window: 2, max_time_lag: 0s}}",
		"{storage: file_storage, storage_interval: 24h, status: {window: 10000, max_time_lag: 1s}}",
		"{conn_idle_timeout: 1s, dial_timeout: 1s, metadata: {refresh_interval: 10s, retry: {max: 0, backoff: 0s}}}",
		"{dial_timeout: 2m, metadata: {retry: {max: 20, backoff: 1m}}}",
		"{brokers: ['[::1]:9092', 'kafka-1.example.com:65535'], protocol_version: 1.1.0}",
		"coordination: {group_id: lag, topic_partitions: 1, topic_replication_factor: -1, session_timeout: 1s, heartbeat_interval: 100ms}",
		"coordination: {group_id: lag, topic_partitions: 10000, topic_replication_factor: 32767, session_timeout: 30m, heartbeat_interval: 10m}",
		// Unused coordination keys are not checked: no group_id.
		"coordination: {topic_partitions: 0}",
		// sampling_interval, unset, follows a shorter collection_interval.
		"collection_interval: 5s",
		"{collection_interval: 10s, sampling_interval: 10s}",
	} {
		cfg := loadYAML(t, doc)
		if len(cfg.Brokers) == 0 {
			cfg.Brokers = []string{"kafka-1:9092"}
		}
		require.NoError(t, confmap.Validate(cfg), doc)
		// What validates, the Kafka client takes: none of its own wording
		// ("Net.DialTimeout must be > 0") can reach the user at start.
		cluster, err := newCluster(context.Background(), cfg, nil, nil, nil)
		require.NoError(t, err, doc)
		require.NoError(t, cluster.Close())
	}
}

// TestSamplingIntervalFollowsAShorterCollectionInterval: left unset, the
// sampling interval is its default or the collection interval, whichever
// is shorter; written, it is what was written.
func TestSamplingIntervalFollowsAShorterCollectionInterval(t *testing.T) {
	for doc, want := range map[string]time.Duration{
		"{}":                      10 * time.Second,
		"collection_interval: 5s": 5 * time.Second,
		"collection_interval: 1m": 10 * time.Second,
		"{collection_interval: 5s, sampling_interval: 1s}":  time.Second,
		"{collection_interval: 1m, sampling_interval: 30s}": 30 * time.Second,
	} {
		require.Equal(t, want, loadYAML(t, doc).SamplingInterval, doc)
	}
}

// TestSamplingLongerThanCollectionIsRefused: a sampling_interval written
// longer than the collection interval is refused when the configuration is
// read, naming the key and the longest it may be.
func TestSamplingLongerThanCollectionIsRefused(t *testing.T) {
	for doc, want := range map[string]string{
		"{collection_interval: 30s, sampling_interval: 1m}": "sampling_interval: 1m is longer than collection_interval (30s): every scrape already adds a point to the tables; set it to at most 30s, or leave it out",
		"{collection_interval: 5s, sampling_interval: 10s}": "sampling_interval: 10s is longer than collection_interval (5s)",
		"sampling_interval: 1h":                             "sampling_interval: 1h is longer than collection_interval (30s)",
	} {
		retrieved, err := confmap.NewRetrievedFromYAML([]byte(doc))
		require.NoError(t, err)
		conf, err := retrieved.AsConf()
		require.NoError(t, err)
		require.ErrorContains(t, conf.Unmarshal(NewFactory().CreateDefaultConfig()), want, doc)
	}
}

// numberKeys calls visit with the key (outer::inner) and the field of every
// whole-number and duration key set in v, a struct.
func numberKeys(v reflect.Value, prefix string, visit func(key string, field reflect.Value)) {
	for i := range v.NumField() {
		f, field := v.Type().Field(i), v.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		key := prefix + name
		if opts == "squash" {
			key = strings.TrimSuffix(prefix, "::")
		}
		if field.Kind() == reflect.Pointer {
			if field.IsNil() {
				continue
			}
			field = field.Elem()
		}
		switch field.Kind() {
		case reflect.Struct:
			if key == "" {
				numberKeys(field, "", visit)
			} else {
				numberKeys(field, key+"::", visit)
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			visit(key, field)
		}
	}
}

// TestEveryNumberKeyHasAFloor: every whole-number and duration key of the
// configuration (with storage and coordination on, so that their keys are
// used) refuses a value far below anything meaningful, naming the key; a
// key added without a range fails here.
func TestEveryNumberKeyHasAFloor(t *testing.T) {
	var keys []string
	numberKeys(reflect.ValueOf(loadYAML(t, "{storage: file_storage, coordination: {group_id: lag}}")).Elem(), "", func(key string, _ reflect.Value) {
		keys = append(keys, key)
	})
	require.Contains(t, keys, "collection_interval", "the controller's keys are the receiver's")
	require.ElementsMatch(t, slices.Collect(maps.Keys(configcheck.All())), keys, "the keys with a range are the number keys")
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			cfg := loadYAML(t, "{storage: file_storage, coordination: {group_id: lag}}")
			numberKeys(reflect.ValueOf(cfg).Elem(), "", func(k string, field reflect.Value) {
				if k == key {
					field.SetInt(-1 << 40)
				}
			})
			requireRefusedWithKey(t, cfg.Validate(), key, "must be")
		})
	}
}

// TestTimestampSourceIsCheckedWithItsBudget: timestamp_source takes one of
// its two values, naming the key otherwise; a byte budget for record reads
// written beside record_reads, where it would bound nothing, is refused
// naming both keys; beside time_index it is taken.
func TestTimestampSourceIsCheckedWithItsBudget(t *testing.T) {
	retrieved, err := confmap.NewRetrievedFromYAML([]byte("{timestamp_source: record_reads, max_record_read_bytes_per_scrape: 1048576}"))
	require.NoError(t, err)
	conf, err := retrieved.AsConf()
	require.NoError(t, err)
	require.ErrorContains(t, conf.Unmarshal(NewFactory().CreateDefaultConfig()),
		`max_record_read_bytes_per_scrape: applies with timestamp_source "time_index"`)

	cfg := loadYAML(t, "{timestamp_source: time_index, max_record_read_bytes_per_scrape: 1048576}")
	require.Equal(t, TimestampSourceTimeIndex, cfg.TimestampSource)
	require.Equal(t, int64(1<<20), cfg.MaxRecordReadBytesPerScrape)

	cfg = loadYAML(t, "timestamp_source: time-index")
	require.ErrorContains(t, cfg.Validate(), `timestamp_source: must be "time_index" or "record_reads", got "time-index"`)
	cfg = loadYAML(t, "{timestamp_source: time_index, max_record_read_bytes_per_scrape: 2147483648}")
	require.ErrorContains(t, cfg.Validate(), "max_record_read_bytes_per_scrape: must be between 0 and 1073741824, got 2147483648")
}
