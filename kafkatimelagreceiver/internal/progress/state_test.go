package progress

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stalledTracker has group g stuck on partitions 0 and 1 of t since 0 s
// and 100 s, just moved on 2 (its clock starts now) and caught up on 3, as
// of the scrape at 200 s.
func stalledTracker(t *testing.T) *Tracker {
	t.Helper()
	tr := NewTracker(time.Minute)
	scrape(tr, 0, lagsOf("g", "t", pair{10, 50}, pair{20, 20}, pair{30, 60}, pair{40, 40}))
	scrape(tr, 100, lagsOf("g", "t", pair{10, 60}, pair{20, 25}, pair{35, 60}, pair{40, 40}))
	p := scrape(tr, 200, lagsOf("g", "t", pair{10, 70}, pair{20, 30}, pair{40, 60}, pair{40, 40}))
	require.Equal(t, []float64{200, 100, 0, 0}, []float64{p[0].Stuck, p[1].Stuck, p[2].Stuck, p[3].Stuck})
	return tr
}

func TestStuckClocksSurviveARestart(t *testing.T) {
	data := stalledTracker(t).EncodeState()
	require.Equal(t, data, stalledTracker(t).EncodeState(), "the same clocks encode to the same bytes")

	restarted := NewTracker(time.Minute)
	n, err := restarted.RestoreState(data)
	require.NoError(t, err)
	require.Equal(t, 3, n, "only the running clocks are saved")
	// Down for 100 s. Partitions 0 and 2 are still where they were;
	// partition 1 moved while the collector was down.
	p := scrape(restarted, 300, lagsOf("g", "t", pair{10, 90}, pair{21, 40}, pair{40, 60}, pair{40, 40}))
	require.InDelta(t, 300, p[0].Stuck, 1e-9, "the clock ran on across the restart")
	require.Zero(t, p[1].Stuck, "a clock saved at another offset does not resume")
	require.InDelta(t, 100, p[2].Stuck, 1e-9)
	require.Zero(t, p[3].Stuck)
	require.False(t, p[0].HasConsumeRate, "consumption marks are not saved: the window starts again")

	// A clock saved after the time of the first scrape (a clock stepped
	// back) counts from that scrape, never negative.
	restarted = NewTracker(time.Minute)
	_, err = restarted.RestoreState(data)
	require.NoError(t, err)
	p = scrape(restarted, -50, lagsOf("g", "t", pair{10, 90}))
	require.Zero(t, p[0].Stuck)
}

func TestRestoredClocksWaitForTheirPair(t *testing.T) {
	data := stalledTracker(t).EncodeState()
	restarted := NewTracker(time.Minute)
	_, err := restarted.RestoreState(data)
	require.NoError(t, err)
	// The first scrape after the restart could not read g: its clocks are
	// kept, and saved again if the collector stops now.
	scrape(restarted, 300, lagsOf("other", "t", pair{1, 1}))
	require.Equal(t, data, restarted.EncodeState())
	p := scrape(restarted, 310, lagsOf("g", "t", pair{10, 90}))
	require.InDelta(t, 310, p[0].Stuck, 1e-9)

	// Unclaimed for two scrapes: forgotten, as a missing pair is.
	restarted = NewTracker(time.Minute)
	_, err = restarted.RestoreState(data)
	require.NoError(t, err)
	scrape(restarted, 300, lagsOf("other", "t", pair{1, 1}))
	scrape(restarted, 310, lagsOf("other", "t", pair{1, 1}))
	p = scrape(restarted, 320, lagsOf("g", "t", pair{10, 90}))
	require.Zero(t, p[0].Stuck, "the clock starts again from this scrape")
}

func TestStateDecodeRejectsBadInput(t *testing.T) {
	valid := stalledTracker(t).EncodeState()
	cases := map[string][]byte{
		"empty":                  nil,
		"bad magic":              []byte("KTLT\x01\x00"),
		"no version":             []byte(stateMagic),
		"truncated":              valid[:len(valid)-1],
		"trailing bytes":         append(append([]byte(nil), valid...), 0),
		"count beyond the input": []byte(stateMagic + "\x01\x7f"),
		"empty group name":       []byte(stateMagic + "\x01\x01\x00\x00"),
		"name beyond the input":  []byte(stateMagic + "\x01\x01\x09g\x00"),
		"group twice":            []byte(stateMagic + "\x01\x02\x01g\x00\x01g\x00"),
		"topic twice":            []byte(stateMagic + "\x01\x01\x01g\x02\x01t\x00\x01t\x00"),
		"pair twice":             []byte(stateMagic + "\x01\x01\x01g\x01\x01t\x02\x00\x05\x01\x00\x05\x01"),
		"no stuck time":          []byte(stateMagic + "\x01\x01\x01g\x01\x01t\x01\x00\x05\x00"),
		// An edited or damaged file: decades of stuck_time until the
		// group's commit moves.
		"stuck since 1970":       []byte(stateMagic + "\x01\x01\x01g\x01\x01t\x01\x00\x05\x01"),
		"partition beyond int32": []byte(stateMagic + "\x01\x01\x01g\x01\x01t\x01\x80\x80\x80\x80\x08\x05\x01"),
		"offset beyond int64":    append([]byte(stateMagic+"\x01\x01\x01g\x01\x01t\x01\x00"), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01),
		"varint overflow":        append([]byte(stateMagic+"\x01\x01\x01g\x01\x01t\x01\x00"), bytes.Repeat([]byte{0xff}, 11)...),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			tr := NewTracker(time.Minute)
			n, err := tr.RestoreState(data)
			require.ErrorIs(t, err, ErrStateCorrupt)
			require.Zero(t, n)
			require.Nil(t, tr.restored, "nothing installed")
		})
	}
	_, err := NewTracker(time.Minute).RestoreState([]byte(stateMagic + "\x03\x00"))
	require.ErrorContains(t, err, "stored progress state has version 3, this receiver reads versions 1 and 2")
	require.False(t, errors.Is(err, ErrStateCorrupt), "another version is not corruption")

	n, err := NewTracker(time.Minute).RestoreState([]byte(stateMagic + "\x01\x00"))
	require.NoError(t, err)
	require.Zero(t, n)
}

// Every single flipped bit of a saved state refuses it whole (its checksum
// or its magic no longer match): no clock is restored otherwise than saved.
func TestEveryBitFlipRefusesTheState(t *testing.T) {
	data := stalledTracker(t).EncodeState()
	for bit := range 8 * len(data) {
		damaged := bytes.Clone(data)
		damaged[bit/8] ^= 1 << (bit % 8)
		tr := NewTracker(time.Minute)
		n, err := tr.RestoreState(damaged)
		require.Error(t, err, "bit %d", bit)
		require.Zero(t, n, "bit %d", bit)
		require.Nil(t, tr.restored, "bit %d: nothing installed", bit)
	}
}

// State saved before checksums (version 1: the same layout without one)
// still restores.
func TestUncheckedStateRestores(t *testing.T) {
	data := stalledTracker(t).EncodeState()
	require.Equal(t, byte(stateVersion), data[len(stateMagic)])
	old := bytes.Clone(data[:len(data)-4])
	old[len(stateMagic)] = stateVersionUnchecked
	restored := NewTracker(time.Minute)
	n, err := restored.RestoreState(old)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, data, restored.EncodeState(), "saved again with a checksum")
}

// The storage extension saves on its own goroutine while scrapes observe:
// run with -race.
func TestEncodeStateWhileObserving(t *testing.T) {
	tr := NewTracker(time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			if _, err := decodeState(tr.EncodeState()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for sec := 0.0; sec < 200; sec++ {
		scrape(tr, sec, lagsOf("g", "t", pair{10, 50}, pair{int64(sec), int64(sec) + 5}))
	}
	<-done
}
