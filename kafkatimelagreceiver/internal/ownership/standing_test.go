package ownership

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStandingReads: StandDownAfter failed reads in a row stand the
// replica down (one success in between starts the count over); while down,
// a failed probe keeps it out and the first read that succeeds brings it
// back.
func TestStandingReads(t *testing.T) {
	var s Standing
	share := New([]int32{0}, 4)
	for range 2 {
		for range StandDownAfter - 1 {
			require.NoError(t, s.Read(share, false))
		}
		require.NoError(t, s.Read(share, true), "a read in between starts the count over")
	}
	for range StandDownAfter - 1 {
		require.NoError(t, s.Read(share, false))
	}
	require.ErrorContains(t, s.Read(share, false), "3 scrapes in a row read none")
	require.Same(t, share, s.Away())
	require.NoError(t, s.Read(share, false), "already down")
	require.False(t, s.Probe(false))
	require.True(t, s.Probe(true))
	require.Nil(t, s.Away())
}

// TestStandingExports: refused exports stand the replica down for a hold
// that doubles each time it stands down again before an export went
// through, up to maxRefusedHold scrapes; an accepted export resets it.
func TestStandingExports(t *testing.T) {
	var s Standing
	share := New([]int32{0}, 4)
	holds := []int{}
	for range 5 {
		for range StandDownAfter - 1 {
			require.NoError(t, s.Exported(share, false))
		}
		require.Error(t, s.Exported(share, false))
		probes := 1
		for !s.Probe(true) {
			probes++
		}
		holds = append(holds, probes)
	}
	require.Equal(t, []int{3, 6, 12, 20, 20}, holds)
	require.NoError(t, s.Exported(share, true))
	for range StandDownAfter {
		_ = s.Exported(share, false)
	}
	require.False(t, s.Probe(true))
	require.False(t, s.Probe(true))
	require.True(t, s.Probe(true), "an accepted export set the hold back to %d", StandDownAfter)
	require.NoError(t, s.Exported(nil, false), "not holding a share: nothing to give up")
}
