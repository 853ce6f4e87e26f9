package accuracy

import (
	"math"
	"math/rand/v2"
	"slices"
)

const (
	second = int64(1e9)
	minute = 60 * second
	hour   = 60 * minute
)

// Shape is a partition's traffic and its group's consumption: a timeline
// from Epoch, of which the first History passes before the methods start
// watching and the next Duration is scored.
type Shape struct {
	Key, Name   string
	Description string
	History     int64
	Duration    int64
	// PlotFrom and PlotSpan, when PlotSpan is set, are the stretch the
	// shape's plot shows, from the start of watching: a shape whose lags
	// last seconds is plotted over an hour, not its whole run.
	PlotFrom, PlotSpan int64
	// Partitions is how many partitions the topic has (0: one), each
	// with its own producers' traffic, read by the same groups, whose
	// rebalances stop them on every partition at once.
	Partitions int
	// OneInstance: each method reads every partition as one instance
	// would, this receiver one sampler and one scrape for all of them, its
	// per-scrape budgets shared (MethodSpec.NewPartitions); otherwise a
	// fresh instance runs each partition.
	OneInstance bool
	// Realistic: records are stamped and delivered as real producers do
	// (ProducerModel), not at their append instants.
	Realistic bool
	// RandomPhases: the scrapes fall at a random phase to our samples, and
	// each row that polls on a timer of its own (kafka-lag-exporter, klag,
	// klag-exporter) polls at a random phase to the scrapes, which see its
	// last poll's values, as a Prometheus scrape of an exporter does;
	// otherwise scrapes come a quarter second after a sample and those rows
	// poll at the scrapes.
	RandomPhases bool
	build        func(rng *rand.Rand, s *Shape, group *rand.Rand) (*Timeline, []*Commits)
}

// Build makes the shape's timeline and its groups' commits on partition
// 0, the same for the same seed.
func (s *Shape) Build(seed uint64) (*Timeline, []*Commits) { return s.BuildPartition(seed, 0) }

// BuildPartition makes partition p's timeline and its groups' commits, the
// same for the same seed; the groups' own events (rebalances) are the
// seed's, whatever the partition.
func (s *Shape) BuildPartition(seed uint64, p int) (*Timeline, []*Commits) {
	return s.build(rand.New(rand.NewPCG(seed, 0x6b61666b61+uint64(p)<<32)), s, rand.New(rand.NewPCG(seed, 0x67726f7570)))
}

// PartitionCount is how many partitions the shape runs.
func (s *Shape) PartitionCount() int { return max(1, s.Partitions) }

// End is when the scored stretch ends.
func (s *Shape) End() int64 { return Epoch + s.History + s.Duration }

// lingerInterval is how often a busy producer sends a batch.
const lingerInterval = 100 * int64(1e6)

// produce appends, every lingerInterval from from to to, a batch of a
// Poisson number of records at rate(t) records per second.
func produce(tl *Timeline, rng *rand.Rand, from, to int64, rate func(t int64) float64) {
	for t := from; t < to; t += lingerInterval {
		tl.Append(t+rng.Int64N(lingerInterval), poisson(rng, rate(t)*float64(lingerInterval)/1e9))
	}
}

// poisson draws a Poisson count of mean mean (a normal approximation for
// large means).
func poisson(rng *rand.Rand, mean float64) int64 {
	if mean <= 0 {
		return 0
	}
	if mean > 50 {
		return max(0, int64(math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	}
	limit, k, p := math.Exp(-mean), int64(0), rng.Float64()
	for p > limit {
		k++
		p *= rng.Float64()
	}
	return k
}

// consumer is a group's consumption: from from to to, every commitEvery it
// commits how far it got, reading at most capacity records per second
// (0: no limit) of those appended at least delay before. A reset at resetAt
// (when not 0) moves its position to resetTo.
type consumer struct {
	from, to    int64
	position    int64
	capacity    float64
	delay       int64
	commitEvery int64
	// commitRecords, when set, makes the group commit only once it has
	// read that many records since its last commit (checked every
	// commitEvery, its polls), not at every poll.
	commitRecords    int64
	resetAt, resetTo int64
	stallAt          int64 // when not 0: commits nothing new from then on
	// readCommitted: the group reads as read_committed (isolation.level),
	// up to the last stable offset, not the high watermark.
	readCommitted bool
	// rebalances are when the group stops, and for how long: it commits
	// nothing then, and starts again from its last commit.
	rebalances []pause
}

// pause is a stretch from at lasting for.
type pause struct{ at, lasting int64 }

// run commits as the consumer reads tl, its first commit at a random
// phase of its commit interval after from (rng).
func (c consumer) run(tl *Timeline, rng *rand.Rand) *Commits {
	commits := &Commits{}
	pos := float64(c.position)
	committed := c.position
	reset := c.resetAt != 0
	for t := c.from + rng.Int64N(c.commitEvery); t <= c.to; t += c.commitEvery {
		if c.stallAt != 0 && t >= c.stallAt {
			commits.Commit(t, int64(pos))
			break
		}
		if slices.ContainsFunc(c.rebalances, func(p pause) bool { return t >= p.at && t < p.at+p.lasting }) {
			continue
		}
		if reset && t >= c.resetAt {
			pos, reset = float64(c.resetTo), false
		}
		avail := float64(tl.EndAt(t - c.delay))
		if c.readCommitted {
			avail = float64(tl.StableAt(t - c.delay))
		}
		if c.capacity > 0 {
			pos = min(avail, pos+c.capacity*float64(c.commitEvery)/1e9)
		} else {
			pos = max(pos, avail)
		}
		if c.commitRecords > 0 && int64(pos)-committed < c.commitRecords {
			continue
		}
		committed = int64(pos)
		commits.Commit(t, committed)
	}
	return commits
}

// stoppedThenCatchingUp is a group 1 s behind, committing every 5 s, that
// stops at stop and restarts at restart from its last commit, or from the
// log start where retention deleted it (auto.offset.reset earliest),
// reading 60 records/s until it has caught up, up to end.
func stoppedThenCatchingUp(tl *Timeline, rng *rand.Rand, stop, restart, end int64) *Commits {
	commits := consumer{from: Epoch, to: restart, delay: second, commitEvery: 5 * second, stallAt: stop}.run(tl, rng)
	from := max(commits.offset[len(commits.offset)-1], tl.StartAt(restart))
	rest := consumer{from: restart, to: end, position: from, capacity: 60, delay: second, commitEvery: 5 * second}.run(tl, rng)
	for i := range rest.at {
		commits.Commit(rest.at[i], rest.offset[i])
	}
	return commits
}

// Shapes are the traffic shapes evaluated.
func Shapes() []Shape {
	const rate = 20.0 // records per second on a busy partition
	constant := func(int64) float64 { return rate }
	return []Shape{
		{
			Key: "steady", Name: "steady",
			Description: "20 records/s in Poisson batches every 100 ms; the group keeps up, 2 s behind, committing every 5 s",
			History:     hour, Duration: 6 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				produce(tl, rng, Epoch, s.End(), constant)
				return tl, []*Commits{consumer{from: Epoch, to: s.End(), delay: 2 * second, commitEvery: 5 * second}.run(tl, rng)}
			},
		},
		{
			Key: "groups", PlotFrom: hour, PlotSpan: hour, Name: "steady, six groups",
			Description: "the steady traffic read by six groups, 1, 2, 4, 8, 30 and 120 s behind, each committing every 5 s (the plot shows the first)",
			History:     hour, Duration: 6 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				produce(tl, rng, Epoch, s.End(), constant)
				var groups []*Commits
				for i, delay := range []int64{1, 2, 4, 8, 30, 120} {
					groups = append(groups, consumer{from: Epoch + int64(i)*700*int64(1e6), to: s.End(), delay: delay * second, commitEvery: 5 * second}.run(tl, rng))
				}
				return tl, groups
			},
		},
		{
			Key: "skew", PlotFrom: hour, PlotSpan: hour, Name: "steady, skewed clocks",
			Description: "the steady traffic from two producers, whose clocks are 1.5 s behind the broker's and 0.3 s ahead of it, each sending half the batches; the group keeps up, 2 s behind",
			History:     hour, Duration: 6 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				skews := []int64{-1500 * int64(1e6), 300 * int64(1e6)}
				for t := Epoch; t < s.End(); t += lingerInterval {
					at := t + rng.Int64N(lingerInterval)
					producer := rng.IntN(len(skews))
					tl.AppendStamped(int64(producer), at, at+skews[producer], poisson(rng, rate*float64(lingerInterval)/1e9))
				}
				return tl, []*Commits{consumer{from: Epoch, to: s.End(), delay: 2 * second, commitEvery: 5 * second}.run(tl, rng)}
			},
		},
		{
			Key: "diurnal", Name: "diurnal",
			Description: "a 24 h sine from 3.3 to 36 records/s (10x swing); the group reads at most 30 records/s, so it falls about an hour behind over the peak and catches up after",
			History:     hour, Duration: 24 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				produce(tl, rng, Epoch, s.End(), func(t int64) float64 {
					return rate * (1 + 9.0/11*math.Sin(2*math.Pi*float64(t-Epoch)/float64(24*hour)))
				})
				return tl, []*Commits{consumer{from: Epoch, to: s.End(), capacity: 30, delay: second, commitEvery: 5 * second}.run(tl, rng)}
			},
		},
		{
			Key: "bursty", PlotFrom: hour, PlotSpan: hour, Name: "bursty",
			Description: "bursts of 200 to 1,000 records appended at once, a Poisson process of one burst every 30 s on average; the group reads 100 records/s, committing every second",
			History:     30 * minute, Duration: 6 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				for t := Epoch; t < s.End(); t += int64(rng.ExpFloat64() * float64(30*second)) {
					tl.Append(t, 200+rng.Int64N(801))
				}
				return tl, []*Commits{consumer{from: Epoch, to: s.End(), capacity: 100, commitEvery: second}.run(tl, rng)}
			},
		},
		{
			Key: "sparse", PlotFrom: hour, PlotSpan: 3 * hour, Name: "sparse",
			Description: "one record every 1 to 10 minutes (uniform); the group polls every 2 minutes and commits what it read",
			History:     hour, Duration: 12 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				for t := Epoch; t < s.End(); t += minute + rng.Int64N(9*minute) {
					tl.Append(t, 1)
				}
				return tl, []*Commits{consumer{from: Epoch, to: s.End(), commitEvery: 2 * minute}.run(tl, rng)}
			},
		},
		{
			Key: "batch", PlotFrom: hour, PlotSpan: hour, Name: "batch",
			Description: "5,000 records with one timestamp every 5 minutes (a batch job); the group reads 200 records/s, committing every second",
			History:     30 * minute, Duration: 6 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				for t := Epoch; t < s.End(); t += 5 * minute {
					tl.Append(t+rng.Int64N(10*second), 5000)
				}
				return tl, []*Commits{consumer{from: Epoch, to: s.End(), capacity: 200, commitEvery: second}.run(tl, rng)}
			},
		},
		{
			Key: "outage", Name: "outage then surge",
			Description: "20 records/s; the producer is down for 30 minutes 2 h into the scored stretch, then sends its backlog at 200 records/s for 3 minutes; the group reads at most 60 records/s",
			History:     hour, Duration: 6 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				down := Epoch + s.History + 2*hour
				up := down + 30*minute
				produce(tl, rng, Epoch, s.End(), func(t int64) float64 {
					switch {
					case t >= down && t < up:
						return 0
					case t >= up && t < up+3*minute:
						return rate + 200
					}
					return rate
				})
				return tl, []*Commits{consumer{from: Epoch, to: s.End(), capacity: 60, delay: second, commitEvery: 5 * second}.run(tl, rng)}
			},
		},
		{
			Key: "idle", Name: "idle, stalled group",
			Description: "20 records/s for the first 2 h, then nothing; the group stopped 30 minutes in and never commits again (watching starts 3 h in, on an idle topic)",
			History:     3 * hour, Duration: 6 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				produce(tl, rng, Epoch, Epoch+2*hour, constant)
				return tl, []*Commits{consumer{from: Epoch, to: s.End(), delay: second, commitEvery: 5 * second, stallAt: Epoch + 30*minute}.run(tl, rng)}
			},
		},
		{
			Key: "catchup", Name: "catching up",
			Description: "20 records/s; the group stopped 1 h in and restarts when watching starts (4 h in), 3 h behind, reading 60 records/s until it has caught up",
			History:     4 * hour, Duration: 4 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				produce(tl, rng, Epoch, s.End(), constant)
				return tl, []*Commits{stoppedThenCatchingUp(tl, rng, Epoch+hour, Epoch+s.History, s.End())}
			},
		},
		{
			Key: "compacted", Name: "compacted, catching up",
			Description: "a compacted topic (a changelog), 20 records/s, whose log cleaner removed runs of about ten batches, half of those written more than 10 minutes before watching starts; the group stopped 1 h in and restarts when watching starts (2 h in), an hour behind, reading 60 records/s through the compacted history until it has caught up: its committed offsets fall in gaps, where the next record left is the one it waits for",
			History:     2 * hour, Duration: 2 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{Compacted: true}
				cleaned := Epoch + s.History - 10*minute
				removed := false
				for t := Epoch; t < s.End(); t += lingerInterval {
					at := t + rng.Int64N(lingerInterval)
					if rng.IntN(10) == 0 {
						removed = !removed
					}
					tl.AppendBatch(Batch{At: at, Visible: at, FirstStamp: at, LastStamp: at, SentFirst: at, SentLast: at,
						Records: poisson(rng, constant(t)*float64(lingerInterval)/1e9), Removed: removed && at < cleaned})
				}
				return tl, []*Commits{stoppedThenCatchingUp(tl, rng, Epoch+hour, Epoch+s.History, s.End())}
			},
		},
		{
			Key: "retention", Name: "retention overtaking a group",
			Description: "20 records/s on a topic keeping an hour (retention.ms 1 h, segment.ms 10 minutes, deletion checked every 5 minutes: log.retention.check.interval.ms); the group, 1 s behind, stops 15 minutes into the scored stretch, retention deletes the segment holding its committed offset about 70 minutes later and a segment every 10 minutes after, and the group restarts 2 h into the scored stretch from the log start (auto.offset.reset earliest, its committed offset out of range), reading 60 records/s until it has caught up",
			History:     hour, Duration: 3 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				produce(tl, rng, Epoch, s.End(), constant)
				tl.Retain(Retention{Ms: hour, SegmentMs: 10 * minute, CheckEvery: 5 * minute, Phase: rng.Int64N(5 * minute)}, Epoch, s.End())
				return tl, []*Commits{stoppedThenCatchingUp(tl, rng, Epoch+s.History+15*minute, Epoch+s.History+2*hour, s.End())}
			},
		},
		{
			Key: "replay", Name: "replay",
			Description: "20 records/s; the group keeps up until 2 h into the scored stretch, is then reset to the offset of 3 h before (older than anything watched) and reads 60 records/s until it has caught up",
			History:     hour, Duration: 6 * hour,
			build: func(rng *rand.Rand, s *Shape, _ *rand.Rand) (*Timeline, []*Commits) {
				tl := &Timeline{}
				produce(tl, rng, Epoch, s.End(), constant)
				resetAt := Epoch + s.History + 2*hour
				return tl, []*Commits{consumer{from: Epoch, to: s.End(), capacity: 60, delay: second, commitEvery: 5 * second,
					resetAt: resetAt, resetTo: tl.EndAt(resetAt - 3*hour)}.run(tl, rng)}
			},
		},
	}
}
