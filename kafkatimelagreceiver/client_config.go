package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/configcheck"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramacluster"
)

// Defaults of the Kafka client keys. Where they differ from contrib's
// configkafka, docs/configuration.md's client table says why.
const (
	// defaultClientID names this receiver in broker logs and quotas
	// (configkafka: otel-collector; contrib's kafkametrics receiver has its
	// own too).
	defaultClientID        = "otel-kafkatimelag"
	defaultConnIdleTimeout = 9 * time.Minute
	defaultDialTimeout     = 10 * time.Second
	defaultMetadataRefresh = 10 * time.Minute
	// defaultMetadataRetryMax: the Kafka client's metadata retries take no
	// context, so configkafka's 20 would hold a scrape against a cluster
	// that does not answer far beyond its timeout; the next scrape retries.
	defaultMetadataRetryMax     = 1
	defaultMetadataRetryBackoff = 250 * time.Millisecond
)

// MetadataConfig is configkafka's `metadata` block; validateClient checks
// the ranges of its keys.
type MetadataConfig struct {
	// Full is accepted and, as in configkafka since v0.159.0, has no effect:
	// the receiver always reads the metadata of the whole cluster, which is
	// what tells it every broker.
	Full bool `mapstructure:"full"`
	// RefreshInterval is how often the cluster metadata is refreshed in
	// the background.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
	// Retry is how metadata and coordinator lookups are retried while the
	// cluster has no answer (leader election, brokers starting).
	Retry MetadataRetryConfig `mapstructure:"retry"`
}

// MetadataRetryConfig is configkafka's `metadata::retry` block.
type MetadataRetryConfig struct {
	Max     int           `mapstructure:"max"`
	Backoff time.Duration `mapstructure:"backoff"`
}

func newDefaultMetadataConfig() MetadataConfig {
	return MetadataConfig{
		Full:            true,
		RefreshInterval: defaultMetadataRefresh,
		Retry:           MetadataRetryConfig{Max: defaultMetadataRetryMax, Backoff: defaultMetadataRetryBackoff},
	}
}

// defaultProtocolVersion is the newest version the Kafka client speaks
// (configkafka's empty default lets franz-go negotiate; sarama must be told
// a version): each request is still negotiated down to what its broker
// supports, and only the newest reaches KIP-848 groups (ConsumerGroupDescribe,
// 3.7.0) and batches OffsetFetch per coordinator (3.0.0).
func defaultProtocolVersion() string {
	return saramacluster.NewestVersion()
}

// validateClient checks the Kafka client keys, naming each as configkafka
// spells it. It loads the TLS material and checks that the Kerberos files
// can be read, so that a missing CA, certificate, key, krb5.conf or keytab
// is reported when the configuration is validated rather than at the first
// connection. The auth block validates itself (auth_config.go); what only
// the Kafka client can tell is in kafka_client.go.
func (cfg *Config) validateClient() error {
	var errs []error
	if len(cfg.Brokers) == 0 {
		errs = append(errs, errors.New("brokers: must list at least one broker, such as [kafka-1:9092, kafka-2:9092]; there is no default"))
	}
	for i, b := range cfg.Brokers {
		errs = append(errs, configcheck.Broker(fmt.Sprintf("brokers::%d", i), b))
	}
	errs = append(errs, cfg.checkProtocolVersion(),
		configcheck.ConnIdleTimeout.Check(cfg.ConnIdleTimeout),
		configcheck.DialTimeout.Check(cfg.DialTimeout),
		configcheck.MetadataRefreshInterval.Check(cfg.Metadata.RefreshInterval),
		configcheck.MetadataRetryMax.Check(int64(cfg.Metadata.Retry.Max)),
		configcheck.MetadataRetryBackoff.Check(cfg.Metadata.Retry.Backoff))
	if cfg.TLS != nil {
		if _, err := cfg.TLS.LoadTLSConfig(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("tls: %w", err))
		}
	}
	return errors.Join(errs...)
}
