package accuracy

import (
	"cmp"
	"math"
	"slices"
)

// The Datadog Agent kafka_consumer check's defaults: checks every 15 s
// (the Agent's min_collection_interval); data_streams_enabled false, which
// leaves estimated_consumer_lag unsent; with it set, a cache of
// timestamp_history_size 1,000 high watermarks a partition, and a
// dating below the cache's oldest point extrapolated at most 600 s further
// back (LAG_EXTRAPOLATION_LIMIT_SECONDS). The simulation checks at its
// scrapes, every 30 s.
const (
	DatadogCheckEvery       = 15 * second
	DatadogCachePoints      = 1000
	datadogExtrapolateLimit = 600 * second
)

// datadogOff is the check at its defaults: it reads the high watermarks
// (for its offset lag) and sends no time lag.
type datadogOff struct{}

func newDatadogDefaults() Method { return datadogOff{} }

func (datadogOff) Sample(Read) {}

func (datadogOff) Scrape(s Scrape) Estimate {
	return Estimate{At: s.Received, Groups: make([]GroupEstimate, len(s.Committed)), Cost: Cost{OffsetReads: 1}}
}

// datadogMethod is the check with data_streams_enabled: each check's high
// watermark and the check's time in a cache by offset (a watermark seen
// again has its time moved to now; one below a cached offset clears the
// cache, a reset). A committed offset is dated by the line between the
// cached offsets either side of it, or the line through the oldest and
// newest when none is on one side, capped below the oldest at the
// extrapolation limit; its lag is the newest watermark's time minus that,
// unclamped. When the cache holds its size, the points below the
// group's committed offset but the nearest are dropped, and then the
// points whose loss moves the line least (Visvalingam–Whyatt, by the time
// interpolation would give them) until half the size remain, the oldest and
// newest always kept.
type datadogMethod struct {
	size  int
	cache []point // by offset
	cost  Cost
}

func newDatadog() Method { return &datadogMethod{size: DatadogCachePoints} }

func (m *datadogMethod) Sample(Read) {}

func (m *datadogMethod) Scrape(s Scrape) Estimate {
	m.cost.OffsetReads++
	m.add(point{offset: s.End, at: s.Received}, slices.Min(append([]int64{s.End}, s.Committed...)))
	e := Estimate{At: s.Received, Cost: m.cost}
	m.cost = Cost{}
	for _, c := range s.Committed {
		var g GroupEstimate
		if at, ok := m.date(c); ok {
			g = GroupEstimate{TimeLag: (float64(s.Received) - at) / 1e9, OK: true}
		}
		e.Groups = append(e.Groups, g)
	}
	return e
}

// add caches a check's high watermark; floor is the lowest committed
// offset of the partition's groups.
func (m *datadogMethod) add(p point, floor int64) {
	if k := len(m.cache); k > 0 && m.cache[k-1].offset > p.offset {
		m.cache = m.cache[:0]
	}
	if k := len(m.cache); k > 0 && m.cache[k-1].offset == p.offset {
		m.cache[k-1].at = p.at
	} else {
		m.cache = append(m.cache, p)
	}
	if len(m.cache) < m.size {
		return
	}
	below := 0
	for below < len(m.cache) && m.cache[below].offset < floor {
		below++
	}
	if below > 1 {
		m.cache = slices.Delete(m.cache, 0, below-1) // the nearest below the floor stays
	}
	m.simplify(max(2, m.size/2))
}

// simplify drops, one at a time, the inner point whose time is closest to
// what its neighbours' line gives it (the smallest offset on a tie), until
// target points remain.
func (m *datadogMethod) simplify(target int) {
	for len(m.cache) > target {
		drop, least := -1, 0.0
		for i := 1; i < len(m.cache)-1; i++ {
			before, p, after := m.cache[i-1], m.cache[i], m.cache[i+1]
			predicted := float64(before.at) + float64(after.at-before.at)*float64(p.offset-before.offset)/float64(after.offset-before.offset)
			if e := math.Abs(float64(p.at) - predicted); drop < 0 || e < least {
				drop, least = i, e
			}
		}
		if drop < 0 {
			return
		}
		m.cache = slices.Delete(m.cache, drop, drop+1)
	}
}

func (m *datadogMethod) date(c int64) (float64, bool) {
	k := len(m.cache)
	i, found := slices.BinarySearchFunc(m.cache, c, func(p point, c int64) int { return cmp.Compare(p.offset, c) })
	if found {
		return float64(m.cache[i].at), true
	}
	if k < 2 {
		return 0, false
	}
	lo, hi := m.cache[0], m.cache[k-1]
	if i > 0 && i < k {
		lo, hi = m.cache[i-1], m.cache[i]
	}
	at := float64(hi.at) + float64(c-hi.offset)*float64(hi.at-lo.at)/float64(hi.offset-lo.offset)
	if c < lo.offset {
		at = max(at, float64(lo.at-datadogExtrapolateLimit))
	}
	return at, true
}
