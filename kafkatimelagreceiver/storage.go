package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// stateKey is the storage key of the tables; its version suffix lets a
// future layout live beside this one during an upgrade.
const stateKey = "tables.v1"

// stateStorage saves the interpolation tables to a storage extension
// (file_storage, typically) periodically and at shutdown, and restores them
// at start, so a restarted collector has its history at the first scrape.
type stateStorage struct {
	client   storage.Client
	tables   *timetable.Store
	interval time.Duration
	logger   *zap.Logger

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// openStateStorage finds the storage extension named by the configuration
// and opens this receiver's client on it.
func openStateStorage(ctx context.Context, host component.Host, extensionID component.ID, receiverID component.ID) (storage.Client, error) {
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

// load restores saved tables. State that is missing starts empty; state that
// is corrupt or from another version is ignored with a warning: the receiver
// then works as on a first start. Tables that fail their checks (damaged, or
// read in the future) are left out with one warning, and the rest restored.
func (s *stateStorage) load(ctx context.Context) {
	data, err := s.client.Get(ctx, stateKey)
	if err != nil {
		s.logger.Warn("storage: could not read saved tables; starting without history", zap.Error(err))
		return
	}
	if data == nil {
		return
	}
	restored, err := s.tables.RestoreState(data)
	if err != nil {
		s.logger.Warn("storage: ignoring saved tables; starting without history", zap.Error(err), zap.Int("bytes", len(data)))
		return
	}
	if skipped := restored.Skipped; len(skipped) > 0 {
		reasons := make([]string, 0, maxSkipsLogged)
		for _, err := range skipped[:min(len(skipped), maxSkipsLogged)] {
			reasons = append(reasons, err.Error())
		}
		s.logger.Warn("storage: left out saved tables that failed their checks; those partitions start without history",
			zap.Int("tables_left_out", len(skipped)), zap.Strings("first_reasons", reasons), zap.Int("tables_restored", restored.Tables))
	}
	s.logger.Info("storage: restored interpolation tables", zap.Int("partitions", restored.Tables))
}

func (s *stateStorage) save(ctx context.Context) error {
	data := s.tables.EncodeState()
	if err := s.client.Set(ctx, stateKey, data); err != nil {
		return fmt.Errorf("storage: save tables (%d bytes): %w", len(data), err)
	}
	return nil
}

func (s *stateStorage) start() {
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

// stop ends periodic saving, saves one last time and closes the client.
func (s *stateStorage) stop(ctx context.Context) error {
	if s.cancel != nil {
		s.cancel()
		s.done.Wait()
	}
	return errors.Join(s.save(ctx), s.client.Close(ctx))
}
