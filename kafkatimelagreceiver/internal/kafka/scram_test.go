package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckSCRAMIterations reads the count wherever the message puts it,
// refuses one above Kafka's maximum, and refuses a message whose count is
// missing or not a number rather than letting it through unchecked.
func TestCheckSCRAMIterations(t *testing.T) {
	for _, msg := range []string{"r=abc,s=c2FsdA==,i=4096", "r=abc,s=c2FsdA==,i=16384,x=future"} {
		require.NoError(t, CheckSCRAMIterations(msg), msg)
	}
	require.ErrorContains(t, CheckSCRAMIterations("r=abc,s=c2FsdA==,i=99999999999"), "16384")
	for _, msg := range []string{"r=abc,s=c2FsdA==", "r=abc,s=c2FsdA==,i=many", "r=abc,s=c2FsdA==,i=-1", ""} {
		require.Error(t, CheckSCRAMIterations(msg), msg)
	}
}
