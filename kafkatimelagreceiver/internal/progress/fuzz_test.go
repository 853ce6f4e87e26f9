package progress

import (
	"bytes"
	"errors"
	"maps"
	"testing"
	"time"
)

// FuzzDecodeState feeds stored progress state that may be corrupt,
// truncated or hostile, as a storage extension could return after a crash
// or an upgrade. decodeState must reject it whole or return clocks that
// make sense (a named pair, a partition and offset in range, a running
// clock), that RestoreState installs alike, and that mean the same after
// encoding. Seed corpus: testdata/fuzz/FuzzDecodeState; explore with
// `go test -run '^$' -fuzz FuzzDecodeState ./kafkatimelagreceiver/internal/progress/`.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(stateMagic + "\x01\x00"))
	f.Add(encodeState(map[pairKey]stuckClock{
		{group: "g", topic: "t", partition: 0}:  {offset: 10, since: 1},
		{group: "g", topic: "t", partition: 7}:  {offset: 0, since: 1 << 62},
		{group: "g", topic: "u", partition: 1}:  {offset: 1 << 40, since: 5},
		{group: "h", topic: "t", partition: 31}: {offset: 3, since: 9},
	}))
	f.Fuzz(func(t *testing.T, data []byte) {
		clocks, err := decodeState(data)
		tr := NewTracker(time.Minute)
		n, restoreErr := tr.RestoreState(data)
		if (restoreErr == nil) != (err == nil) || n != len(clocks) {
			t.Fatalf("RestoreState gave %d clocks (%v), decodeState %d (%v)", n, restoreErr, len(clocks), err)
		}
		if err != nil {
			if clocks != nil || tr.restored != nil {
				t.Fatalf("clocks kept despite %v", err)
			}
			if !errors.Is(err, ErrStateCorrupt) && !bytes.HasPrefix(data, []byte(stateMagic)) {
				t.Fatalf("unexpected kind of error: %v", err)
			}
			return
		}
		for key, c := range clocks {
			if key.group == "" || key.topic == "" || key.partition < 0 || c.offset < 0 || c.since <= 0 {
				t.Fatalf("decoded %+v: %+v", key, c)
			}
		}
		// The input may list pairs in any order and pad its varints: what
		// it means must survive encoding, and a tracker that restored it
		// must save the same.
		encoded := encodeState(clocks)
		again, err := decodeState(encoded)
		if err != nil || !maps.Equal(again, clocks) {
			t.Fatalf("decoded state does not survive encoding: %v\n%v\n%v", err, clocks, again)
		}
		if !bytes.Equal(tr.EncodeState(), encoded) {
			t.Fatal("a restored tracker saves other clocks than it restored")
		}
	})
}
