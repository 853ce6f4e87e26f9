package kafkatimelagreceiver

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// statusReporter tells the collector how the receiver is doing
// (componentstatus), which is what a component-status health check
// (healthcheckv2) serves: a scrape that read nothing is a recoverable error,
// the next one that reads is OK again, and credentials the brokers refuse
// before anything was ever read are a permanent error. Only changes are
// reported: a health check times an error from its first report.
type statusReporter struct {
	host    component.Host // nil: nothing to report to
	current componentstatus.Status
	// read is whether some scrape read from Kafka: credentials that worked
	// once and fail now were changed on the broker, which may be undone.
	read bool
}

// newStatusReporter starts from OK, which the collector reports for every
// component that started.
func newStatusReporter(host component.Host) statusReporter {
	return statusReporter{host: host, current: componentstatus.StatusOK}
}

// scraped reports the outcome of one scrape.
func (r *statusReporter) scraped(err error) {
	if r.current == componentstatus.StatusPermanentError {
		return // final until the collector restarts
	}
	status := scrapeStatus(err, r.read)
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

// scrapeStatus is the status a scrape's outcome means. A partial scrape
// (some groups or brokers failed, or the pipeline refused points) is OK:
// what was read is reported and the errors are logged.
func scrapeStatus(err error, readBefore bool) componentstatus.Status {
	var refused *kafka.AuthenticationError
	switch {
	case err == nil, scrapererror.IsPartialScrapeError(err):
		return componentstatus.StatusOK
	case errors.As(err, &refused) && !readBefore:
		return componentstatus.StatusPermanentError
	default:
		return componentstatus.StatusRecoverableError
	}
}
