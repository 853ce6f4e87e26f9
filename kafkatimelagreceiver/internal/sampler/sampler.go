// Package sampler appends the end offset of every tracked partition to its
// interpolation table at a fixed interval, in a goroutine of its own.
package sampler

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// FullSampleEvery is how many samples pass between full samples, which also
// read the log start offsets and the topic ids. Retention moves log starts
// in segment steps, minutes apart, and topics are rarely recreated: reading
// them at every sample would add requests for little news.
const FullSampleEvery = 6

// ReadOptions say what a read asks for besides end offsets.
type ReadOptions struct {
	// WithStart reads the log start offsets too.
	WithStart bool
	// WithIdentity first reads the cluster id and the topics' ids, so that
	// tables of another cluster, or of a topic since deleted and created
	// again, are reset before they take the new end offsets.
	WithIdentity bool
	// Logger is told of clock steps and identity changes; nil: nowhere.
	Logger *zap.Logger
}

// Read reads the end offsets of the partitions into their tables, with what
// opts asks for besides. The scrape reads through it as well: its
// end-offset read is a table point like any sample.
func Read(ctx context.Context, reader kafka.OffsetReader, tables *timetable.Store, partitions []kafka.TopicPartition, opts ReadOptions) (end, start kafka.OffsetRead, err error) {
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	var idErr error
	if opts.WithIdentity {
		idErr = identify(ctx, reader, tables, partitions, logger)
	}
	end, err = reader.EndOffsets(ctx, partitions)
	// Partitions read again from a new leader were read later: each part
	// is a table point of its own time.
	first, retries := end.Split()
	if len(first.Offsets) > 0 || len(first.Unknown) > 0 {
		logClockStep(logger, tables.Record(first))
	}
	for _, retried := range retries {
		if len(retried.Offsets) > 0 {
			logClockStep(logger, tables.Record(retried))
		}
	}
	err = kafka.Join(idErr, err)
	if opts.WithStart && ctx.Err() == nil {
		var startErr error
		start, startErr = reader.StartOffsets(ctx, partitions)
		tables.RecordStart(start)
		err = kafka.Join(err, startErr)
	}
	return end, start, err
}

// identify checks the tables against the cluster's identity.
func identify(ctx context.Context, reader kafka.OffsetReader, tables *timetable.Store, partitions []kafka.TopicPartition, logger *zap.Logger) error {
	var topics []string
	for _, tp := range partitions { // sorted: each topic's partitions together
		if len(topics) == 0 || topics[len(topics)-1] != tp.Topic {
			topics = append(topics, tp.Topic)
		}
	}
	return Identify(ctx, reader, tables, topics, logger)
}

// Identify checks the tables against the cluster's id and the ids of
// topics (timetable.Store.Identify), and logs what that reset.
func Identify(ctx context.Context, reader kafka.Identifier, tables *timetable.Store, topics []string, logger *zap.Logger) error {
	id, err := reader.Identify(ctx, topics)
	if id == nil {
		return err
	}
	change := tables.Identify(*id)
	if change.FromCluster != "" {
		logger.Warn("the interpolation tables were sampled from another Kafka cluster than the brokers now answering: dropped them; time lag comes from record timestamps until they refill",
			zap.String("tables_cluster_id", change.FromCluster), zap.String("cluster_id", id.ClusterID))
	}
	if len(change.Recreated) > 0 {
		logger.Info("topics were deleted and created again (their topic id changed): reset their interpolation tables",
			zap.Int("topics", len(change.Recreated)), zap.Strings("names", kafka.TruncateNames(change.Recreated)))
	}
	return err
}

// logClockStep says what a wall-clock step did to the tables.
func logClockStep(logger *zap.Logger, step timetable.ClockStep) {
	switch {
	case step.By == 0:
	case step.Shifted:
		logger.Warn("the wall clock was stepped back: shifted the interpolation tables to match",
			zap.Duration("step", step.By), zap.Int("tables", step.Tables))
	default:
		logger.Warn("the wall clock jumped ahead of the monotonic clock (a clock step, or the host was suspended): "+
			"emptied the interpolation tables, whose times cannot be placed any more; time lag comes from record timestamps until they refill",
			zap.Duration("step", step.By), zap.Int("tables", step.Tables))
	}
}

// Settings configure a Sampler.
type Settings struct {
	Interval time.Duration
	// Timeout bounds one sample, all its requests included.
	Timeout time.Duration
	Logger  *zap.Logger
	// Duration, when set, records how long each sample took, in seconds.
	Duration metric.Float64Histogram
}

// Sampler samples the tracked partitions of a store. Start and Stop are
// called by the receiver's Start and Shutdown; Stop waits for the goroutine.
type Sampler struct {
	reader   kafka.OffsetReader
	tables   *timetable.Store
	settings Settings

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// New returns a sampler that has not started.
func New(reader kafka.OffsetReader, tables *timetable.Store, settings Settings) *Sampler {
	if settings.Logger == nil {
		settings.Logger = zap.NewNop()
	}
	return &Sampler{reader: reader, tables: tables, settings: settings}
}

// Start starts sampling every interval until Stop.
func (s *Sampler) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		s.run(ctx)
	}()
}

// Stop ends sampling and waits for a sample in flight to return.
func (s *Sampler) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.done.Wait()
}

func (s *Sampler) run(ctx context.Context) {
	ticker := time.NewTicker(s.settings.Interval)
	defer ticker.Stop()
	logger := s.settings.Logger
	failing := false
	for cycle := 0; ; cycle++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		// ACL denials are the scrape's to report, once per scrape; here they
		// would hold the sampler in a failure streak that never recovers.
		err := kafka.NewDenials().Split(s.Sample(ctx, cycle%FullSampleEvery == 0))
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			// Once per failure streak: a down cluster must not flood the log.
			logger.Warn("sampling end offsets failed; tables miss this point", zap.Error(err))
			failing = true
		case err != nil:
			logger.Debug("sampling end offsets failed", zap.Error(err))
		case failing:
			logger.Info("sampling end offsets recovered")
			failing = false
		}
	}
}

// Sample takes one sample now: the end offsets of every tracked partition
// but those the cluster keeps saying it does not have (see
// timetable.Store.SamplePartitions); when full is set, their log start
// offsets and topic ids too, and otherwise the log starts of the
// partitions watched at every sample (timetable.Store.StartsEverySample).
func (s *Sampler) Sample(ctx context.Context, full bool) error {
	partitions := s.tables.SamplePartitions()
	if len(partitions) == 0 {
		return nil
	}
	if s.settings.Duration != nil {
		defer func(started time.Time) {
			s.settings.Duration.Record(ctx, time.Since(started).Seconds())
		}(time.Now())
	}
	ctx, cancel := context.WithTimeout(ctx, s.settings.Timeout)
	defer cancel()
	_, _, err := Read(ctx, s.reader, s.tables, partitions, ReadOptions{WithStart: full, WithIdentity: full, Logger: s.settings.Logger})
	if full || ctx.Err() != nil {
		return err
	}
	// The log starts that move while a group stands still, at every
	// sample: their advance predicts a deletion within one interval.
	if moving := s.tables.StartsEverySample(); len(moving) > 0 {
		start, startErr := s.reader.StartOffsets(ctx, moving)
		s.tables.RecordStart(start)
		err = kafka.Join(err, startErr)
	}
	return err
}
