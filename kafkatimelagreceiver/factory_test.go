package kafkatimelagreceiver

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

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
	require.NoError(t, confmap.Validate(cfg))
	c, ok := cfg.(*Config)
	require.True(t, ok)
	// Each call builds a fresh config: changing one must not change the next.
	c.Brokers[0] = "elsewhere:9092"
	c.Topics.Exclude[0] = "changed"
	again := NewFactory().CreateDefaultConfig().(*Config)
	require.Equal(t, []string{"localhost:9092"}, again.Brokers)
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
		cfg.SamplingInterval = minSamplingInterval
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
