package read_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

var errClosed = errors.New("kafka: tried to use a client that was closed")

// closedUnderScrape is a cluster whose client was closed between the
// committed-offset read and the end-offset read (a shutdown racing the
// scrape): the end-offset read asks nothing and returns no times. Any
// other call panics on the nil Cluster.
type closedUnderScrape struct {
	kafka.Cluster
}

func (closedUnderScrape) ConsumerGroups(context.Context) ([]string, error) {
	return []string{"billing"}, nil
}

func (closedUnderScrape) CommittedOffsets(context.Context, []string) (map[string]kafka.Commits, error) {
	return map[string]kafka.Commits{"billing": {{TopicPartition: kafka.TopicPartition{Topic: "orders", Partition: 0}, Offset: 5}}}, nil
}

func (closedUnderScrape) Identify(context.Context, []string) (*kafka.Identity, error) {
	return nil, errClosed
}

func (closedUnderScrape) EndOffsets(context.Context, []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}}, errClosed
}

// TestClosedClientDoesNotStampYearOne: an end-offset read that asked
// nothing (zero Received) leaves the snapshot stamped with the time of the
// scrape, not with the zero time (year 1, or an overflowed UnixNano), which
// every point of the scrape would carry.
func TestClosedClientDoesNotStampYearOne(t *testing.T) {
	all, err := filter.New(nil, nil)
	require.NoError(t, err)
	r := &read.Reader{
		Cluster: closedUnderScrape{},
		Tables:  timetable.NewStore(100, time.Hour, nil),
		Records: lag.NewRecordTimes(),
		Groups:  all, Topics: all,
		KeepUnwantedFor: time.Minute,
		Now:             time.Now,
		Logger:          zap.NewNop(),
	}
	var errs scrapererror.ScrapeErrors
	before := time.Now()
	in, err := r.Read(t.Context(), nil, kafka.NewDenials(), &errs)
	after := time.Now()
	require.NoError(t, err)
	require.ErrorContains(t, errs.Combine(), errClosed.Error(), "the failed read is reported")
	require.Empty(t, in.Snap.End)
	at := time.Unix(0, in.Snap.At)
	require.False(t, at.Before(before) || at.After(after), "snapshot at %v, scrape between %v and %v", at, before, after)
}
