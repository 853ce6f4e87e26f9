package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/compute"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// unwantedTableLifetime is how long the table of a partition no group was
// seen committing on is kept while some group or coordinator cannot be
// read: long enough to ride out a coordinator restart or a broker outage,
// short enough that groups and topics churning meanwhile cannot grow the
// tables, the saved state and the sampler's work without bound. A group
// that comes back after it has its time lag from record timestamps until
// its table refills. Three scrapes when those are longer, so that one
// partial scrape never drops a table the previous one wanted.
const unwantedTableLifetime = time.Hour

// newTimeLagScraper builds the scraper. push, when not nil, sends chunks of
// large scrapes to the next consumer while they are built.
func newTimeLagScraper(cfg *Config, settings receiver.Settings, push emit.PushFunc) (*timeLagScraper, error) {
	groups, err := cfg.Groups.filter()
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	if cfg.Coordination.enabled() {
		// The replicas' own group commits nothing: a group of this
		// receiver's making, not one an operator watches.
		groups = groups.Skipping(cfg.Coordination.GroupID)
	}
	topics, err := cfg.Topics.filter()
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	trusted, err := trustedTimestampTopics(cfg.TrustedTimestampTopics)
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(settings.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("self-telemetry: %w", err)
	}
	writer, err := emit.New(emit.Settings{MetricsBuilderConfig: cfg.MetricsBuilderConfig, ClusterAlias: cfg.ClusterAlias, Replica: replicaName(), Push: push}, settings)
	if err != nil {
		return nil, err
	}
	wants := emit.WantsOf(cfg.Metrics)
	s := &timeLagScraper{
		cfg:    cfg,
		logger: settings.Logger,
		reader: &read.Reader{
			Tables:             timetable.NewStore(cfg.MaxSamples, timetable.GapSamples*cfg.SamplingInterval, time.Now),
			Records:            recordcache.New(recordcache.TrustedStamps(trusted)),
			Groups:             groups,
			Topics:             topics,
			GroupIncludes:      groups.WatchIncludes(),
			TopicIncludes:      topics.WatchIncludes(),
			Describe:           wants.GroupHealth,
			StartOffsets:       wants.StartOffsets,
			StableOffsets:      wants.StableOffsets,
			MaxRecordReads:     cfg.MaxRecordReadsPerScrape,
			TimeIndex:          cfg.TimestampSource == TimestampSourceTimeIndex,
			MaxRecordReadBytes: cfg.MaxRecordReadBytesPerScrape,
			RateWindow:         rateWindow(wants, cfg.RateWindow),
			KeepUnwantedFor:    max(unwantedTableLifetime, 3*cfg.CollectionInterval),
			Now:                time.Now,
			UntimedRecords:     tb.KafkaTimeLagUntimedRecords,
			Logger:             settings.Logger,
			Shares:             read.ShareSettings{Describe: wants.ShareGroupHealth},
		},
		computer:   &compute.Computer{ProduceRates: wants.ProduceRates, Owners: wants.Owners},
		wants:      wants,
		writer:     writer,
		telemetry:  &selfTelemetry{builder: tb},
		receiverID: settings.ID,
	}
	if s.wants.GroupHealth {
		s.computer.Health = health.NewTracker(cfg.Status.Window, cfg.Status.MaxTimeLag.Seconds())
		if s.wants.Assignments {
			s.computer.Health.SumAssignments()
		}
	}
	if s.wants.Progress {
		s.computer.Progress = progress.NewTracker(cfg.RateWindow)
	}
	if s.wants.Retention {
		s.computer.Retention = retention.NewTracker()
		s.reader.Tables.WatchStartChanges()
	}
	s.newCluster = func(ctx context.Context, host component.Host) (kafka.Cluster, error) {
		c, err := newCluster(ctx, cfg, host, settings.Logger, s.telemetry)
		if err != nil {
			return nil, err
		}
		s.tokens = c.Tokens()
		s.reader.Shares.Listed = c.ListedShareGroups
		return c, nil
	}
	s.lifetime, s.endLifetime = context.WithCancel(context.Background())
	return s, nil
}

// rateWindow is the window partitions' production rates are estimated
// over, when some metric (or the retention margins' size prediction)
// needs them; 0 when none does.
func rateWindow(wants emit.Wants, window time.Duration) time.Duration {
	if !wants.ProduceRates && !wants.Retention {
		return 0
	}
	return window
}

// replicaName names this collector in kafka.time_lag.replica: its host
// name, which is the pod's name on Kubernetes.
func replicaName() string {
	name, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return name
}
