package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/receiver"
)

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
