// Package statestore keeps the receiver's state (the interpolation tables,
// the stuck clocks and the producers' clocks) in a storage extension across
// restarts.
package statestore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// TablesKey is the storage key of the tables; its version suffix lets a
// future layout live beside this one during an upgrade.
const TablesKey = "tables.v1"

// ProgressKey is the storage key of the groups' stuck clocks: a key and an
// encoding of their own, so that either state can change without the other.
const ProgressKey = "progress.v1"

// ClocksKey is the storage key of the producers' clocks record reads
// measured (recordcache.Cache.EncodeClocks).
const ClocksKey = "producer-clocks.v1"

// Clocks are the producers' clocks as saved and restored; *recordcache.Cache
// is one.
type Clocks interface {
	EncodeClocks() []byte
	RestoreClocks(data []byte, now time.Time) (clocks.Restored, error)
}

// Settings are what a State keeps and where.
type Settings struct {
	Client   storage.Client
	Tables   *timetable.Store
	Progress *progress.Tracker // nil when no metric needs it
	// Clocks, when set, are saved and restored too.
	Clocks Clocks
	// Interval is how often the state is saved besides at Stop.
	Interval time.Duration
	// LeftOut, when set, counts the saved tables a restore leaves out, by
	// the check they failed (attribute failed_check).
	LeftOut metric.Int64Counter
	Logger  *zap.Logger
}

// New returns the state kept by s.Client; nothing is read or saved before
// Load and Start.
func New(s Settings) *State {
	return &State{client: s.Client, tables: s.Tables, progress: s.Progress, clocks: s.Clocks, interval: s.Interval, leftOut: s.LeftOut, logger: s.Logger}
}

// State saves the interpolation tables and the stuck clocks to a
// storage extension (file_storage, typically) periodically and at
// shutdown, and restores them at start, so a restarted collector has its
// history at the first scrape.
type State struct {
	client   storage.Client
	tables   *timetable.Store
	progress *progress.Tracker // nil when no metric needs it
	clocks   Clocks            // nil: not saved
	interval time.Duration
	leftOut  metric.Int64Counter // nil: not counted
	logger   *zap.Logger

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Open finds the storage extension named by the configuration and opens
// this receiver's client on it.
func Open(ctx context.Context, host component.Host, extensionID component.ID, receiverID component.ID) (storage.Client, error) {
	ext, ok := host.GetExtensions()[extensionID]
	if !ok {
		return nil, fmt.Errorf("storage: extension %q is not configured in the service", extensionID)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("storage: extension %q is not a storage extension", extensionID)
	}
	client, err := se.GetClient(ctx, component.KindReceiver, receiverID, "tables")
	if err != nil {
		return nil, fmt.Errorf("storage: open client on %q: %w", extensionID, err)
	}
	return client, nil
}

// maxSkipsLogged bounds the reasons logged for tables left out of a restore.
const maxSkipsLogged = 5

// Load restores saved tables and stuck clocks. State that is missing starts
// empty; state that is corrupt or from another version is ignored with a
// warning: the receiver then works as on a first start. Each state is
// judged alone, and tables that fail their checks (damaged in storage, or
// holding times in the future or before any Kafka record) are left out
// with one warning naming them while the rest are restored.
func (s *State) Load(ctx context.Context) {
	s.restore(ctx, TablesKey, "tables", "starting without history", func(data []byte) (int, error) { return s.restoreTables(ctx, data) })
	if s.progress != nil {
		s.restore(ctx, ProgressKey, "stuck clocks", "stuck times start from 0", s.progress.RestoreState)
	}
	if s.clocks != nil {
		s.restore(ctx, ClocksKey, "producers' clocks", "they are measured again from the records read", s.restoreClocks)
	}
}

// restoreClocks installs saved producers' clocks, with one warning for the
// partitions left out.
func (s *State) restoreClocks(data []byte) (int, error) {
	restored, err := s.clocks.RestoreClocks(data, time.Now())
	if err != nil {
		return 0, err
	}
	if len(restored.Skipped) > 0 {
		reasons := make([]string, 0, maxSkipsLogged)
		for _, err := range restored.Skipped[:min(len(restored.Skipped), maxSkipsLogged)] {
			reasons = append(reasons, err.Error())
		}
		s.logger.Warn("storage: left out saved producers' clocks that failed their checks; those are measured again",
			zap.Int("partitions_left_out", len(restored.Skipped)), zap.Strings("first_reasons", reasons))
	}
	return restored.Partitions, nil
}

// restore reads the state under key and hands it to install. what names
// the state in the log, and without says what the receiver does without it.
func (s *State) restore(ctx context.Context, key, what, without string, install func([]byte) (int, error)) {
	data, err := s.client.Get(ctx, key)
	if err != nil {
		s.logger.Warn("storage: could not read saved "+what+"; "+without, zap.Error(err))
		return
	}
	if data == nil {
		return
	}
	restored, err := install(data)
	if err != nil {
		s.logger.Warn("storage: ignoring saved "+what+"; "+without, zap.Error(err), zap.Int("bytes", len(data)))
		return
	}
	s.logger.Info("storage: restored "+what, zap.Int("partitions", restored))
}

// restoreTables installs saved tables, with one warning for those left
// out, and counts them.
func (s *State) restoreTables(ctx context.Context, data []byte) (int, error) {
	restored, err := s.tables.RestoreState(data)
	if err != nil {
		s.countLeftOut(ctx, 1, metadata.AttributeFailedCheckState)
		return 0, err
	}
	if skipped := restored.Skipped; len(skipped) > 0 {
		reasons := make([]string, 0, maxSkipsLogged)
		damaged := 0
		for i, err := range skipped {
			if errors.Is(err, timetable.ErrDamaged) {
				damaged++
			}
			if i < maxSkipsLogged {
				reasons = append(reasons, err.Error())
			}
		}
		s.logger.Warn("storage: left out saved tables that failed their checks; those partitions start without history",
			zap.Int("tables_left_out", len(skipped)), zap.Int("tables_damaged", damaged), zap.Strings("first_reasons", reasons), zap.Int("tables_restored", restored.Tables))
		s.countLeftOut(ctx, damaged, metadata.AttributeFailedCheckChecksum)
		s.countLeftOut(ctx, len(skipped)-damaged, metadata.AttributeFailedCheckPlausibility)
	}
	return restored.Tables, nil
}

func (s *State) countLeftOut(ctx context.Context, n int, check metadata.AttributeFailedCheck) {
	if s.leftOut != nil && n > 0 {
		s.leftOut.Add(ctx, int64(n), metric.WithAttributes(attribute.String("failed_check", check.String())))
	}
}

// save saves the tables and the stuck clocks.
func (s *State) save(ctx context.Context) error {
	data := s.tables.EncodeState()
	var errs []error
	if err := s.client.Set(ctx, TablesKey, data); err != nil {
		errs = append(errs, fmt.Errorf("storage: save tables (%d bytes): %w", len(data), err))
	}
	if s.progress != nil {
		clocks := s.progress.EncodeState()
		if err := s.client.Set(ctx, ProgressKey, clocks); err != nil {
			errs = append(errs, fmt.Errorf("storage: save stuck clocks (%d bytes): %w", len(clocks), err))
		}
	}
	if s.clocks != nil {
		clocks := s.clocks.EncodeClocks()
		if err := s.client.Set(ctx, ClocksKey, clocks); err != nil {
			errs = append(errs, fmt.Errorf("storage: save producers' clocks (%d bytes): %w", len(clocks), err))
		}
	}
	return errors.Join(errs...)
}

// Start saves the state every interval until Stop.
func (s *State) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		ticker := time.NewTicker(s.interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			if err := s.save(ctx); err != nil && ctx.Err() == nil {
				s.logger.Warn("storage: periodic save failed", zap.Error(err))
			}
		}
	}()
}

// Stop ends periodic saving, saves one last time and closes the client.
func (s *State) Stop(ctx context.Context) error {
	if s.cancel != nil {
		s.cancel()
		s.done.Wait()
	}
	return errors.Join(s.save(ctx), s.client.Close(ctx))
}
