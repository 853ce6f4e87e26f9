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
		"bad_topic":        `coordination: topic: "lag/coordination" is not a Kafka topic name`,
		"zero_partitions":  "coordination: topic_partitions: must be between 1 and 10000, got 0",
		"zero_replication": "coordination: topic_replication_factor: must be -1 (the brokers' default) or at least 1, got 0",
		"zero_session":     "coordination: session_timeout: must be at least 1ms, got 0s",
		"slow_heartbeat":   "coordination: heartbeat_interval: must be at least 1ms and at most a third of session_timeout (6s), got 3s",
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
	cfg.Coordination.TopicPartitions = 0
	require.NoError(t, cfg.Validate())
}
