package filter_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
)

func TestFilter(t *testing.T) {
	f, err := filter.New([]string{"^billing", "^orders$"}, []string{"-test$"})
	require.NoError(t, err)
	skipping := f.Skipping("billing-replicas")
	for _, tc := range []struct {
		name           string
		kept, skipKept bool
	}{
		{"billing", true, true},
		{"billing-test", false, false},
		{"orders", true, true},
		{"orders-2", false, false},
		{"billing-replicas", true, false},
	} {
		require.Equal(t, tc.kept, f.Matches(tc.name), tc.name)
		require.Equal(t, tc.skipKept, skipping.Matches(tc.name), "%s, skipping billing-replicas", tc.name)
	}

	_, err = filter.New(nil, []string{"ok", "("})
	require.ErrorContains(t, err, "exclude::1")
}
