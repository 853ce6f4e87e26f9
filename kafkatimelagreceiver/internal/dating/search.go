package dating

import (
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// The time index answers, for a time T, the first record from the log
// start whose timestamp is at or after T, f(T), with that record's own
// timestamp. f is non-decreasing in T, and an answer proves that the
// records below f(T) carry timestamps before T, whatever their order. So
// once f(L) <= c < f(U), the largest timestamp of the records up to c
// lies in [L, U): where timestamps never go back, that is c's own. Where
// they do (CreateTime from producers whose clocks differ, or set by the
// application), the search dates c by the latest timestamp up to it, which
// is no earlier than c's own and, clocks being right, no later than c's
// append; the points it answers are those records too, so that the
// partition's clock measured from them is the one of the latest stamps,
// and the date is clamped to c's bracket like any other.
//
// Every answer is an exact point (an offset and its record's timestamp)
// and bounds every target of its partition at once. A round asks, per
// partition, one time for each target not yet within its precision
// (target.nextTime): first the table's guess; from one side, the time the
// partition's rate in its table puts the target at from the nearest
// point, pushed past the known end by a step that grows while the other
// end stays unknown; from both sides, the straight line through what is
// known (a steady partition's stamps follow it), the millisecond after the
// latest timestamp below (records of one batch share it), or the middle.

// MaxIndexRounds caps a scrape's rounds of time-index requests. The first
// round asks the table's guess, the next ones the line through what was
// answered: a steady or batched partition is dated in two or three rounds,
// and ten narrow a record hours old to its precision by halving.
const MaxIndexRounds = 10

// MaxAsksPerPartition caps the times a partition is asked in one round:
// the request names a partition once, so each time past the first costs
// its leader one more request of the round, however few partitions need
// it.
const MaxAsksPerPartition = 8

// cutOffShare: a search its rounds left open still dates its record by the
// middle of its interval when that is narrower than this share of the
// record's age (the accuracy target's relative bound, 1 %).
const cutOffShare = 100

// partitionSearch is one partition's search.
type partitionSearch struct {
	tp kafka.TopicPartition
	// scrapeMillis is when the scrape read the end offsets: a search cut
	// off by its round cap still dates its record by the middle of its
	// interval when that is narrower than the record's age then over
	// cutOffShare (the accuracy target's bound).
	scrapeMillis int64
	targets      []target // ascending by offset
	answers      []kafka.TimePoint
	asked        askedTimes
	// failed: the index could not be searched (an error named the
	// partition); belowStart: a target lies below the log start (the
	// first record, f(0), is past it): retention deleted it.
	failed, belowStart bool
}

// searching tells whether the partition is still searched.
func (ps *partitionSearch) searching() bool { return !ps.failed && !ps.belowStart }

// indexSearch is a scrape's search of the time index: answers in (take),
// asks out (asks), no I/O. It counts its rounds and asks nothing past
// MaxIndexRounds.
type indexSearch struct {
	parts  []*partitionSearch
	byTP   map[kafka.TopicPartition]*partitionSearch
	rounds int
	// open, askers, runs and stamps are asks' scratch space, reused from one
	// partition to the next.
	open   []*target
	askers []asker
	runs   []int
	stamps []int64
}

// askedTimes are the times a partition was asked, few (at most
// MaxIndexRounds x MaxAsksPerPartition): a slice searched end to end costs
// less than a map a partition.
type askedTimes []int64

func (a askedTimes) has(at int64) bool { return slices.Contains(a, at) }

// newIndexSearch makes the search of the plan's partitions, each listed
// once (indexTargets), their targets sorted by offset.
func newIndexSearch(searches []partitionSearch) *indexSearch {
	s := &indexSearch{parts: make([]*partitionSearch, len(searches)), byTP: make(map[kafka.TopicPartition]*partitionSearch, len(searches))}
	byOffset := func(a, b target) int { return int(min(max(a.Offset-b.Offset, -1), 1)) }
	// Every partition's times asked and answers start in room of their
	// own in two arrays, as much as a search of its targets usually
	// takes: grown point by point, thousands of partitions each allocate
	// several times.
	total := 0
	for i := range searches {
		total += answersRoom(len(searches[i].targets))
	}
	answers := make([]kafka.TimePoint, total)
	asked := make([]int64, total)
	at := 0
	for i := range searches {
		ps := &searches[i]
		if !slices.IsSortedFunc(ps.targets, byOffset) {
			slices.SortFunc(ps.targets, byOffset)
		}
		room := answersRoom(len(ps.targets))
		ps.answers = answers[at : at : at+room]
		ps.asked = asked[at : at : at+room]
		at += room
		s.parts[i] = ps
		s.byTP[ps.tp] = ps
	}
	return s
}

// answersRoom is the times asked and answers a partition's search of n
// targets holds before its slices grow: about what a search takes when its
// targets share batches (17 for 21 at 1,000,000 moving pairs), a few for
// a lone target, and no more than three full rounds.
func answersRoom(n int) int { return min(2*n+2, 3*MaxAsksPerPartition) }

// asks are the times of the next round: per partition still searching,
// those of its askers among the targets not yet within their precision,
// up to MaxAsksPerPartition, the lowest offsets first. None once
// MaxIndexRounds rounds were asked.
func (s *indexSearch) asks() []kafka.PartitionTimes {
	if s.rounds == MaxIndexRounds {
		return nil
	}
	var asks []kafka.PartitionTimes
	// The round's times, one stretch a partition: the asks hold them
	// until take.
	all := make([]int64, 0, MaxAsksPerPartition*len(s.parts))
	for _, ps := range s.parts {
		if !ps.searching() {
			continue
		}
		open := s.open[:0] // ascending by offset, as ps.targets
		for i := range ps.targets {
			if t := &ps.targets[i]; !t.converged() {
				open = append(open, t)
			}
		}
		s.open = open
		if len(open) == 0 {
			// Every target is within its precision: nothing to ask, and
			// its answers need not be gone over again (a search's later
			// rounds ask a few partitions of thousands).
			continue
		}
		first := len(all)
		var spacing int64
		spacing, s.stamps = ps.stampSpacing(s.stamps[:0])
		s.askers = askers(s.askers[:0], &s.runs, open, spacing)
		for _, a := range s.askers {
			if len(all)-first == MaxAsksPerPartition {
				break
			}
			t := a.target
			at, ok := t.nextTime(ps.asked, a.walk)
			if !ok {
				// Every time that could narrow it was asked: it cannot
				// narrow further from here.
				t.precision = max(t.precision, t.hi-t.lo)
				continue
			}
			if !slices.Contains(all[first:], at) {
				all = append(all, at)
			}
		}
		times := all[first:len(all):len(all)]
		ps.asked = append(ps.asked, times...)
		if len(times) > 0 {
			asks = append(asks, kafka.PartitionTimes{TopicPartition: ps.tp, Millis: times})
		}
	}
	if len(asks) > 0 {
		s.rounds++
	}
	return asks
}

// asker is a target that asks this round; walk: the lowest of a run
// dense in targets (denseRun).
type asker struct {
	*target
	walk bool
}

// denseRun tells whether the targets of a run (between the same two
// exact points) are at least half the records between those points: then
// every batch between them holds targets, so each must be found anyway,
// and finding them one after the other from below (batchEndUnasked) asks
// once a batch, where the line would ask between batches and find the
// same one twice. A run of few targets among many records is left to the
// line, which skips the records no one needs.
func denseRun(run []*target) bool {
	below, above := run[0].below, run[0].above
	return below.found() && above.found() && 2*int64(len(run)) >= above.Offset-below.Offset
}

// oneBatchBetween tells whether the records between a run's two exact
// points hold at most one batch the answers have not found, by time: two
// would need three of the partition's spacings between the points'
// stamps (stampSpacing, 0: unknown). Then the walk's ask alone finds it,
// and any other ask of the run would find the same batch.
func oneBatchBetween(t *target, spacing int64) bool {
	return spacing > 0 && t.below.found() && t.above.found() && t.above.TimestampMillis-t.below.TimestampMillis < 3*spacing
}

// stampSpacing is the least time between two stamps the partition's
// answers found, in scratch: its batches come about that far apart, as far
// as the answers show; 0 while they show fewer than two stamps.
func (ps *partitionSearch) stampSpacing(scratch []int64) (int64, []int64) {
	for _, a := range ps.answers {
		if a.Found {
			scratch = append(scratch, a.TimestampMillis)
		}
	}
	slices.Sort(scratch)
	var least int64
	for i := 1; i < len(scratch); i++ {
		if d := scratch[i] - scratch[i-1]; d > 0 && (least == 0 || d < least) {
			least = d
		}
	}
	return least, scratch
}

// askers appends to out the targets of open (ascending by offset) that ask
// this round, in that order: targets between the same two answers learn
// the same from the next, so that of each run of them only a few spread
// across it ask (the lowest and the highest at least, more while few runs
// share the round's asks; the walk alone in a dense run with room for one
// batch, oneBatchBetween by spacing, the partition's stampSpacing), and the
// answers between them split the rest the round after. runs is scratch
// space: where each run starts in open.
func askers(out []asker, runs *[]int, open []*target, spacing int64) []asker {
	starts := (*runs)[:0]
	for i, t := range open {
		if i == 0 || open[i-1].lo != t.lo || open[i-1].hi != t.hi {
			starts = append(starts, i)
		}
	}
	*runs = starts
	for r, start := range starts {
		end := len(open)
		if r+1 < len(starts) {
			end = starts[r+1]
		}
		run := open[start:end]
		// A run of targets between the same two answers: those spread
		// across it ask, their answers splitting the rest.
		n := min(len(run), max(2, MaxAsksPerPartition/len(starts)))
		dense := denseRun(run)
		if dense && oneBatchBetween(run[0], spacing) {
			n = 1
		}
		// n <= len(run): the indices rise strictly, each target asks once.
		for i := range n {
			out = append(out, asker{target: run[i*(len(run)-1)/max(n-1, 1)], walk: i == 0 && dense})
		}
	}
	return out
}

// take applies a round's answers. Partitions asked but not answered
// failed.
func (s *indexSearch) take(asks []kafka.PartitionTimes, points kafka.TimePoints) {
	for _, ask := range asks {
		ps := s.byTP[ask.TopicPartition]
		got := points[ask.TopicPartition]
		if len(got) == 0 {
			ps.failed = true
			continue
		}
		for _, p := range got {
			ps.apply(p)
		}
	}
}

func (ps *partitionSearch) apply(a kafka.TimePoint) {
	ps.answers = append(ps.answers, a)
	for i := range ps.targets {
		t := &ps.targets[i]
		if a.Found && a.AtMillis == 0 && a.Offset > t.Offset {
			ps.belowStart = true
		}
		t.apply(a)
	}
}

// results are what the search found: the exact points the index answered
// (each a record's offset and its own timestamp, which measure the
// partition's clock against its table like records read), and the targets
// dated: bounded on both sides, by the middle of their interval. Both carry
// the partition's clock (clocks.TimeIndexClock). Partitions whose index could
// not be searched, or with a target below the log start, and the targets
// the rounds left open on one side or wider than their cut-off, are in
// fallback, with their offsets: a record read answers those, and finds the
// log start.
func (s *indexSearch) results() (points, dated kafka.RecordReads, fallback []kafka.PartitionOffsets) {
	points, dated = make(kafka.RecordReads, len(s.parts)), make(kafka.RecordReads, len(s.parts))
	for _, ps := range s.parts {
		w := kafka.PartitionOffsets{TopicPartition: ps.tp}
		if !ps.searching() {
			for _, t := range ps.targets {
				w.Offsets = append(w.Offsets, t.Offset)
			}
			fallback = append(fallback, w)
			continue
		}
		var found []kafka.RecordRead
		for _, a := range ps.answers {
			if a.Found && !slices.ContainsFunc(found, func(r kafka.RecordRead) bool { return r.Offset == a.Offset }) {
				found = append(found, indexRead(a.Offset, a.Offset, a.TimestampMillis))
			}
		}
		if len(found) > 0 {
			points[ps.tp] = found
		}
		var datedHere []kafka.RecordRead
		for _, t := range ps.targets {
			open := t.lo == noLower || t.hi == noUpper || t.hi-t.lo > max(t.precision, (ps.scrapeMillis-t.lo)/cutOffShare)
			if open || t.ExactOnly && !(t.below.found() && t.below.Offset == t.Offset) {
				// On a compacted topic only the record's own point proves
				// it exists: else a read finds the next one.
				w.Offsets = append(w.Offsets, t.Offset)
				continue
			}
			// [lo, hi) in milliseconds: the middle of what it allows.
			if datedHere == nil {
				datedHere = make([]kafka.RecordRead, 0, len(ps.targets))
			}
			datedHere = append(datedHere, indexRead(t.Offset, t.Offset, t.lo+(t.hi-1-t.lo)/2))
		}
		if len(datedHere) > 0 {
			dated[ps.tp] = datedHere
		}
		if len(w.Offsets) > 0 {
			fallback = append(fallback, w)
		}
	}
	return points, dated, fallback
}
