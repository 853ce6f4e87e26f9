package read

import (
	"context"
	"errors"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/dating"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// readDeniedFor is how long a topic whose records an ACL refused to read is
// not read again: a refusal stands until an operator changes the ACLs, so
// sending the same Fetch every scrape only adds a refused request to each
// (a principal allowed Describe but not Read gets its time lag from the
// time index anyway); a grant is noticed within this time.
const readDeniedFor = 10 * time.Minute

// readDenials remembers, across scrapes, the topics whose record reads an
// ACL refused (Read), with the refusal. It is used by one scrape at a time.
type readDenials struct {
	topics map[string]readDenial
}

type readDenial struct {
	at  time.Time
	err error // the refusal, reported again by each scrape that skips the read
}

// deniedReadSource is a scrape's dating.Source whose record reads leave
// out the topics refused within readDeniedFor, and report their refusal as
// the read would have: the scrape warns of it as before, without the
// request.
type deniedReadSource struct {
	dating.Source
	denials *readDenials
	now     time.Time
}

func (s deniedReadSource) RecordTimestamps(ctx context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error) {
	var (
		read    []kafka.PartitionOffsets
		skipped []error
	)
	reported := map[string]bool{}
	for _, w := range wanted {
		d, ok := s.denials.topics[w.Topic]
		if !ok || s.now.Sub(d.at) >= readDeniedFor {
			read = append(read, w)
			continue
		}
		if !reported[w.Topic] {
			reported[w.Topic] = true
			skipped = append(skipped, d.err)
		}
	}
	var (
		found kafka.RecordReads
		err   error
	)
	if len(read) > 0 {
		found, err = s.Source.RecordTimestamps(ctx, read)
		s.denials.learn(err, s.now)
	}
	return found, kafka.Join(append([]error{err}, skipped...)...)
}

// learn remembers the topics err says an ACL refused to read.
func (d *readDenials) learn(err error, at time.Time) {
	if err == nil {
		return
	}
	if items, ok := err.(kafka.Errors); ok {
		for _, item := range items {
			d.learn(item, at)
		}
		return
	}
	var (
		topic  *kafka.TopicError
		denied *kafka.AuthorizationError
	)
	if !errors.As(err, &topic) || topic.Operation != kafka.OperationRead || !errors.As(topic.Err, &denied) {
		return
	}
	if d.topics == nil {
		d.topics = map[string]readDenial{}
	}
	d.topics[topic.Topic] = readDenial{at: at, err: err}
}
