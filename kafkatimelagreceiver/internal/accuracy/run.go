package accuracy

import "math/rand/v2"

// Latency is how long each simulated request takes: the broker answers at
// the instant it is sent, the answer arrives Latency later.
const Latency = 2 * int64(1e6)

// scrapePhase keeps scrapes off the sampling instants, as two independent
// timers are.
const scrapePhase = 250 * int64(1e6)

// Interval is a sampling interval and the scrape (collection) interval run
// with it.
type Interval struct {
	Sampling, Scrape int64
	Default          bool // the receiver's default sampling interval
}

// Intervals are the sampling intervals evaluated: 1 s, 10 s (the default)
// and 60 s, scraped every 30 s (the default collection interval), or every
// 60 s when sampling is that slow.
func Intervals() []Interval {
	return []Interval{
		{Sampling: second, Scrape: 30 * second},
		{Sampling: 10 * second, Scrape: 30 * second, Default: true},
		{Sampling: 60 * second, Scrape: 60 * second},
	}
}

// Point is one group's time lag at one scrape of one method: the
// estimate, and the truths at the same instant: since the record was
// appended (Truth) and since it was sent (TruthCreate, its CreateTime on a
// true clock).
type Point struct {
	At          int64
	Partition   int
	Group       int
	Truth       float64
	TruthCreate float64
	Estimate    float64
	Estimated   bool
}

// Series is one method's scrapes over one run, and what it asked of Kafka.
type Series struct {
	Method MethodSpec
	Points []Point // scrape by scrape, group by group, partition after partition
	Cost   Cost    // summed over the run
	Groups int     // the groups on the partition
	// Partitions is how many partitions the run's points and cost are of.
	Partitions int
}

// Run runs every method over the shape's scored stretch at the interval,
// partition by partition (a fresh method for each: none of them shares
// anything between partitions): each is told of every end-offset sample
// and every scrape, at the same instants, with the same reads, and scored
// against the timeline. A method that starts warm (MethodSpec.Warm) is
// told of them for that long before the scored stretch.
func Run(shape Shape, iv Interval, methods []MethodSpec, seed uint64) []Series {
	out := make([]Series, len(methods))
	for i, spec := range methods {
		out[i].Method, out[i].Partitions = spec, shape.PartitionCount()
	}
	if shape.OneInstance {
		runTogether(shape, iv, methods, seed, out)
		return out
	}
	for p := range shape.PartitionCount() {
		runPartition(shape, p, iv, methods, seed, out)
	}
	return out
}

func runPartition(shape Shape, p int, iv Interval, methods []MethodSpec, seed uint64, out []Series) {
	log, commits := shape.BuildPartition(seed, p)
	ms := make([]Method, len(methods))
	warmest := int64(0)
	for i, spec := range methods {
		ms[i] = spec.New(iv.Sampling)
		out[i].Groups = len(commits)
		warmest = max(warmest, spec.Warm)
	}
	start, end := Epoch+shape.History, shape.End()
	from := start - (warmest+iv.Scrape-1)/iv.Scrape*iv.Scrape
	watching := func(i int, at int64) bool { return at >= start-methods[i].Warm }
	phase, polls := scrapePhase, timers(shape, ms, from, seed, iv)
	if shape.RandomPhases {
		phase = rand.New(rand.NewPCG(seed, 0x7363726170)).Int64N(iv.Sampling)
	}
	scrapeAt := func(at int64) (Scrape, []int) { return scrapeOf(log, commits, at) }
	nextSample := from
	for at := from + phase; at < end; at += iv.Scrape {
		for ; nextSample < at; nextSample += iv.Sampling {
			r := Read{End: log.EndAt(nextSample), Sent: nextSample, Received: nextSample + Latency, Start: log.StartAt(nextSample)}
			for i, m := range ms {
				if watching(i, nextSample) {
					m.Sample(r)
				}
			}
		}
		for _, t := range polls {
			for ; t.next < at; t.next += t.every {
				if s, groups := scrapeAt(t.next); len(groups) > 0 && watching(t.method, t.next) {
					t.poll(s, groups, t.next >= start, &out[t.method].Cost)
				}
			}
		}
		s, groups := scrapeAt(at)
		if len(groups) == 0 {
			continue
		}
		for i, m := range ms {
			if !watching(i, at) {
				continue
			}
			var e Estimate
			if t := timerOf(polls, i); t != nil {
				e = t.report(s, groups)
			} else {
				e = m.Scrape(s)
			}
			if at < start {
				continue // warming up: not scored
			}
			for j, g := range groups {
				appended, sent := truthsAt(log, s, s.Committed[j])
				out[i].Points = append(out[i].Points, Point{At: s.Received, Partition: p, Group: g, Truth: appended, TruthCreate: sent,
					Estimate: e.Groups[j].TimeLag, Estimated: e.Groups[j].OK})
			}
			out[i].Cost.add(e.Cost)
		}
	}
}

func (c *Cost) add(o Cost) {
	c.OffsetReads += o.OffsetReads
	c.RecordReads += o.RecordReads
	c.FetchBytes += o.FetchBytes
	c.SharedReads += o.SharedReads
	c.SharedBytes += o.SharedBytes
	c.NearReads += o.NearReads
	c.NearBytes += o.NearBytes
	c.IndexReads += o.IndexReads
}

// Observed is a scrape made elsewhere (by a receiver against a cluster):
// when its end-offset read was sent (Sent; 0: Latency before At) and
// received (At), and the committed and end offsets it saw.
type Observed struct {
	At, Sent       int64
	Committed, End int64
}

// Replay runs a method over a log and scrapes observed elsewhere: samples
// every sampling interval from start, and the scrapes at their instants
// with the offsets they saw, each scored as Run scores its own.
func Replay(log *Timeline, start, sampling int64, scrapes []Observed, spec MethodSpec) []Point {
	m := spec.New(sampling)
	next := start
	var out []Point
	for _, o := range scrapes {
		for ; next < o.At-Latency; next += sampling {
			m.Sample(Read{End: log.EndAt(next), Sent: next, Received: next + Latency})
		}
		readSent := o.Sent
		if readSent == 0 {
			readSent = o.At - Latency
		}
		s := Scrape{Committed: []int64{o.Committed}, Read: Read{End: o.End, Sent: readSent, Received: o.At}, Log: log}
		e := m.Scrape(s)
		appended, sent := truthsAt(log, s, o.Committed)
		out = append(out, Point{At: o.At, Truth: appended, TruthCreate: sent, Estimate: e.Groups[0].TimeLag, Estimated: e.Groups[0].OK})
	}
	return out
}

// truthsAt are the true time lags at a scrape of a group committed at
// committed: since the next data record it consumes (at or after
// committed: transaction markers are not consumed; at or after the log
// start, where retention deleted its record: what it reads first with
// auto.offset.reset earliest) was appended, and since it was sent; 0 when
// it has consumed every data record below the end.
func truthsAt(log *Timeline, s Scrape, committed int64) (appended, sent float64) {
	next, ok := log.NextData(max(committed, s.Start), s.End)
	if !ok {
		return 0, 0
	}
	at, _ := log.AppendTime(next)
	sentAt, _ := log.Sent(next)
	return float64(s.Received-at) / 1e9, float64(s.Received-sentAt) / 1e9
}

// ownTimer is a polling row's own timer, where the shape puts it at a
// random phase (Shape.RandomPhases): every every from next it computes its
// time lags, kept by group for the scrapes between.
type ownTimer struct {
	method      int
	every, next int64
	compute     func(Scrape) Estimate
	values      map[int]GroupEstimate
}

// timers are the own timers of the rows that poll on one (a polled
// method), each at a random phase, where the shape asks for them.
func timers(shape Shape, ms []Method, from int64, seed uint64, iv Interval) []*ownTimer {
	if !shape.RandomPhases {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x706f6c6c))
	var out []*ownTimer
	for i, m := range ms {
		if p, ok := m.(*polled); ok {
			out = append(out, &ownTimer{method: i, every: p.poll, next: from + rng.Int64N(p.poll), compute: p.compute, values: map[int]GroupEstimate{}})
		}
	}
	return out
}

func timerOf(timers []*ownTimer, method int) *ownTimer {
	for _, t := range timers {
		if t.method == method {
			return t
		}
	}
	return nil
}

// poll computes the row's time lags at a poll; its requests count where
// they are scored.
func (t *ownTimer) poll(s Scrape, groups []int, scored bool, cost *Cost) {
	e := t.compute(s)
	for j, g := range groups {
		if j < len(e.Groups) {
			t.values[g] = e.Groups[j]
		}
	}
	if scored {
		cost.add(e.Cost)
	}
}

// report is what a scrape sees of the row: its last poll's values.
func (t *ownTimer) report(s Scrape, groups []int) Estimate {
	e := Estimate{At: s.Received}
	for _, g := range groups {
		e.Groups = append(e.Groups, t.values[g])
	}
	return e
}
