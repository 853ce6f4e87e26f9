package scrapestatus_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/scrapestatus"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/scrapestatus/scrapestatustest"
)

func TestScrapeStatus(t *testing.T) {
	refused := fmt.Errorf("connect to brokers: %w", &kafka.AuthenticationError{Err: errors.New("SASL authentication failed")})
	for _, tc := range []struct {
		name       string
		err        error
		readBefore bool
		refusedFor time.Duration
		want       componentstatus.Status
	}{
		{"clean scrape", nil, false, 0, componentstatus.StatusOK},
		{"partial scrape", scrapererror.NewPartialScrapeError(errors.New("one coordinator failed"), 3), true, 0, componentstatus.StatusOK},
		{"nothing read", errors.New("list consumer groups: connection refused"), true, 0, componentstatus.StatusRecoverableError},
		{"credentials refused before anything was read, within the grace", refused, false, scrapestatus.RefusalGrace - time.Second, componentstatus.StatusRecoverableError},
		{"credentials refused before anything was read, past the grace", refused, false, scrapestatus.RefusalGrace, componentstatus.StatusPermanentError},
		{"credentials refused after they worked", refused, true, time.Hour, componentstatus.StatusRecoverableError},
		{"coordination join refused the credentials", fmt.Errorf("coordination: not a member: %w", refused), false, scrapestatus.RefusalGrace, componentstatus.StatusPermanentError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, scrapestatus.Status(tc.err, tc.readBefore, tc.refusedFor))
		})
	}
}

// TestStatusReportsChangesOnly: repeated outcomes are reported once (a
// health check times an error from its first report), and a permanent error
// is final.
func TestStatusReportsChangesOnly(t *testing.T) {
	host := scrapestatustest.NewHost()
	r := scrapestatus.New(host, time.Now)
	down := errors.New("connection refused")
	r.Scraped(nil)
	r.Scraped(down)
	r.Scraped(down)
	r.Scraped(nil)
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusOK}, host.Statuses())
	require.ErrorIs(t, host.Events()[0].Err(), down)

	host = scrapestatustest.NewHost()
	now := time.Now()
	r = scrapestatus.New(host, func() time.Time { return now })
	r.Scraped(&kafka.AuthenticationError{Err: errors.New("refused")})
	now = now.Add(scrapestatus.RefusalGrace)
	r.Scraped(&kafka.AuthenticationError{Err: errors.New("refused")})
	r.Scraped(nil)
	r.Scraped(down)
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusPermanentError}, host.Statuses(),
		"the collector allows no way out of a permanent error but stopping")
}

// TestStatusRecoversFromRefusalsAtRollout: credentials refused from the
// start are a recoverable error while the refusals last less than the
// grace (a new SCRAM credential or a token issuer's new key reaching every
// broker), so the pod is ready again without a restart once they are
// accepted; refusals that outlast it are a permanent error.
func TestStatusRecoversFromRefusalsAtRollout(t *testing.T) {
	refused := &kafka.AuthenticationError{Err: errors.New("SASL authentication failed")}
	host := scrapestatustest.NewHost()
	now := time.Now()
	r := scrapestatus.New(host, func() time.Time { return now })
	for range 4 {
		r.Scraped(refused)
		now = now.Add(scrapestatus.RefusalGrace / 5)
	}
	r.Scraped(nil)
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusOK}, host.Statuses())

	// Any other outcome in between starts the grace again.
	host = scrapestatustest.NewHost()
	r = scrapestatus.New(host, func() time.Time { return now })
	r.Scraped(refused)
	now = now.Add(scrapestatus.RefusalGrace - time.Second)
	r.Scraped(errors.New("connection refused"))
	now = now.Add(2 * time.Second)
	r.Scraped(refused)
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, host.Statuses(),
		"a refusal after a connection error is a new run of refusals")
	now = now.Add(scrapestatus.RefusalGrace)
	r.Scraped(refused)
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusPermanentError}, host.Statuses())
}
