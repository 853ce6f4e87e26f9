package kafkatimelagreceiver

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// sampler appends the end offset of every tracked partition to its table at a
// fixed interval, in its own goroutine. start and stop are called by the
// receiver's Start and Shutdown; stop waits for the goroutine to end.
type sampler struct {
	cluster  cluster
	tables   *tableStore
	interval time.Duration
	timeout  time.Duration
	logger   *zap.Logger
	// onReset is told which partitions a sample reset, so that what was
	// learned about their old log is forgotten too.
	onReset   func([]topicPartition)
	telemetry *selfTelemetry

	cancel context.CancelFunc
	done   sync.WaitGroup
}

func (s *sampler) start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		s.run(ctx)
	}()
}

func (s *sampler) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.done.Wait()
}

func (s *sampler) run(ctx context.Context) {
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	failing := false
	for cycle := 0; ; cycle++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		// ACL denials are the scrape's to report, once per scrape; here they
		// would hold the sampler in a failure streak that never recovers.
		err := newDeniedSet().filter(s.sampleOnce(ctx, cycle%startOffsetsEvery == 0))
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			// Once per failure streak: a down cluster must not flood the log.
			s.logger.Warn("sampling end offsets failed; tables miss this point", zap.Error(err))
			failing = true
		case err != nil:
			s.logger.Debug("sampling end offsets failed", zap.Error(err))
		case failing:
			s.logger.Info("sampling end offsets recovered")
			failing = false
		}
	}
}

// startOffsetsEvery is how many samples pass between reads of the log start
// offsets: retention moves them in segment steps, minutes apart, so reading
// them at every sample would double the requests for little news.
const startOffsetsEvery = 6

// sampleOnce reads the end offsets of all tracked partitions and records
// them, and the log start offsets too when withStart is set.
func (s *sampler) sampleOnce(ctx context.Context, withStart bool) error {
	partitions := s.tables.partitions()
	if len(partitions) == 0 {
		return nil
	}
	defer s.telemetry.samplingDone(ctx, time.Now())
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	read, err := s.cluster.endOffsets(ctx, partitions)
	if len(read.offsets) > 0 {
		if reset := s.tables.record(read); len(reset) > 0 && s.onReset != nil {
			s.onReset(reset)
		}
	}
	if withStart && ctx.Err() == nil {
		startRead, startErr := s.cluster.startOffsets(ctx, partitions)
		s.tables.recordStart(startRead)
		err = errors.Join(err, startErr)
	}
	return err
}
