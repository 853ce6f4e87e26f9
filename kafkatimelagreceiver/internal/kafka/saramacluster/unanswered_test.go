package saramacluster

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A broker that does not answer is skipped for requestShare budgets (the
// rest of the call that found it), then for twice as long each time it
// still does not answer, up to maxSkip. Answering ends the doubling, but
// not the skip in force: a broker that answers on one connection and not on
// another stays skipped for the rest of that call.
func TestUnansweredBrokerBackoff(t *testing.T) {
	var h brokerHealth
	const addr = "b:9092"
	budget := time.Second
	now := time.Unix(1_700_000_000, 0)
	require.NoError(t, h.skipping(addr, now))

	var skips []time.Duration
	for range 8 {
		h.unanswered(addr, budget, now)
		err := h.skipping(addr, now)
		require.ErrorIs(t, err, errNotAnswering)
		var skipped *skippedError
		require.True(t, errors.As(err, &skipped))
		skips = append(skips, skipped.until.Sub(now))
		h.unanswered(addr, budget, now.Add(time.Millisecond)) // while skipped: no new strike
		now = skipped.until
		require.NoError(t, h.skipping(addr, now), "asked again once the skip is over")
	}
	require.Equal(t, []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 24 * time.Second, 48 * time.Second, maxSkip, maxSkip, maxSkip}, skips)

	h.unanswered(addr, budget, now)
	h.answered(addr, now)
	require.Error(t, h.skipping(addr, now), "answering elsewhere does not end the skip in force")
	h.unanswered(addr, budget, now.Add(maxSkip))
	require.NoError(t, h.skipping(addr, now.Add(maxSkip+requestShare*budget)), "but the doubling starts over")
}
