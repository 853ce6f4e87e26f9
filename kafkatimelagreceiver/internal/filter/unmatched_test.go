package filter_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
)

func TestIncludeWatch(t *testing.T) {
	f, err := filter.New([]string{"^payments-", "^ordrs$", "^billing"}, []string{"-test$"})
	require.NoError(t, err)
	w := f.WatchIncludes()
	typo := filter.Include{Index: 1, Pattern: "^ordrs$"}
	billing := filter.Include{Index: 2, Pattern: "^billing"}

	for _, step := range []struct {
		names                   []string
		unmatched, matchedAgain []filter.Include
	}{
		// The typo and a regex whose only name is excluded: only the typo
		// matches nothing.
		{names: []string{"payments-eu", "orders", "billing-test"}, unmatched: []filter.Include{typo}},
		// Told once, not at every scrape.
		{names: []string{"payments-eu", "orders", "billing-test"}},
		// A regex whose names went away is told, once.
		{names: []string{"payments-eu", "orders"}, unmatched: []filter.Include{billing}},
		{names: []string{"payments-eu"}},
		// Matching again is told, and stopping again is told again.
		{names: []string{"payments-eu", "billing"}, matchedAgain: []filter.Include{billing}},
		{names: []string{"payments-eu"}, unmatched: []filter.Include{billing}},
		// No name at all: every regex that matched until now is told.
		{names: nil, unmatched: []filter.Include{{Index: 0, Pattern: "^payments-"}}},
		{names: []string{"ordrs", "payments-us", "billing"}, matchedAgain: []filter.Include{{Index: 0, Pattern: "^payments-"}, typo, billing}},
	} {
		unmatched, matchedAgain := w.Observe(step.names)
		require.Equal(t, step.unmatched, unmatched, "%v", step.names)
		require.Equal(t, step.matchedAgain, matchedAgain, "%v", step.names)
	}
}

func TestIncludeWatchWithoutIncludes(t *testing.T) {
	f, err := filter.New(nil, []string{"x"})
	require.NoError(t, err)
	unmatched, matchedAgain := f.WatchIncludes().Observe(nil)
	require.Empty(t, unmatched)
	require.Empty(t, matchedAgain)
}
