package kafkatimelagreceiver

import (
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// statusReporter tells the collector how the receiver is doing
// (componentstatus), which is what a component-status health check
// (healthcheckv2) serves: a scrape that read nothing is a recoverable error,
// the next one that reads is OK again, and credentials the brokers refuse
// before anything was ever read, for longer than refusalGrace, are a
// permanent error. Only changes are reported: a health check times an error
// from its first report.
type statusReporter struct {
	host    component.Host // nil: nothing to report to
	now     func() time.Time
	current componentstatus.Status
	// read is whether some scrape read from Kafka: credentials that worked
	// once and fail now were changed on the broker, which may be undone.
	read bool
	// refusedSince is the first of the scrapes in a row whose credentials
	// were refused; zero when the last scrape was not refused.
	refusedSince time.Time
}

// refusalGrace is how long credentials refused from the start stay a
// recoverable error. At a rollout a new SCRAM credential or a token
// issuer's new signing key can take minutes to reach every broker; a pod
// whose status turned permanent then would stay unready until restarted.
const refusalGrace = 5 * time.Minute

// newStatusReporter starts from OK, which the collector reports for every
// component that started.
func newStatusReporter(host component.Host, now func() time.Time) statusReporter {
	return statusReporter{host: host, now: now, current: componentstatus.StatusOK}
}

// scraped reports the outcome of one scrape.
func (r *statusReporter) scraped(err error) {
	if r.current == componentstatus.StatusPermanentError {
		return // final until the collector restarts
	}
	var refused *kafka.AuthenticationError
	if !errors.As(err, &refused) {
		r.refusedSince = time.Time{}
	} else if r.refusedSince.IsZero() {
		r.refusedSince = r.now()
	}
	status := scrapeStatus(err, r.read, r.refusedFor())
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
func (r *statusReporter) refusedFor() time.Duration {
	if r.refusedSince.IsZero() {
		return 0
	}
	return r.now().Sub(r.refusedSince)
}

// scrapeStatus is the status a scrape's outcome means. A partial scrape
// (some groups or brokers failed, or the pipeline refused points) is OK:
// what was read is reported and the errors are logged.
func scrapeStatus(err error, readBefore bool, refusedFor time.Duration) componentstatus.Status {
	var refused *kafka.AuthenticationError
	switch {
	case err == nil, scrapererror.IsPartialScrapeError(err):
		return componentstatus.StatusOK
	case errors.As(err, &refused) && !readBefore && refusedFor >= refusalGrace:
		return componentstatus.StatusPermanentError
	default:
		return componentstatus.StatusRecoverableError
	}
}
