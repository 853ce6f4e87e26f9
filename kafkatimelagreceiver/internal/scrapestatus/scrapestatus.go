// Package scrapestatus tells the collector how the receiver is doing
// (componentstatus), from the outcome of each scrape: that is what a
// component-status health check (healthcheckv2) serves.
package scrapestatus

import (
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Reporter reports the receiver's status: a scrape that read nothing is a
// recoverable error, the next one that reads is OK again, and credentials
// the brokers refuse before anything was ever read, for longer than
// RefusalGrace, are a permanent error. Only changes are reported: a health
// check times an error from its first report.
type Reporter struct {
	host component.Host // nil: nothing to report to
	// Now is the clock refusals are timed by.
	Now     func() time.Time
	current componentstatus.Status
	// read is whether some scrape read from Kafka: credentials that worked
	// once and fail now were changed on the broker, which may be undone.
	read bool
	// refusedSince is the first of the scrapes in a row whose credentials
	// were refused; zero when the last scrape was not refused.
	refusedSince time.Time
}

// RefusalGrace is how long credentials refused from the start stay a
// recoverable error. At a rollout a new SCRAM credential or a token
// issuer's new signing key can take minutes to reach every broker; a pod
// whose status turned permanent then would stay unready until restarted.
const RefusalGrace = 5 * time.Minute

// New starts from OK, which the collector reports for every component that
// started.
func New(host component.Host, now func() time.Time) Reporter {
	return Reporter{host: host, Now: now, current: componentstatus.StatusOK}
}

// Scraped reports the outcome of one scrape.
func (r *Reporter) Scraped(err error) {
	if r.current == componentstatus.StatusPermanentError {
		return // final until the collector restarts
	}
	var refused *kafka.AuthenticationError
	if !errors.As(err, &refused) {
		r.refusedSince = time.Time{}
	} else if r.refusedSince.IsZero() {
		r.refusedSince = r.Now()
	}
	status := Status(err, r.read, r.refusedFor())
	if status == componentstatus.StatusOK {
		r.read = true
	}
	if status == r.current {
		return
	}
	r.current = status
	ev := componentstatus.NewEvent(status)
	if status != componentstatus.StatusOK {
		ev = componentstatus.NewEvent(status, componentstatus.WithError(err))
	}
	componentstatus.ReportStatus(r.host, ev)
}

// refusedFor is how long the credentials have been refused, scrape after
// scrape; zero when the last scrape was not refused.
func (r *Reporter) refusedFor() time.Duration {
	if r.refusedSince.IsZero() {
		return 0
	}
	return r.Now().Sub(r.refusedSince)
}

// Status is the status a scrape's outcome means. A partial scrape
// (some groups or brokers failed, or the pipeline refused points) is OK:
// what was read is reported and the errors are logged.
func Status(err error, readBefore bool, refusedFor time.Duration) componentstatus.Status {
	var refused *kafka.AuthenticationError
	switch {
	case err == nil, scrapererror.IsPartialScrapeError(err):
		return componentstatus.StatusOK
	case errors.As(err, &refused) && !readBefore && refusedFor >= RefusalGrace:
		return componentstatus.StatusPermanentError
	default:
		return componentstatus.StatusRecoverableError
	}
}
