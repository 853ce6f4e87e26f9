package accuracy

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
// estimate, and the truth at the same instant.
type Point struct {
	At        int64
	Group     int
	Truth     float64
	Estimate  float64
	Estimated bool
}

// Series is one method's scrapes over one run, and what it asked of Kafka.
type Series struct {
	Method MethodSpec
	Points []Point // scrape by scrape, group by group
	Cost   Cost    // summed over the run
	Groups int     // the groups on the partition
}

// Run runs every method over the shape's scored stretch at the interval:
// each is told of every end-offset sample and every scrape, at the same
// instants, with the same reads, and scored against the timeline.
func Run(shape Shape, iv Interval, methods []MethodSpec, seed uint64) []Series {
	log, commits := shape.Build(seed)
	ms := make([]Method, len(methods))
	out := make([]Series, len(methods))
	for i, spec := range methods {
		ms[i] = spec.New(iv.Sampling)
		out[i].Method, out[i].Groups = spec, len(commits)
	}
	start, end := Epoch+shape.History, shape.End()
	nextSample := start
	for at := start + scrapePhase; at < end; at += iv.Scrape {
		for ; nextSample < at; nextSample += iv.Sampling {
			r := Read{End: log.EndAt(nextSample), Sent: nextSample, Received: nextSample + Latency}
			for _, m := range ms {
				m.Sample(r)
			}
		}
		s := Scrape{Read: Read{End: log.EndAt(at), Sent: at, Received: at + Latency}, Log: log}
		var groups []int // the groups that have committed, as in s.Committed
		for g, c := range commits {
			if offset, ok := c.At(at); ok {
				s.Committed = append(s.Committed, offset)
				groups = append(groups, g)
			}
		}
		if len(groups) == 0 {
			continue
		}
		for i, m := range ms {
			e := m.Scrape(s)
			for j, g := range groups {
				out[i].Points = append(out[i].Points, Point{At: s.Received, Group: g, Truth: truthAt(log, s, s.Committed[j]),
					Estimate: e.Groups[j].TimeLag, Estimated: e.Groups[j].OK})
			}
			out[i].Cost.add(e.Cost)
		}
	}
	return out
}

func (c *Cost) add(o Cost) {
	c.OffsetReads += o.OffsetReads
	c.RecordReads += o.RecordReads
	c.FetchBytes += o.FetchBytes
	c.SharedReads += o.SharedReads
	c.SharedBytes += o.SharedBytes
}

// Observed is a scrape made elsewhere (by a receiver against a cluster):
// when its end offsets were read, and the committed and end offsets it saw.
type Observed struct {
	At             int64
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
		s := Scrape{Committed: []int64{o.Committed}, Read: Read{End: o.End, Sent: o.At - Latency, Received: o.At}, Log: log}
		e := m.Scrape(s)
		out = append(out, Point{At: o.At, Truth: truthAt(log, s, o.Committed), Estimate: e.Groups[0].TimeLag, Estimated: e.Groups[0].OK})
	}
	return out
}

// truthAt is the true time lag at a scrape of a group committed at
// committed: since the record there was appended, or 0 when the group has
// read up to the end.
func truthAt(log *Timeline, s Scrape, committed int64) float64 {
	if committed >= s.End {
		return 0
	}
	appended, _ := log.AppendTime(committed)
	return float64(s.Received-appended) / 1e9
}
