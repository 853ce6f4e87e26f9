package kafkatimelagreceiver

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

const (
	defaultCollectionInterval = 30 * time.Second
	defaultSamplingInterval   = 10 * time.Second
	defaultMaxSamples         = 512
	defaultRecordReads        = 1000
	defaultStorageInterval    = time.Minute
	// defaultRateWindow is long enough to smooth a consumer that commits
	// every few seconds and a producer that writes in bursts, short enough
	// that a drain estimate follows a change within minutes.
	defaultRateWindow = 5 * time.Minute
	// minSamplingInterval keeps a typo (1ms, 10ns) from turning the sampler
	// into a loop of ListOffsets requests to every leader.
	minSamplingInterval = 100 * time.Millisecond
	// maxMaxSamples caps each table at 160 KiB: 512 points already cover
	// more than a day at second resolution, and the bound multiplies by
	// every tracked partition.
	maxMaxSamples = 10000
	// defaultRequestTimeout bounds each Kafka request when the controller's
	// timeout is not set, so that a silent broker can never hold a scrape.
	defaultRequestTimeout = 10 * time.Second
)

// Config is the configuration of the kafka_time_lag receiver.
type Config struct {
	scraperhelper.ControllerConfig `mapstructure:",squash"`
	metadata.MetricsBuilderConfig  `mapstructure:",squash"`

	// The Kafka client's settings are contrib's configkafka.ClientConfig
	// (v0.165.1) key for key, with the same meanings and defaults except
	// where docs/configuration.md says otherwise; client_config.go validates them.
	// They are fields of Config itself rather than an embedded struct so
	// that validation errors name the keys as written (`tls: ...`, not
	// `clientconfig::tls: ...`).

	// Brokers are the bootstrap brokers, host:port.
	Brokers []string `mapstructure:"brokers"`
	// ProtocolVersion is the highest Kafka protocol version to speak.
	// Requests are still negotiated down per broker.
	ProtocolVersion string `mapstructure:"protocol_version"`
	// ClientID is the Kafka client id sent with every request.
	ClientID string `mapstructure:"client_id"`
	// Auth authenticates to the brokers. See auth_config.go.
	Auth AuthConfig `mapstructure:"auth"`
	// TLS, when set (even empty), encrypts connections to the brokers;
	// absent means plaintext, as in configkafka.
	TLS *configtls.ClientConfig `mapstructure:"tls"`
	// Metadata tunes the client's metadata requests.
	Metadata MetadataConfig `mapstructure:"metadata"`
	// RackID is sent with record reads so that the leader can point them
	// at a replica in the same rack (KIP-392).
	RackID string `mapstructure:"rack_id"`
	// UseLeaderEpoch is accepted for configkafka's sake; the receiver
	// never sends leader epochs (see docs/configuration.md).
	UseLeaderEpoch bool `mapstructure:"use_leader_epoch"`
	// ConnIdleTimeout: a broker connection unused for longer is reopened
	// before its next request.
	ConnIdleTimeout time.Duration `mapstructure:"conn_idle_timeout"`
	// DialTimeout bounds opening a connection to a broker.
	DialTimeout time.Duration `mapstructure:"dial_timeout"`

	// ClusterAlias, when set, becomes the resource attribute kafka.cluster.alias.
	ClusterAlias string `mapstructure:"cluster_alias"`
	// SamplingInterval is how often the end offsets of tracked partitions are
	// sampled into the interpolation tables.
	SamplingInterval time.Duration `mapstructure:"sampling_interval"`
	// MaxSamples bounds the points kept in each partition's table.
	MaxSamples int `mapstructure:"max_samples"`
	// MaxRecordReadsPerScrape caps how many committed offsets older than their
	// table are resolved per scrape by reading the record's timestamp.
	MaxRecordReadsPerScrape int `mapstructure:"max_record_reads_per_scrape"`
	// Storage names a storage extension (e.g. file_storage) in which the
	// interpolation tables are kept across restarts. Unset: no persistence.
	Storage *component.ID `mapstructure:"storage"`
	// StorageInterval is how often the tables are saved, besides at shutdown.
	StorageInterval time.Duration `mapstructure:"storage_interval"`
	// RateWindow is the window of the production and consumption rates,
	// and so of the lag trend and time to drain computed from them.
	RateWindow time.Duration `mapstructure:"rate_window"`
	// Groups selects the consumer groups to report, by group id.
	Groups FilterConfig `mapstructure:"groups"`
	// Topics selects the topics to report.
	Topics FilterConfig `mapstructure:"topics"`
	// Status tunes the Burrow-style consumer status. See status_config.go.
	Status StatusConfig `mapstructure:"status"`
	// Coordination shares the monitored groups among collectors. See
	// coordination_config.go.
	Coordination CoordinationConfig `mapstructure:"coordination"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// FilterConfig selects names: a name is kept when it matches an include
// regex and no exclude regex. Regexes are unanchored, as in Go's regexp.
type FilterConfig struct {
	Include []string `mapstructure:"include"`
	Exclude []string `mapstructure:"exclude"`
}

// Validate: confmap prefixes the error with groups or topics.
func (f FilterConfig) Validate() error {
	_, err := f.filter()
	return err
}

func (f FilterConfig) filter() (*filter.Filter, error) {
	return filter.New(f.Include, f.Exclude)
}

// Validate checks the keys of Config itself, naming the offending one as
// the collector does (outer::inner). Each block below it validates itself
// and confmap prefixes its errors with the block's key; what only the Kafka
// client can tell, or what spans blocks, is checked here.
func (cfg *Config) Validate() error {
	var errs []error
	if err := cfg.validateClient(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, validateAttributeLists(cfg.Metrics)...)
	errs = append(errs, validateCoordinatedAttributes(cfg)...)
	if cfg.CollectionInterval <= 0 {
		errs = append(errs, fmt.Errorf("collection_interval: must be positive, got %s", cfg.CollectionInterval))
	}
	switch {
	case cfg.SamplingInterval <= 0:
		errs = append(errs, fmt.Errorf("sampling_interval: must be positive, got %s", cfg.SamplingInterval))
	case cfg.SamplingInterval < minSamplingInterval:
		errs = append(errs, fmt.Errorf("sampling_interval: must be at least %s, got %s", minSamplingInterval, cfg.SamplingInterval))
	}
	if cfg.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: must not be negative, got %s", cfg.Timeout))
	}
	if cfg.Storage != nil && cfg.StorageInterval <= 0 {
		errs = append(errs, fmt.Errorf("storage_interval: must be positive when storage is set, got %s", cfg.StorageInterval))
	}
	if cfg.RateWindow <= 0 {
		errs = append(errs, fmt.Errorf("rate_window: must be positive, got %s", cfg.RateWindow))
	}
	switch {
	case cfg.MaxSamples < 2:
		errs = append(errs, fmt.Errorf("max_samples: must be at least 2, got %d", cfg.MaxSamples))
	case cfg.MaxSamples > maxMaxSamples:
		errs = append(errs, fmt.Errorf("max_samples: must be at most %d, got %d", maxMaxSamples, cfg.MaxSamples))
	}
	if cfg.MaxRecordReadsPerScrape < 0 {
		errs = append(errs, fmt.Errorf("max_record_reads_per_scrape: must not be negative, got %d", cfg.MaxRecordReadsPerScrape))
	}
	return errors.Join(errs...)
}

// requestTimeout is the deadline of each Kafka request: the controller's
// timeout when set, else a default.
func (cfg *Config) requestTimeout() time.Duration {
	if cfg.Timeout > 0 {
		return cfg.Timeout
	}
	return defaultRequestTimeout
}
