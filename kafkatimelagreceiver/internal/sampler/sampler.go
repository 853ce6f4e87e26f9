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

// startOffsetsEvery is how many samples pass between reads of the log start
// offsets: retention moves them in segment steps, minutes apart, so reading
// them at every sample would double the requests for little news.
const startOffsetsEvery = 6

// Read reads the end offsets of the partitions into their tables, and their
// log start offsets too when withStart is set. The scrape reads through it
// as well: its end-offset read is a table point like any sample.
func Read(ctx context.Context, reader kafka.OffsetReader, tables *timetable.Store, partitions []kafka.TopicPartition, withStart bool) (end, start kafka.OffsetRead, err error) {
	end, err = reader.EndOffsets(ctx, partitions)
	if len(end.Offsets) > 0 {
		tables.Record(end)
	}
	if withStart && ctx.Err() == nil {
		var startErr error
		start, startErr = reader.StartOffsets(ctx, partitions)
		tables.RecordStart(start)
		err = kafka.Join(err, startErr)
	}
	return end, start, err
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
		err := kafka.NewDenials().Split(s.Sample(ctx, cycle%startOffsetsEvery == 0))
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

// Sample takes one sample now: the end offsets of every tracked partition,
// and their log start offsets when withStart is set.
func (s *Sampler) Sample(ctx context.Context, withStart bool) error {
	partitions := s.tables.Partitions()
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
	_, _, err := Read(ctx, s.reader, s.tables, partitions, withStart)
	return err
}
