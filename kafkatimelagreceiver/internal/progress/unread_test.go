package progress

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// A group whose commits could not be read for a few scrapes (a coordinator
// failing over, OffsetFetch cut at the deadline) keeps its stuck clock and
// marks: when it is read again with the same commit, stuck time goes on
// from where it was instead of restarting from 0.
func TestUnreadGroupKeepsItsStuckClock(t *testing.T) {
	tr := NewTracker(time.Minute)
	stuckAt := func(at time.Duration) Partition {
		tr.BeginScrape(time.Unix(0, int64(time.Hour+at)))
		lags := []lag.PartitionLag{{Group: "g", TopicPartition: kafka.TopicPartition{Topic: "t"}, Committed: 5, HasEnd: true, End: 9, Lag: 4}}
		parts := tr.ObserveGroup("g", lags, int64(time.Hour+at))
		out := parts[0]
		tr.EndScrape()
		return out
	}
	stuckAt(0)
	require.InDelta(t, 10.0, stuckAt(10*time.Second).Stuck, 1e-9)
	for range 3 { // three scrapes that cannot read the group
		tr.BeginScrape(time.Time{})
		tr.ObserveUnread("g")
		tr.EndScrape()
	}
	got := stuckAt(50 * time.Second)
	require.True(t, got.HasStuck)
	require.InDelta(t, 50.0, got.Stuck, 1e-9, "stuck since the first scrape, not since the group was read again")
}
