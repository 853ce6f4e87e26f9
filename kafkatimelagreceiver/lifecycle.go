package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/scrapestatus"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
)

// errShuttingDown ends the scrape in flight when the receiver shuts down.
var errShuttingDown = errors.New("the receiver is shutting down")

// start restores saved tables, builds the Kafka access layer (which
// connects lazily, so a cluster that is down does not stop the collector),
// joins the replicas when coordination is on, and starts the sampler.
func (s *timeLagScraper) start(ctx context.Context, host component.Host) error {
	s.status = scrapestatus.New(host, time.Now)
	if s.cfg.Storage != nil {
		client, err := statestore.Open(ctx, host, *s.cfg.Storage, s.receiverID)
		if err != nil {
			return err
		}
		s.state = statestore.New(statestore.Settings{Client: client, Tables: s.reader.Tables, Progress: s.computer.Progress, Clocks: s.reader.Records, Interval: s.cfg.StorageInterval, LeftOut: s.telemetry.builder.KafkaTimeLagRestoreTablesLeftOut, Logger: s.logger})
		s.state.Load(ctx)
		s.state.Start()
	}
	cl, err := s.newCluster(ctx, host)
	if err != nil {
		return err
	}
	s.cluster = cl
	s.reader.Cluster = cl
	if s.wants.Retention || s.reader.MaxRecordReads > 0 {
		// Record dating reads the topics' configurations too: whether
		// their stamps are append times, and whether they compact.
		s.reader.Retention = retention.NewCache(cl)
	}
	if err := s.startShareGroups(ctx, host); err != nil {
		return err
	}
	if s.cfg.Coordination.enabled() {
		if s.membership, err = newMembership(ctx, s.cfg, host, s.logger, s.tokens); err != nil {
			return err
		}
	}
	// The sampler reads on a lane of its own when the cluster has lanes:
	// its slow answers (a loaded controller's metadata) then never hold the
	// scrape's requests behind them.
	var samples kafka.OffsetReader = cl
	if laned, ok := cl.(interface {
		Lane() (kafka.Cluster, error)
	}); ok {
		if samples, err = laned.Lane(); err != nil {
			return err
		}
	}
	s.sampler = sampler.New(samples, s.reader.Tables, sampler.Settings{
		Interval: s.cfg.SamplingInterval,
		Timeout:  s.cfg.requestTimeout(),
		Logger:   s.logger,
		Duration: s.telemetry.builder.KafkaTimeLagSamplingDuration,
	})
	s.sampler.Start()
	return nil
}

// interrupt is the part of shutdown that waits for nothing: it ends the
// scrape in flight and the sampler's sample, starts leaving the
// coordination group (at once, so that the other replicas take over this
// one's groups without waiting for its session to expire), starts saving
// the tables (before anything can hold the shutdown up, so that a SIGKILL
// after the grace period does not lose them; in the background, so that a
// storage that hangs holds nothing else up), then closes the Kafka
// connections, which cuts the requests still in flight. It runs once;
// later calls return its error.
func (s *timeLagScraper) interrupt(ctx context.Context) error {
	s.interruptOnce.Do(func() {
		s.endLifetime()
		if s.membership != nil {
			// Leaving waits for a join in flight, up to the client's read
			// deadline: shutdown waits for it only until its own deadline.
			s.membershipStopped = make(chan error, 1)
			go func() { s.membershipStopped <- s.membership.Close() }()
		}
		if s.sampler != nil {
			s.samplerStopped = make(chan struct{})
			go func() {
				defer close(s.samplerStopped)
				s.sampler.Stop() // cancels at once, then waits
			}()
		}
		if s.state != nil {
			// A storage call may ignore its context (a hung NFS mount):
			// shutdown waits for this only until its own deadline.
			s.stateSaved = make(chan struct{})
			go func() {
				defer close(s.stateSaved)
				s.stateErr = s.state.Stop(ctx)
			}()
		}
		if s.cluster != nil {
			s.interruptErr = s.cluster.Close()
		}
		if s.shares != nil {
			s.interruptErr = errors.Join(s.interruptErr, s.shares.Close())
		}
	})
	return s.interruptErr
}

// shutdown interrupts, then waits for the state to be saved, the sampler
// to stop and the coordination group to be left, at most until ctx ends.
func (s *timeLagScraper) shutdown(ctx context.Context) error {
	defer s.telemetry.shutdown()
	errs := []error{s.interrupt(ctx)}
	if s.stateSaved != nil {
		select {
		case <-s.stateSaved:
			errs = append(errs, s.stateErr)
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("shutdown: %s had not finished by the deadline: %w", savingState, ctx.Err()))
		}
	}
	if s.samplerStopped != nil {
		select {
		case <-s.samplerStopped:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("shutdown: the sampler had not stopped by the deadline: %w", ctx.Err()))
		}
	}
	if s.membershipStopped != nil {
		select {
		case err := <-s.membershipStopped:
			errs = append(errs, err)
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("shutdown: leaving coordination group %q had not finished by the deadline: %w", s.cfg.Coordination.GroupID, ctx.Err()))
		}
	}
	return errors.Join(errs...)
}

const savingState = "saving the state to storage"

// unfinished names what an interrupted scraper may still be waiting for.
func (s *timeLagScraper) unfinished() string {
	var running []string
	if s.stateSaved != nil && !closed(s.stateSaved) {
		running = append(running, savingState)
	}
	if s.samplerStopped != nil && !closed(s.samplerStopped) {
		running = append(running, "the sampler")
	}
	switch len(running) {
	case 0:
		return "a scrape was"
	case 1:
		return running[0] + " was"
	}
	return strings.Join(running, " and ") + " were"
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// startShareGroups builds the share-group client when some share-group
// metric is on. It connects lazily, and sends nothing while the cluster's
// listing names no share group.
func (s *timeLagScraper) startShareGroups(ctx context.Context, host component.Host) error {
	if !s.wants.ShareGroups {
		return nil
	}
	c, err := newShareGroups(ctx, s.cfg, host, s.logger, s.telemetry, s.tokens)
	if err != nil {
		return err
	}
	s.shares = c
	s.reader.Shares.Client = c
	return nil
}

// timeLagReceiver is the scraper controller with a shutdown bounded by its
// context. The controller waits, without bound, for the scrape in flight
// before it shuts the scraper down: the scrape is interrupted first.
type timeLagReceiver struct {
	receiver.Metrics
	scraper *timeLagScraper
}

// Shutdown interrupts the scraper (the tables are saved there), then shuts
// the controller and the scraper down, returning by ctx's deadline even if
// something is still running then.
func (r *timeLagReceiver) Shutdown(ctx context.Context) error {
	interruptErr := r.scraper.interrupt(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Metrics.Shutdown(ctx) }()
	select {
	case err := <-done:
		return err // the scraper's shutdown returned interruptErr already
	case <-ctx.Done():
		return errors.Join(interruptErr, fmt.Errorf("shutdown: %s still running at the deadline: %w", r.scraper.unfinished(), ctx.Err()))
	}
}
