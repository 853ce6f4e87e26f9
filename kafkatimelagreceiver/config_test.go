//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/kafka/configkafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/testca"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/configcheck"
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
	want := NewFactory().CreateDefaultConfig().(*Config)
	require.Empty(t, want.Brokers, "no default brokers: they must be written")
	require.ErrorContains(t, confmap.Validate(want), "brokers: must list at least one broker")
	want.Brokers = []string{"kafka-1:9092"}
	require.Equal(t, want, cfg)

	// The defaults themselves.
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
	groups, err := cfg.Groups.filter()
	require.NoError(t, err)
	require.True(t, groups.Matches("payments-eu"))
	require.True(t, groups.Matches("orders"))
	require.False(t, groups.Matches("payments-eu-test"))
	require.False(t, groups.Matches("orders-eu"))
	topics, err := cfg.Topics.filter()
	require.NoError(t, err)
	require.True(t, topics.Matches("payments.card"))
	require.True(t, topics.Matches("orders.v2"))
	require.False(t, topics.Matches("payments.card.dlq"))
	require.False(t, topics.Matches("paymentsXcard"))
	require.False(t, topics.Matches("__consumer_offsets"))
}

func TestLoadConfigInvalid(t *testing.T) {
	tests := []struct {
		name    string
		wantErr []string // substrings of the error, the first of them the offending key
	}{
		{name: "empty_brokers", wantErr: []string{"brokers", "at least one broker"}},
		{name: "empty_broker_entry", wantErr: []string{"brokers::1", "must not be empty"}},
		{name: "invalid_group_regex", wantErr: []string{"groups: include::0", "(unclosed"}},
		{name: "invalid_group_exclude_regex", wantErr: []string{"groups: exclude::0", "a**"}},
		{name: "invalid_topic_regex", wantErr: []string{"topics: exclude::1", "[unterminated"}},
		{name: "zero_sampling_interval", wantErr: []string{"sampling_interval: must be between 100ms and 1h, got 0s"}},
		{name: "negative_sampling_interval", wantErr: []string{"sampling_interval", "-10s"}},
		{name: "zero_collection_interval", wantErr: []string{"collection_interval"}},
		{name: "negative_timeout", wantErr: []string{"timeout"}},
		{name: "storage_without_interval", wantErr: []string{"storage_interval: must be between 1s and 24h, got 0s"}},
		{name: "zero_rate_window", wantErr: []string{"rate_window: must be between 1s and 24h, got 0s"}},
		{name: "one_sample", wantErr: []string{"max_samples: must be between 2 and 10000, got 1"}},
		{name: "negative_record_reads", wantErr: []string{"max_record_reads_per_scrape", "got -1"}},
		{name: "bad_protocol_version", wantErr: []string{"protocol_version", "not-a-version"}},
		{name: "empty_protocol_version", wantErr: []string{"protocol_version: must be set (default 4.3.1)"}},
		{name: "rack_id_old_protocol", wantErr: []string{"rack_id: needs protocol_version 2.3.0 or later", "got 2.1.0"}},
		{name: "zero_conn_idle_timeout", wantErr: []string{"conn_idle_timeout: must be at least 1s, got 0s"}},
		{name: "negative_dial_timeout", wantErr: []string{"dial_timeout: must be between 1s and 2m, got -1s"}},
		{name: "zero_metadata_refresh", wantErr: []string{"metadata::refresh_interval: must be at least 10s, got 0s"}},
		{name: "negative_metadata_retry", wantErr: []string{"metadata::retry::max: must be at least 0, got -1", "metadata::retry::backoff: must be 0 (no wait) or between 1ms and 1m, got -1s"}},
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
			require.Error(t, confmap.Validate(cfg))
		})
	}
}

func TestConfigValidateJoinsErrors(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = nil
	cfg.MaxSamples = 0
	cfg.Topics.Include = []string{"("}
	err := confmap.Validate(cfg)
	require.ErrorContains(t, err, "brokers")
	require.ErrorContains(t, err, "max_samples")
	require.ErrorContains(t, err, "topics: include::0")
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
			f, err := tt.filter.filter()
			require.NoError(t, err)
			for _, name := range tt.keep {
				require.True(t, f.Matches(name), "%q must be kept", name)
			}
			for _, name := range tt.drop {
				require.False(t, f.Matches(name), "%q must be dropped", name)
			}
		})
	}
}

func TestNameFilterInvalid(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Groups = FilterConfig{Include: []string{"ok", "("}}
	require.ErrorContains(t, confmap.Validate(cfg), "groups: include::1")
	cfg = NewFactory().CreateDefaultConfig().(*Config)
	cfg.Topics = FilterConfig{Include: []string{"ok"}, Exclude: []string{"ok", "x{2,1}"}}
	require.ErrorContains(t, confmap.Validate(cfg), "topics: exclude::1")
}

func TestStatusConfigValidate(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = []string{"kafka-1:9092"}
	require.Equal(t, StatusConfig{Window: 10, MaxTimeLag: 0}, cfg.Status)
	require.NoError(t, cfg.Validate())

	cfg.Status = StatusConfig{Window: 2, MaxTimeLag: time.Minute}
	require.NoError(t, cfg.Validate())

	cfg.Status.Window = 1
	require.ErrorContains(t, confmap.Validate(cfg), "status::window: must be between 2 and 10000, got 1")
	cfg.Status = StatusConfig{Window: 10, MaxTimeLag: -time.Second}
	require.ErrorContains(t, confmap.Validate(cfg), "status::max_time_lag: must be 0 (off) or at least 1s, got -1s")
}

// A sampling interval of a millisecond (or a nanosecond, a typo away from
// 10s) would have the sampler send ListOffsets to every leader back to back.
func TestSamplingIntervalThatWouldHotLoopIsRejected(t *testing.T) {
	cfg := loadTestConfig(t, "hot_sampling_interval")
	err := cfg.Validate()
	require.ErrorContains(t, err, "sampling_interval: must be between 100ms and 1h, got 1ms")
}

// max_samples sizes every partition's table: without a ceiling, a stray
// zero multiplies the receiver's memory by thousands.
func TestMaxSamplesWithoutUpperBoundIsRejected(t *testing.T) {
	cfg := loadTestConfig(t, "too_many_samples")
	err := cfg.Validate()
	require.ErrorContains(t, err, "max_samples: must be between 2 and 10000, got 100000000")
}

func loadCoordinationConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "coordination_config.yaml"))
	require.NoError(t, err)
	id := component.NewID(metadata.Type)
	if name != "" {
		id = component.NewIDWithName(metadata.Type, name)
	}
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestCoordinationConfigDefault(t *testing.T) {
	cfg := loadCoordinationConfig(t, "")
	require.NoError(t, confmap.Validate(cfg))
	c := cfg.Coordination
	require.False(t, c.enabled(), "unset group_id: one collector reports everything")
	require.Equal(t, CoordinationConfig{
		Topic:                  "otelcol-kafkatimelag-coordination",
		TopicPartitions:        60,
		TopicReplicationFactor: -1,
		CreateTopic:            true,
		SessionTimeout:         15 * time.Second,
		HeartbeatInterval:      3 * time.Second,
	}, c)
	require.False(t, cfg.ResourceAttributes.KafkaTimeLagReplica.Enabled, "no replica label unless asked for")
}

func TestCoordinationConfigFull(t *testing.T) {
	cfg := loadCoordinationConfig(t, "full")
	require.NoError(t, confmap.Validate(cfg))
	require.Equal(t, CoordinationConfig{
		GroupID:                "otelcol-kafkatimelag-prod",
		Topic:                  "_lag.coordination",
		TopicPartitions:        12,
		TopicReplicationFactor: 3,
		CreateTopic:            false,
		SessionTimeout:         30 * time.Second,
		HeartbeatInterval:      5 * time.Second,
	}, cfg.Coordination)
	require.True(t, cfg.Coordination.enabled())
	require.True(t, cfg.ResourceAttributes.KafkaTimeLagReplica.Enabled)
}

func TestCoordinationConfigInvalid(t *testing.T) {
	for name, want := range map[string]string{
		"bad_topic":        `coordination::topic: "lag/coordination" is not a Kafka topic name`,
		"zero_partitions":  "coordination::topic_partitions: must be between 1 and 10000, got 0",
		"zero_replication": "coordination::topic_replication_factor: must be -1 (the brokers' default) or between 1 and 32767, got 0",
		"zero_session":     "coordination::session_timeout: must be between 1s and 30m, got 0s",
		"slow_heartbeat":   "coordination::heartbeat_interval: must be at most a third of coordination::session_timeout (6s), got 3s",
		"old_protocol":     "coordination::group_id: coordination needs protocol_version 2.4.0 or later (cooperative rebalancing), got 2.3.0",
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorContains(t, confmap.Validate(loadCoordinationConfig(t, name)), want)
		})
	}
}

// TestCoordinationOffIgnoresItsKeys: without a group id the other keys are
// not checked, as they are not used.
func TestCoordinationOffIgnoresItsKeys(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = []string{"kafka-1:9092"}
	cfg.Coordination.TopicPartitions = 0
	require.NoError(t, cfg.Validate())
}

// unusedLocalAddress returns a local TCP address nothing listens on: a
// connection to it is refused at once.
func unusedLocalAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestFactoryType(t *testing.T) {
	f := NewFactory()
	require.Equal(t, "kafka_time_lag", f.Type().String())
	require.Equal(t, metadata.Type, f.Type())
	require.Equal(t, metadata.MetricsStability, f.MetricsStability())
}

func TestFactoryDefaultConfig(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig()
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
	c, ok := cfg.(*Config)
	require.True(t, ok)
	// Valid once the brokers, which have no default, are written.
	c.Brokers = []string{"kafka-1:9092"}
	require.NoError(t, confmap.Validate(cfg))
	// Each call builds a fresh config: changing one must not change the next.
	c.Topics.Exclude[0] = "changed"
	again := NewFactory().CreateDefaultConfig().(*Config)
	require.Equal(t, []string{"^__.*"}, again.Topics.Exclude)
}

func TestFactoryCreateMetricsRejectsForeignConfig(t *testing.T) {
	type otherConfig struct{}
	_, err := createMetricsReceiver(context.Background(), receivertest.NewNopSettings(metadata.Type), &otherConfig{}, consumertest.NewNop())
	require.Error(t, err)
}

func TestFactoryCreateMetricsRejectsInvalidFilter(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Groups.Include = []string{"("}
	_, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.ErrorContains(t, err, "groups: include::0")
}

// TestFactoryReceiverLifecycleWithoutKafka starts receivers whose brokers are
// unreachable: Start must not fail (the receiver connects lazily), and after
// Shutdown no goroutine may be left behind, including after a scrape that
// failed to connect.
func TestFactoryReceiverLifecycleWithoutKafka(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	factory := NewFactory()
	newConfig := func() *Config {
		cfg := factory.CreateDefaultConfig().(*Config)
		cfg.Brokers = []string{unusedLocalAddress(t)}
		cfg.Timeout = 2 * time.Second
		cfg.SamplingInterval = configcheck.SamplingInterval.Min
		require.NoError(t, confmap.Validate(cfg))
		return cfg
	}

	t.Run("start and shut down before any scrape", func(t *testing.T) {
		cfg := newConfig()
		cfg.InitialDelay = time.Hour
		rcvr, err := factory.CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
		require.NoError(t, err)
		require.NoError(t, rcvr.Start(context.Background(), componenttest.NewNopHost()))
		require.NoError(t, rcvr.Shutdown(context.Background()))
	})

	t.Run("shut down without start", func(t *testing.T) {
		rcvr, err := factory.CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), newConfig(), consumertest.NewNop())
		require.NoError(t, err)
		require.NoError(t, rcvr.Shutdown(context.Background()))
	})

	t.Run("shut down after a failed scrape", func(t *testing.T) {
		cfg := newConfig()
		cfg.InitialDelay = 0
		cfg.CollectionInterval = time.Hour
		core, logs := observer.New(zapcore.DebugLevel)
		settings := receivertest.NewNopSettings(metadata.Type)
		settings.Logger = zap.New(core)
		rcvr, err := factory.CreateMetrics(context.Background(), settings, cfg, consumertest.NewNop())
		require.NoError(t, err)
		require.NoError(t, rcvr.Start(context.Background(), componenttest.NewNopHost()))
		// The first scrape runs at once and fails to reach the brokers.
		require.Eventually(t, func() bool {
			return logs.FilterMessage("Error scraping metrics").Len() > 0
		}, 30*time.Second, 5*time.Millisecond)
		require.NoError(t, rcvr.Shutdown(context.Background()))
	})

	t.Run("two receivers in turn", func(t *testing.T) {
		cfg := newConfig()
		host := componenttest.NewNopHost()
		for range 2 {
			rcvr, err := factory.CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
			require.NoError(t, err)
			require.NoError(t, rcvr.Start(context.Background(), host))
			require.NoError(t, rcvr.Shutdown(context.Background()))
		}
	})
}

var _ component.Config = (*Config)(nil)

// contribBlocks is the file of contrib-shaped client blocks at the top of
// the repository.
var contribBlocks = filepath.Join("..", "testdata", "configkafka-client.yaml")

// loadContribBlock unmarshals one block of contribBlocks both into contrib's
// configkafka.ClientConfig (over its defaults) and into the receiver's
// configuration (over its defaults).
func loadContribBlock(t *testing.T, id string) (*confmap.Conf, configkafka.ClientConfig, *Config) {
	t.Helper()
	cm, err := confmaptest.LoadConf(contribBlocks)
	require.NoError(t, err)
	sub, err := cm.Sub(id)
	require.NoError(t, err)
	contrib := configkafka.NewDefaultClientConfig()
	require.NoError(t, sub.Unmarshal(&contrib), "contrib loads %s", id)
	ours := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(ours), "the receiver loads %s unchanged", id)
	return sub, contrib, ours
}

// asContrib is the receiver's client configuration as configkafka's type.
func asContrib(cfg *Config) configkafka.ClientConfig {
	out := configkafka.ClientConfig{
		Brokers:         cfg.Brokers,
		ProtocolVersion: cfg.ProtocolVersion,
		ClientID:        cfg.ClientID,
		TLS:             cfg.TLS,
		Metadata: configkafka.MetadataConfig{
			Full:            cfg.Metadata.Full,
			RefreshInterval: cfg.Metadata.RefreshInterval,
			Retry:           configkafka.MetadataRetryConfig{Max: cfg.Metadata.Retry.Max, Backoff: cfg.Metadata.Retry.Backoff},
		},
		RackID:          cfg.RackID,
		UseLeaderEpoch:  cfg.UseLeaderEpoch,
		ConnIdleTimeout: cfg.ConnIdleTimeout,
		DialTimeout:     cfg.DialTimeout,
	}
	if s := cfg.Auth.SASL; s != nil {
		out.Authentication.SASL = &configkafka.SASLConfig{
			Username:               s.Username,
			Password:               string(s.Password),
			Mechanism:              s.Mechanism,
			AWSMSK:                 configkafka.AWSMSKConfig{Region: s.AWSMSK.Region},
			OAuthBearerTokenSource: s.OAuthBearerTokenSource,
		}
	}
	if k := cfg.Auth.Kerberos; k != nil {
		out.Authentication.Kerberos = &configkafka.KerberosConfig{
			ServiceName:     k.ServiceName,
			Realm:           k.Realm,
			UseKeyTab:       k.UseKeyTab,
			Username:        k.Username,
			Password:        string(k.Password),
			ConfigPath:      k.ConfigPath,
			KeyTabPath:      k.KeyTabPath,
			DisablePAFXFAST: k.DisablePAFXFAST,
		}
	}
	return out
}

// requireSameAsContrib: the block means to the receiver what it means to
// contrib, but for the defaults the receiver deliberately sets otherwise
// (README, configuration table) where the block leaves them unset.
func requireSameAsContrib(t *testing.T, block *confmap.Conf, contrib configkafka.ClientConfig, ours *Config) {
	t.Helper()
	want := contrib
	if !block.IsSet("brokers") {
		require.Equal(t, []string{"localhost:9092"}, want.Brokers)
		want.Brokers = nil
	}
	if !block.IsSet("client_id") {
		require.Equal(t, "otel-collector", want.ClientID)
		want.ClientID = defaultClientID
	}
	if !block.IsSet("protocol_version") {
		require.Empty(t, want.ProtocolVersion)
		want.ProtocolVersion = defaultProtocolVersion()
	}
	if !block.IsSet("metadata::retry::max") {
		require.Equal(t, 20, want.Metadata.Retry.Max)
		want.Metadata.Retry.Max = defaultMetadataRetryMax
	}
	require.Equal(t, want, asContrib(ours))
}

// contribClientKeys are the keys of configkafka.ClientConfig: what one with
// every optional block set marshals to.
func contribClientKeys(t *testing.T) []string {
	t.Helper()
	full := configkafka.NewDefaultClientConfig()
	full.TLS = &configtls.ClientConfig{}
	full.Authentication = configkafka.AuthenticationConfig{
		SASL:     &configkafka.SASLConfig{OAuthBearerTokenSource: component.MustNewID("oauth2client")},
		Kerberos: &configkafka.KerberosConfig{},
	}
	conf := confmap.New()
	require.NoError(t, conf.Marshal(full))
	keys := conf.AllKeys()
	sort.Strings(keys)
	return keys
}

// TestContribClientBlockEveryKey: the testdata block sets every key
// configkafka has, and each one lands where contrib puts it. When a
// contrib release adds a key, this fails until the receiver takes it.
func TestContribClientBlockEveryKey(t *testing.T) {
	keys := contribClientKeys(t)
	require.Contains(t, keys, "auth::kerberos::disable_fast_negotiation", "the marshaled keys are the leaves")
	block, contrib, ours := loadContribBlock(t, "kafka/every_key")
	for _, key := range keys {
		require.True(t, block.IsSet(key), "testdata/configkafka-client.yaml kafka/every_key lacks %s", key)
	}
	requireSameAsContrib(t, block, contrib, ours)

	// Values as written, to be sure that the comparison compares something.
	require.Equal(t, []string{"kafka-1.example.com:9096", "kafka-2.example.com:9096"}, ours.Brokers)
	require.Equal(t, "use1-az2", ours.RackID)
	require.False(t, ours.UseLeaderEpoch)
	require.Equal(t, 5*time.Minute, ours.ConnIdleTimeout)
	require.Equal(t, 30*time.Second, ours.DialTimeout)
	require.Equal(t, MetadataConfig{Full: false, RefreshInterval: 2 * time.Minute, Retry: MetadataRetryConfig{Max: 3, Backoff: time.Second}}, ours.Metadata)
	require.Equal(t, "kafka.internal", ours.TLS.ServerName)
	require.Equal(t, "eu-west-1", ours.Auth.SASL.AWSMSK.Region)
	require.Equal(t, component.MustNewID("oauth2client"), ours.Auth.SASL.OAuthBearerTokenSource)
	require.Equal(t, "krb-Pa55-w0rd", string(ours.Auth.Kerberos.Password))
	require.True(t, ours.Auth.Kerberos.DisablePAFXFAST)

	// Both refuse sasl and kerberos together.
	const both = "only one of sasl or kerberos authentication can be configured"
	require.ErrorContains(t, confmap.Validate(&contrib), both)
	require.ErrorContains(t, confmap.Validate(ours), both)
}

// TestEveryContribKeyIsAReceiverKey loads what configkafka marshals to, so
// that no key of it is unknown to the receiver (confmap refuses unknown
// keys), whatever testdata holds.
func TestEveryContribKeyIsAReceiverKey(t *testing.T) {
	full := configkafka.NewDefaultClientConfig()
	full.TLS = &configtls.ClientConfig{ServerName: "kafka.internal"}
	full.Authentication.Kerberos = &configkafka.KerberosConfig{ServiceName: "kafka", UseKeyTab: true, KeyTabPath: "/k"}
	conf := confmap.New()
	require.NoError(t, conf.Marshal(full))
	ours := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, conf.Unmarshal(ours))
	require.Equal(t, full, asContrib(ours))
}

// TestContribDocBlocksLoadUnchanged: the blocks of contrib's docs load with
// contrib's meaning and are valid for the receiver as they are for contrib,
// once the files they name exist.
func TestContribDocBlocksLoadUnchanged(t *testing.T) {
	for _, id := range []string{"kafka/full", "kafka/scram", "kafka/oauthbearer", "kafka/aws_msk_iam", "kafka/kerberos", "kafka"} {
		t.Run(id, func(t *testing.T) {
			block, contrib, ours := loadContribBlock(t, id)
			requireSameAsContrib(t, block, contrib, ours)
			require.NoError(t, confmap.Validate(&contrib))

			// The receiver reads the TLS and Kerberos files when it
			// validates (so that a missing one shows before the collector
			// starts): they must exist.
			if ours.TLS != nil && ours.TLS.CAFile != "" {
				require.ErrorContains(t, confmap.Validate(ours), "tls: ")
				ca := testca.New(t)
				certPEM, keyPEM := ca.Issue(t, secMonitorUser, nil, nil)
				dir := t.TempDir()
				ours.TLS.CAFile = writeTestFile(t, dir, "ca.pem", ca.CertPEM)
				ours.TLS.CertFile = writeTestFile(t, dir, "cert.pem", certPEM)
				ours.TLS.KeyFile = writeTestFile(t, dir, "key.pem", keyPEM)
			}
			// contrib's default brokers (localhost:9092) are none here:
			// a block without them is refused until they are written.
			if !block.IsSet("brokers") {
				require.ErrorContains(t, confmap.Validate(ours), "brokers: must list at least one broker")
				ours.Brokers = []string{"kafka-1:9092"}
			}
			if k := ours.Auth.Kerberos; k != nil {
				require.ErrorContains(t, confmap.Validate(ours), "keytab_file: open")
				dir := t.TempDir()
				k.ConfigPath = writeTestFile(t, dir, "krb5.conf", []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n"))
				k.KeyTabPath = writeTestFile(t, dir, "kafka.keytab", []byte{5, 2})
			}
			require.NoError(t, confmap.Validate(ours))
		})
	}
}

func writeTestFile(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, content, 0o600))
	return path
}

// TestContribDefaultsDiffer pins the four defaults the receiver sets
// otherwise than configkafka, which docs/configuration.md explains.
func TestContribDefaultsDiffer(t *testing.T) {
	contrib := configkafka.NewDefaultClientConfig()
	ours := NewFactory().CreateDefaultConfig().(*Config)
	got := asContrib(ours)
	require.Equal(t, []string{"localhost:9092"}, contrib.Brokers)
	require.Empty(t, got.Brokers, "none: brokers must be written")
	require.Equal(t, "otel-kafkatimelag", got.ClientID)
	require.Equal(t, "4.3.1", got.ProtocolVersion)
	require.Equal(t, 1, got.Metadata.Retry.Max)
	got.Brokers, got.ClientID, got.ProtocolVersion, got.Metadata.Retry.Max = contrib.Brokers, contrib.ClientID, contrib.ProtocolVersion, contrib.Metadata.Retry.Max
	require.Equal(t, contrib, got, "every other default is configkafka's")
}

// TestMetadataFullFalseIsSaid: `metadata::full: false`, a no-op in contrib
// too, is accepted and said to change nothing rather than ignored silently.
func TestMetadataFullFalseIsSaid(t *testing.T) {
	_, _, cfg := loadContribBlock(t, "kafka/full")
	require.False(t, cfg.Metadata.Full)
	core, logs := observer.New(zap.InfoLevel)
	_, err := cfg.clusterSettings(context.Background(), nil, zap.New(core), nil)
	require.NoError(t, err)
	require.Equal(t, 1, logs.FilterMessageSnippet("metadata::full: false has no effect").Len())

	cfg.Metadata.Full = true
	core, logs = observer.New(zap.InfoLevel)
	_, err = cfg.clusterSettings(context.Background(), nil, zap.New(core), nil)
	require.NoError(t, err)
	require.Zero(t, logs.Len())
}

// An attribute listed twice under a metric's `attributes` made the list as
// long as the metric's full set while it lacked one: `[group, group,
// topic]` for kafka.consumer_group.lag kept `partition`, contrary to the
// configuration. Such a list is refused, naming the metric and attribute.
func TestMetricAttributeListedTwiceIsRefused(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = []string{"kafka-1:9092"}
	cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes = []metadata.KafkaConsumerGroupLagMetricAttributeKey{
		metadata.KafkaConsumerGroupLagMetricAttributeKeyGroup,
		metadata.KafkaConsumerGroupLagMetricAttributeKeyGroup,
		metadata.KafkaConsumerGroupLagMetricAttributeKeyTopic,
	}
	err := cfg.Validate()
	require.ErrorContains(t, err, `metrics::kafka.consumer_group.lag::attributes: "group" is listed twice`)

	cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes = cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes[1:]
	require.NoError(t, cfg.Validate(), "each once: fine")
}
