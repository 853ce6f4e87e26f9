package health

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// Every status has its attribute value: the points of a StateSet are never
// recorded with an empty attribute.
func TestStatusesHaveAttributes(t *testing.T) {
	for _, st := range Statuses {
		_, ok := metadata.MapAttributeStatus[st.String()]
		require.True(t, ok, st.String())
	}
}
