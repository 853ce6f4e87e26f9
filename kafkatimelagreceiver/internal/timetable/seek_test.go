package timetable

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// TestViewBracketsAgreeWithFreshOnes: a View's brackets go on from where
// the last one on the same table stopped (Table.bracket); in whatever order
// they come (rising as a scrape asks them, falling, shuffled, two tables
// taking turns), each is the bracket a search from the table's start
// finds (Store.Bracket). The tables are long enough to hold marks, with
// flat runs (a partition not written between samples) among rising ones.
func TestViewBracketsAgreeWithFreshOnes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 55))
	t0 := time.Unix(1_700_000_000, 0)
	for round := range 40 {
		store := NewStore(512, 0, nil)
		tps := []kafka.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}}
		wanted := map[kafka.TopicPartition]struct{}{tps[0]: {}, tps[1]: {}}
		store.Track(wanted, t0, 0)
		reads := 2 + rng.IntN(300)
		ends := map[kafka.TopicPartition]int64{tps[0]: 0, tps[1]: 0}
		at := t0
		for range reads {
			at = at.Add(time.Duration(1+rng.IntN(7000)) * time.Millisecond)
			for _, tp := range tps {
				if rng.IntN(3) > 0 {
					ends[tp] += int64(rng.IntN(6))
				}
			}
			store.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tps[0]: ends[tps[0]], tps[1]: ends[tps[1]]}, Sent: at, Received: at})
		}
		refs := store.Refs(tps)
		upper := map[Ref]Sample{refs[0]: {Offset: ends[tps[0]] + 3, At: at.Add(time.Second).UnixNano()}, refs[1]: {Offset: ends[tps[1]] + 3, At: at.Add(time.Second).UnixNano()}}
		type query struct {
			ref Ref
			c   int64
		}
		var rising []query
		for _, ref := range refs {
			for c := int64(-1); c <= upper[ref].Offset+1; c++ {
				rising = append(rising, query{ref, c})
			}
		}
		want := map[query]Bracket{}
		wantOK := map[query]bool{}
		for _, q := range rising {
			want[q], wantOK[q] = store.Bracket(q.ref, q.c, upper[q.ref])
		}
		falling := slices.Clone(rising)
		slices.Reverse(falling)
		shuffled := slices.Clone(rising)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var turns []query // the two tables' rising offsets, interleaved
		half := len(rising) / 2
		for i := range half {
			turns = append(turns, rising[i], rising[half+i])
		}
		orders := map[string][]query{"rising": rising, "falling": falling, "shuffled": shuffled, "taking turns": turns}
		for name, order := range orders {
			store.Locked(func(v View) {
				for _, q := range order {
					got, ok := v.Bracket(q.ref, q.c, upper[q.ref])
					if got != want[q] || ok != wantOK[q] {
						t.Fatalf("round %d (%d reads), %s: bracket of %d = %+v, %v; a fresh search: %+v, %v", round, reads, name, q.c, got, ok, want[q], wantOK[q])
					}
				}
			})
		}
	}
}
