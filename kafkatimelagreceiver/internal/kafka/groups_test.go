package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

func TestParseGroupState(t *testing.T) {
	for in, want := range map[string]GroupState{
		"Stable":              GroupStateStable,
		"PreparingRebalance":  GroupStatePreparingRebalance,
		"CompletingRebalance": GroupStateCompletingRebalance,
		"AwaitingSync":        GroupStateCompletingRebalance,
		"Empty":               GroupStateEmpty,
		"Dead":                GroupStateDead,
		"Assigning":           GroupStatePreparingRebalance,
		"Reconciling":         GroupStateCompletingRebalance,
		"":                    GroupStateUnknown,
		"NotReady":            GroupStateUnknown,
	} {
		require.Equal(t, want, ParseGroupState(in), in)
	}
	// Every state has its attribute value: the points of a StateSet are
	// never recorded with an empty attribute.
	for _, st := range GroupStates {
		_, ok := metadata.MapAttributeState[st.String()]
		require.True(t, ok, st.String())
	}
}
