package kafkatimelagreceiver

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/configcheck"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

const (
	defaultCollectionInterval = 30 * time.Second
	defaultSamplingInterval   = 10 * time.Second
	defaultMaxSamples         = timetable.DefaultMaxSamples
	defaultRecordReads        = read.DefaultMaxRecordReads
	defaultRecordReadBytes    = read.TimeIndexRecordReadBytes
	defaultTimestampSource    = TimestampSourceTimeIndex
	defaultStorageInterval    = time.Minute
	// defaultRateWindow is long enough to smooth a consumer that commits
	// every few seconds and a producer that writes in bursts, short enough
	// that a drain estimate follows a change within minutes.
	defaultRateWindow = 5 * time.Minute
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

	// Brokers are the bootstrap brokers, host:port. Unlike configkafka's
	// (localhost:9092) there is no default: a configuration that forgot
	// them is refused rather than pointed at whatever listens locally.
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
	// MaxRecordReadsPerScrape is how many partitions a scrape may read
	// records of, to date committed offsets older than their table, at
	// least: half the tracked partitions when that is more.
	MaxRecordReadsPerScrape int `mapstructure:"max_record_reads_per_scrape"`
	// TimestampSource is where a scrape finds when the records its groups
	// consume next were stamped (TimestampSourceTimeIndex,
	// TimestampSourceRecordReads).
	TimestampSource string `mapstructure:"timestamp_source"`
	// MaxRecordReadBytesPerScrape bounds, with timestamp_source
	// time_index, the bytes a scrape's record reads (Fetch) ask, for what
	// the time index cannot answer: 64 KiB a partition.
	MaxRecordReadBytesPerScrape int64 `mapstructure:"max_record_read_bytes_per_scrape"`
	// Storage names a storage extension (e.g. file_storage) in which the
	// interpolation tables are kept across restarts. Unset: no persistence.
	Storage *component.ID `mapstructure:"storage"`
	// StorageInterval is how often the tables are saved, besides at shutdown.
	StorageInterval time.Duration `mapstructure:"storage_interval"`
	// RateWindow is the window of the production and consumption rates,
	// and so of the lag trend and time to drain computed from them.
	RateWindow time.Duration `mapstructure:"rate_window"`
	// TrustedTimestampTopics are regexes (unanchored) of the topics whose
	// CreateTime stamps are taken to be append times (moved by the
	// producers' clocks the receiver measures) before the records the
	// tables bound show it: a group stuck on a topic idle since the
	// receiver started is dated by its record's stamp. Unset, a stamp
	// dates a record only where the partition's records show stamps are
	// append times, or the topic is LogAppendTime.
	TrustedTimestampTopics []string `mapstructure:"trusted_timestamp_topics"`
	// Groups selects the consumer groups to report, by group id.
	Groups FilterConfig `mapstructure:"groups"`
	// Topics selects the topics to report.
	Topics FilterConfig `mapstructure:"topics"`
	// Status tunes the Burrow-style consumer status. See status_config.go.
	Status StatusConfig `mapstructure:"status"`
	// Coordination shares the monitored groups among collectors. See
	// coordination_config.go.
	Coordination CoordinationConfig `mapstructure:"coordination"`

	// unknownKeys names the keys written that the configuration does not
	// have (Unmarshal), for Validate.
	unknownKeys error

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

// Validate checks the keys of Config itself and every number and duration
// key of the blocks below it, naming the offending one as the collector
// does (outer::inner); internal/configcheck holds their ranges. Each block
// checks its other keys itself and confmap prefixes its errors with the
// block's key.
func (cfg *Config) Validate() error {
	if cfg.unknownKeys != nil {
		return cfg.unknownKeys
	}
	errs := []error{cfg.validateClient()}
	errs = append(errs, validateAttributeLists(cfg.Metrics)...)
	errs = append(errs, validateCoordinatedAttributes(cfg)...)
	errs = append(errs,
		configcheck.CollectionInterval.Check(cfg.CollectionInterval),
		configcheck.InitialDelay.Check(cfg.InitialDelay),
		configcheck.Timeout.Check(cfg.Timeout),
		configcheck.SamplingInterval.Check(cfg.SamplingInterval),
		configcheck.MaxSamples.Check(int64(cfg.MaxSamples)),
		configcheck.MaxRecordReadsPerScrape.Check(int64(cfg.MaxRecordReadsPerScrape)),
		configcheck.MaxRecordReadBytesPerScrape.Check(cfg.MaxRecordReadBytesPerScrape),
		validateTimestampSource(cfg.TimestampSource),
		validateTrustedTimestampTopics(cfg.TrustedTimestampTopics),
		configcheck.RateWindow.Check(cfg.RateWindow),
		configcheck.StatusWindow.Check(int64(cfg.Status.Window)),
		configcheck.StatusMaxTimeLag.Check(cfg.Status.MaxTimeLag),
		cfg.Coordination.validate(),
	)
	// Checked with storage unset too: a unitless storage_interval is a
	// typo whether or not storage is on yet.
	errs = append(errs, configcheck.StorageInterval.Check(cfg.StorageInterval))
	return errors.Join(errs...)
}

// Unmarshal applies the user's keys over the defaults, and keeps for
// Validate the keys the configuration does not have, named by their path
// and the key meant (the decoder names only the Go type). A sampling_interval left unset follows a
// collection_interval in range and shorter than its default (one out of
// range is refused by Validate, naming only that key); one
// written longer than collection_interval is refused: each scrape's own
// end-offset read is already a point of the tables, so such a sampler adds
// requests and next to nothing else. The check is made here, where what
// was written is known, rather than in Validate.
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	// Validate reports the keys the configuration does not have, the rest
	// decoded without them, so that the error reads as the others do: the
	// decoder would refuse them in errors of its own, which name no path.
	known := conf.ToStringMap()
	unknown := configcheck.UnknownKeys(reflect.TypeOf(cfg), known)
	if unknown != nil {
		conf = confmap.NewFromStringMap(known)
	}
	if err := conf.Unmarshal(cfg); err != nil {
		return err
	}
	cfg.unknownKeys = unknown
	if conf.IsSet("max_record_read_bytes_per_scrape") && cfg.TimestampSource == TimestampSourceRecordReads {
		return fmt.Errorf("max_record_read_bytes_per_scrape: applies with timestamp_source %q, where records are read only where the time index cannot answer; with %q, max_record_reads_per_scrape bounds the reads",
			TimestampSourceTimeIndex, TimestampSourceRecordReads)
	}
	if !conf.IsSet("sampling_interval") {
		if configcheck.CollectionInterval.Check(cfg.CollectionInterval) == nil && cfg.CollectionInterval < cfg.SamplingInterval {
			cfg.SamplingInterval = cfg.CollectionInterval
		}
		return nil
	}
	// An interval out of its range is refused by Validate, naming that.
	if cfg.SamplingInterval > cfg.CollectionInterval && configcheck.CollectionInterval.Check(cfg.CollectionInterval) == nil && configcheck.SamplingInterval.Check(cfg.SamplingInterval) == nil {
		return fmt.Errorf("sampling_interval: %s is longer than collection_interval (%s): every scrape already adds a point to the tables; set it to at most %s, or leave it out (it then follows a collection_interval shorter than %s)",
			configcheck.Short(cfg.SamplingInterval), configcheck.Short(cfg.CollectionInterval), configcheck.Short(cfg.CollectionInterval), configcheck.Short(defaultSamplingInterval))
	}
	return nil
}

// requestTimeout is the deadline of each Kafka request: the controller's
// timeout when set, else a default.
func (cfg *Config) requestTimeout() time.Duration {
	if cfg.Timeout > 0 {
		return cfg.Timeout
	}
	return defaultRequestTimeout
}

// The values of timestamp_source.
const (
	// TimestampSourceTimeIndex finds a record's timestamp in its brokers'
	// time index (ListOffsets by timestamp), which answers with offsets
	// and timestamps and no record; records are read only where the index
	// cannot answer, within max_record_read_bytes_per_scrape.
	TimestampSourceTimeIndex = "time_index"
	// TimestampSourceRecordReads reads the records themselves (Fetch),
	// within max_record_reads_per_scrape.
	TimestampSourceRecordReads = "record_reads"
)

func validateTimestampSource(source string) error {
	switch source {
	case TimestampSourceTimeIndex, TimestampSourceRecordReads:
		return nil
	}
	return fmt.Errorf("timestamp_source: must be %q or %q, got %q", TimestampSourceTimeIndex, TimestampSourceRecordReads, source)
}

// validateTrustedTimestampTopics checks that every trusted_timestamp_topics
// entry is a regex.
func validateTrustedTimestampTopics(exprs []string) error {
	_, err := trustedTimestampTopics(exprs)
	return err
}

// trustedTimestampTopics compiles trusted_timestamp_topics into a test of
// a topic's name; nil when none is listed.
func trustedTimestampTopics(exprs []string) (func(topic string) bool, error) {
	if len(exprs) == 0 {
		return nil, nil
	}
	f, err := filter.New(exprs, nil)
	if err != nil {
		return nil, fmt.Errorf("trusted_timestamp_topics: %w", err)
	}
	return f.Matches, nil
}
