package kafkatimelagreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// loadTestConfig unmarshals the named entry of testdata/config.yaml over the
// default configuration. The caller validates it.
func loadTestConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	id := component.NewID(metadata.Type)
	if name != "" {
		id = component.NewIDWithName(metadata.Type, name)
	}
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	require.NotEmpty(t, sub.AllKeys(), "no entry %s in testdata/config.yaml", id)
	cfg := NewFactory().CreateDefaultConfig()
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg.(*Config)
}

func TestLoadConfigDefault(t *testing.T) {
	cfg := loadTestConfig(t, "")
	require.NoError(t, confmap.Validate(cfg))
	require.Equal(t, NewFactory().CreateDefaultConfig(), cfg)

	// The defaults themselves.
	require.Equal(t, []string{"localhost:9092"}, cfg.Brokers)
	require.Equal(t, "otel-kafkatimelag", cfg.ClientID)
	require.Equal(t, "4.3.1", cfg.ProtocolVersion, "the newest sarama knows")
	require.Empty(t, cfg.RackID)
	require.True(t, cfg.UseLeaderEpoch)
	require.Equal(t, 9*time.Minute, cfg.ConnIdleTimeout)
	require.Equal(t, 10*time.Second, cfg.DialTimeout)
	require.Equal(t, MetadataConfig{Full: true, RefreshInterval: 10 * time.Minute, Retry: MetadataRetryConfig{Max: 1, Backoff: 250 * time.Millisecond}}, cfg.Metadata)
	require.Nil(t, cfg.Auth.SASL)
	require.Nil(t, cfg.Auth.Kerberos)
	require.Nil(t, cfg.TLS)
	require.Empty(t, cfg.ClusterAlias)
	require.Equal(t, 30*time.Second, cfg.CollectionInterval)
	require.Equal(t, time.Second, cfg.InitialDelay)
	require.Zero(t, cfg.Timeout)
	require.Equal(t, 10*time.Second, cfg.requestTimeout(), "an unset timeout still bounds each request")
	require.Equal(t, 10*time.Second, cfg.SamplingInterval)
	require.Equal(t, 512, cfg.MaxSamples)
	require.Equal(t, 1000, cfg.MaxRecordReadsPerScrape)
	require.Nil(t, cfg.Storage)
	require.Equal(t, time.Minute, cfg.StorageInterval)
	require.Equal(t, 5*time.Minute, cfg.RateWindow)
	require.Equal(t, FilterConfig{Include: []string{".*"}}, cfg.Groups)
	require.Equal(t, FilterConfig{Include: []string{".*"}, Exclude: []string{"^__.*"}}, cfg.Topics)
	require.False(t, cfg.Metrics.KafkaPartitionOldestOffset.Enabled)
	require.False(t, cfg.Metrics.KafkaTopicProduceRate.Enabled)
	require.False(t, cfg.Metrics.KafkaConsumerGroupPartitionTimeToDrain.Enabled)
	require.True(t, cfg.Metrics.KafkaConsumerGroupTimeLag.Enabled)
	require.True(t, cfg.ResourceAttributes.KafkaClusterAlias.Enabled)
}

func TestLoadConfigFull(t *testing.T) {
	cfg := loadTestConfig(t, "full")
	require.NoError(t, confmap.Validate(cfg))

	require.Equal(t, []string{"kafka-1.example.com:9092", "kafka-2.example.com:9093"}, cfg.Brokers)
	require.Equal(t, "lag-monitor", cfg.ClientID)
	require.Equal(t, "2.8.1", cfg.ProtocolVersion)
	require.Equal(t, "euw1-az1", cfg.RackID)
	require.False(t, cfg.UseLeaderEpoch)
	require.Equal(t, 4*time.Minute, cfg.ConnIdleTimeout)
	require.Equal(t, 3*time.Second, cfg.DialTimeout)
	require.Equal(t, MetadataConfig{Full: true, RefreshInterval: time.Minute, Retry: MetadataRetryConfig{Max: 2, Backoff: 500 * time.Millisecond}}, cfg.Metadata)
	require.Equal(t, "prod-eu", cfg.ClusterAlias)
	require.Equal(t, 15*time.Second, cfg.CollectionInterval)
	require.Equal(t, 2*time.Second, cfg.InitialDelay)
	require.Equal(t, 5*time.Second, cfg.Timeout)
	require.Equal(t, 5*time.Second, cfg.requestTimeout())
	require.Equal(t, 3*time.Second, cfg.SamplingInterval)
	require.Equal(t, 1024, cfg.MaxSamples)
	require.Equal(t, 50, cfg.MaxRecordReadsPerScrape)
	require.NotNil(t, cfg.Storage)
	require.Equal(t, component.MustNewIDWithName("file_storage", "lag"), *cfg.Storage)
	require.Equal(t, 30*time.Second, cfg.StorageInterval)
	require.Equal(t, 10*time.Minute, cfg.RateWindow)
	require.Equal(t, FilterConfig{Include: []string{"^payments-", "^orders$"}, Exclude: []string{"-test$"}}, cfg.Groups)
	require.Equal(t, FilterConfig{Include: []string{`^payments\.`, "^orders"}, Exclude: []string{"^__", `\.dlq$`}}, cfg.Topics)

	// The one metric switched on; every other metric keeps its default.
	defaults := metadata.NewDefaultMetricsBuilderConfig()
	m := cfg.Metrics
	require.True(t, m.KafkaPartitionOldestOffset.Enabled)
	require.Equal(t, defaults.Metrics.KafkaPartitionOldestOffset.EnabledAttributes, m.KafkaPartitionOldestOffset.EnabledAttributes)
	for name, got := range map[string][2]bool{
		"kafka.consumer_group.lag":           {m.KafkaConsumerGroupLag.Enabled, defaults.Metrics.KafkaConsumerGroupLag.Enabled},
		"kafka.consumer_group.lag_max":       {m.KafkaConsumerGroupLagMax.Enabled, defaults.Metrics.KafkaConsumerGroupLagMax.Enabled},
		"kafka.consumer_group.lag_sum":       {m.KafkaConsumerGroupLagSum.Enabled, defaults.Metrics.KafkaConsumerGroupLagSum.Enabled},
		"kafka.consumer_group.lost_messages": {m.KafkaConsumerGroupLostMessages.Enabled, defaults.Metrics.KafkaConsumerGroupLostMessages.Enabled},
		"kafka.consumer_group.time_lag":      {m.KafkaConsumerGroupTimeLag.Enabled, defaults.Metrics.KafkaConsumerGroupTimeLag.Enabled},
		"kafka.consumer_group.time_lag_max":  {m.KafkaConsumerGroupTimeLagMax.Enabled, defaults.Metrics.KafkaConsumerGroupTimeLagMax.Enabled},
		"kafka.partition.current_offset":     {m.KafkaPartitionCurrentOffset.Enabled, defaults.Metrics.KafkaPartitionCurrentOffset.Enabled},
		"kafka.partition.produce_rate":       {m.KafkaPartitionProduceRate.Enabled, defaults.Metrics.KafkaPartitionProduceRate.Enabled},
		"kafka.consumer_group.consume_rate":  {m.KafkaConsumerGroupConsumeRate.Enabled, defaults.Metrics.KafkaConsumerGroupConsumeRate.Enabled},
		"kafka.consumer_group.lag_trend":     {m.KafkaConsumerGroupLagTrend.Enabled, defaults.Metrics.KafkaConsumerGroupLagTrend.Enabled},
		"kafka.consumer_group.time_to_drain": {m.KafkaConsumerGroupTimeToDrain.Enabled, defaults.Metrics.KafkaConsumerGroupTimeToDrain.Enabled},
		"kafka.consumer_group.stuck_time":    {m.KafkaConsumerGroupStuckTime.Enabled, defaults.Metrics.KafkaConsumerGroupStuckTime.Enabled},
	} {
		require.True(t, got[1], "%s is enabled by default", name)
		require.Equal(t, got[1], got[0], name)
	}
	// The committed offset is derivable (current_offset - lag) and costs a
	// third of a backend's per-partition series: off unless asked for.
	require.False(t, defaults.Metrics.KafkaConsumerGroupOffset.Enabled)
	require.False(t, m.KafkaConsumerGroupOffset.Enabled)
	require.Equal(t, defaults.ResourceAttributes, cfg.ResourceAttributes)

	// The filters the configuration builds select what it says.
	groups, err := newNameFilter("groups", cfg.Groups)
	require.NoError(t, err)
	require.True(t, groups.matches("payments-eu"))
	require.True(t, groups.matches("orders"))
	require.False(t, groups.matches("payments-eu-test"))
	require.False(t, groups.matches("orders-eu"))
	topics, err := newNameFilter("topics", cfg.Topics)
	require.NoError(t, err)
	require.True(t, topics.matches("payments.card"))
	require.True(t, topics.matches("orders.v2"))
	require.False(t, topics.matches("payments.card.dlq"))
	require.False(t, topics.matches("paymentsXcard"))
	require.False(t, topics.matches("__consumer_offsets"))
}

func TestLoadConfigInvalid(t *testing.T) {
	tests := []struct {
		name    string
		wantErr []string // substrings of the error, the first of them the offending key
	}{
		{name: "empty_brokers", wantErr: []string{"brokers", "at least one broker"}},
		{name: "empty_broker_entry", wantErr: []string{"brokers[1]", "must not be empty"}},
		{name: "invalid_group_regex", wantErr: []string{"groups.include[0]", "(unclosed"}},
		{name: "invalid_group_exclude_regex", wantErr: []string{"groups.exclude[0]", "a**"}},
		{name: "invalid_topic_regex", wantErr: []string{"topics.exclude[1]", "[unterminated"}},
		{name: "zero_sampling_interval", wantErr: []string{"sampling_interval", "must be positive"}},
		{name: "negative_sampling_interval", wantErr: []string{"sampling_interval", "-10s"}},
		{name: "zero_collection_interval", wantErr: []string{"collection_interval"}},
		{name: "negative_timeout", wantErr: []string{"timeout"}},
		{name: "storage_without_interval", wantErr: []string{"storage_interval", "must be positive"}},
		{name: "zero_rate_window", wantErr: []string{"rate_window", "must be positive, got 0s"}},
		{name: "one_sample", wantErr: []string{"max_samples", "at least 2, got 1"}},
		{name: "negative_record_reads", wantErr: []string{"max_record_reads_per_scrape", "got -1"}},
		{name: "bad_protocol_version", wantErr: []string{"protocol_version", "not-a-version"}},
		{name: "empty_protocol_version", wantErr: []string{"protocol_version: must be set (default 4.3.1)"}},
		{name: "rack_id_old_protocol", wantErr: []string{"rack_id: needs protocol_version 2.3.0 or later", "got 2.1.0"}},
		{name: "zero_conn_idle_timeout", wantErr: []string{"conn_idle_timeout: must be positive, got 0s"}},
		{name: "negative_dial_timeout", wantErr: []string{"dial_timeout: must be positive, got -1s"}},
		{name: "zero_metadata_refresh", wantErr: []string{"metadata::refresh_interval: must be positive, got 0s"}},
		{name: "negative_metadata_retry", wantErr: []string{"metadata::retry::max: must not be negative, got -1", "metadata::retry::backoff: must not be negative, got -1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loadTestConfig(t, tt.name)
			err := confmap.Validate(cfg)
			require.Error(t, err)
			for _, want := range tt.wantErr {
				require.ErrorContains(t, err, want)
			}
			// The receiver refuses it too.
			require.Error(t, cfg.Validate())
		})
	}
}

func TestConfigValidateJoinsErrors(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = nil
	cfg.MaxSamples = 0
	cfg.Topics.Include = []string{"("}
	err := cfg.Validate()
	require.ErrorContains(t, err, "brokers")
	require.ErrorContains(t, err, "max_samples")
	require.ErrorContains(t, err, "topics.include[0]")
}

func TestNameFilter(t *testing.T) {
	tests := []struct {
		name   string
		filter FilterConfig
		keep   []string
		drop   []string
	}{
		{
			name: "no include keeps everything",
			keep: []string{"", "orders", "__consumer_offsets", "日本語"},
		},
		{
			name:   "include everything",
			filter: FilterConfig{Include: []string{".*"}},
			keep:   []string{"", "orders", "__consumer_offsets"},
		},
		{
			name:   "default topic filter drops internal topics",
			filter: FilterConfig{Include: []string{".*"}, Exclude: []string{"^__.*"}},
			keep:   []string{"orders", "_single_underscore", "a__b", "orders__"},
			drop:   []string{"__consumer_offsets", "__transaction_state", "__"},
		},
		{
			name:   "include is unanchored",
			filter: FilterConfig{Include: []string{"orders"}},
			keep:   []string{"orders", "eu.orders.v1", "preorders"},
			drop:   []string{"payments", "Orders"},
		},
		{
			name:   "any include suffices",
			filter: FilterConfig{Include: []string{"^a$", "^b$"}},
			keep:   []string{"a", "b"},
			drop:   []string{"ab", "c"},
		},
		{
			name:   "exclude wins over include",
			filter: FilterConfig{Include: []string{"^payments"}, Exclude: []string{"test", "^payments\\.dlq$"}},
			keep:   []string{"payments", "payments.card"},
			drop:   []string{"payments-test", "payments.dlq", "orders"},
		},
		{
			name:   "exclude only",
			filter: FilterConfig{Exclude: []string{"^tmp-"}},
			keep:   []string{"orders", "a-tmp-b"},
			drop:   []string{"tmp-1"},
		},
		{
			name:   "dots: escaped is literal, bare matches any character",
			filter: FilterConfig{Include: []string{`^eu\.orders\.v1$`, "^us.orders$"}},
			keep:   []string{"eu.orders.v1", "us.orders", "us-orders"},
			drop:   []string{"eu-orders-v1", "eu.orders.v10", "eu.orders"},
		},
		{
			name:   "unicode names",
			filter: FilterConfig{Include: []string{"^commandes-été$", `^\p{Greek}+$`, "注文"}, Exclude: []string{"テスト"}},
			keep:   []string{"commandes-été", "παραγγελίες", "注文", "eu.注文.v1"},
			drop:   []string{"commandes-ete", "παραγγελίες-1", "注文テスト"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := newNameFilter("topics", tt.filter)
			require.NoError(t, err)
			for _, name := range tt.keep {
				require.True(t, f.matches(name), "%q must be kept", name)
			}
			for _, name := range tt.drop {
				require.False(t, f.matches(name), "%q must be dropped", name)
			}
		})
	}
}

func TestNameFilterInvalid(t *testing.T) {
	_, err := newNameFilter("groups", FilterConfig{Include: []string{"ok", "("}})
	require.ErrorContains(t, err, "groups.include[1]")
	_, err = newNameFilter("topics", FilterConfig{Include: []string{"ok"}, Exclude: []string{"ok", "x{2,1}"}})
	require.ErrorContains(t, err, "topics.exclude[1]")
}

func TestStatusConfigValidate(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.Equal(t, StatusConfig{Window: 10, MaxTimeLag: 0}, cfg.Status)
	require.NoError(t, cfg.Validate())

	cfg.Status = StatusConfig{Window: 2, MaxTimeLag: time.Minute}
	require.NoError(t, cfg.Validate())

	cfg.Status.Window = 1
	require.ErrorContains(t, cfg.Validate(), "status.window")
	cfg.Status = StatusConfig{Window: 10, MaxTimeLag: -time.Second}
	require.ErrorContains(t, cfg.Validate(), "status.max_time_lag")
}

// A sampling interval of a millisecond (or a nanosecond, a typo away from
// 10s) would have the sampler send ListOffsets to every leader back to back.
func TestSamplingIntervalThatWouldHotLoopIsRejected(t *testing.T) {
	cfg := loadTestConfig(t, "hot_sampling_interval")
	err := cfg.Validate()
	require.ErrorContains(t, err, "sampling_interval: must be at least 100ms, got 1ms")
}

// max_samples sizes every partition's table: without a ceiling, a stray
// zero multiplies the receiver's memory by thousands.
func TestMaxSamplesWithoutUpperBoundIsRejected(t *testing.T) {
	cfg := loadTestConfig(t, "too_many_samples")
	err := cfg.Validate()
	require.ErrorContains(t, err, "max_samples: must be at most 10000, got 100000000")
}
