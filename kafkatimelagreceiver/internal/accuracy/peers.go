package accuracy

// polled makes a method that computes its time lags on a poll of its own
// every poll (at the first scrape at least that long after the last
// poll) report the last poll's values at the scrapes between: what a
// scrape of its metrics sees.
type polled struct {
	poll, last int64
	polledOnce bool
	values     []GroupEstimate
	compute    func(s Scrape) Estimate
	cost       Cost
}

func (p *polled) Sample(Read) {}

func (p *polled) Scrape(s Scrape) Estimate {
	// A poll due within a scrape phase of now counts as now: the two
	// timers are not in step.
	if !p.polledOnce || s.Received-p.last >= p.poll-scrapePhase {
		e := p.compute(s)
		p.values, p.last, p.polledOnce = e.Groups, s.Received, true
		p.cost.add(e.Cost)
	}
	out := Estimate{At: s.Received, Cost: p.cost}
	p.cost = Cost{}
	for i := range s.Committed {
		var g GroupEstimate
		if i < len(p.values) {
			g = p.values[i]
		}
		out.Groups = append(out.Groups, g)
	}
	return out
}

// KLEPoll and KLEPoints are kafka-lag-exporter's defaults: poll-interval
// 30 seconds, lookup-table.memory.size 60.
const (
	KLEPoll   = 30 * second
	KLEPoints = 60
)

// newKLE is kafka-lag-exporter's lookup table, polled every poll (0: at
// every sample and scrape) with n points; its lag is not clamped at 0.
func newKLE(poll int64, n int) Method {
	table := &lastNTable{n: n, unclamped: true}
	if poll == 0 {
		return table
	}
	return &polled{poll: poll, compute: table.Scrape}
}

// klagMethod is klag's estimate: a line through two anchors, the log
// start's record and the record with the largest timestamp (ListOffsets
// for the max timestamp), at or past which the largest timestamp itself is
// the answer; where the anchors do not span the log, the polls' own table
// of end offsets, interpolated only. Negative lags are clamped at 0.
type klagMethod struct {
	anchors *anchorsMethod
	table   *lastNTable
}

// KlagPoll is klag's METRICS_INTERVAL_MS default, 60 s; KlagPoints the
// size its fallback table is run at.
const (
	KlagPoll   = 60 * second
	KlagPoints = 60
)

func newKlag() Method {
	m := &klagMethod{anchors: &anchorsMethod{}, table: &lastNTable{n: KlagPoints}}
	return &polled{poll: KlagPoll, compute: m.scrape}
}

func (m *klagMethod) scrape(s Scrape) Estimate {
	m.table.add(point{offset: s.End, at: s.Received})
	e := m.anchors.scrape(s, func(start, startTime, maxOffset, maxTime, c int64) (float64, bool) {
		switch {
		case maxOffset <= start:
			return m.table.interpolate(c)
		case c >= maxOffset:
			return float64(maxTime), true
		}
		return float64(startTime) + float64(c-start)*float64(maxTime-startTime)/float64(maxOffset-start), true
	})
	return e
}

// interpolate is the table's estimate inside it only.
func (m *lastNTable) interpolate(offset int64) (float64, bool) {
	if len(m.points) < 2 || offset < m.points[0].offset || offset > m.points[len(m.points)-1].offset {
		return 0, false
	}
	return m.lookup(offset)
}

// klag-exporter's defaults: poll_interval 30 s, timestamp_sampling.mode
// rate, rate_history_samples 5, rate_history_max_age 600 s,
// rate_min_msgs_per_sec 0.01, and, for its message mode,
// timestamp_sampling.cache_ttl 60 s.
const (
	KlagExporterPoll          = 30 * second
	KlagExporterCacheTTL      = 60 * second
	KlagExporterRateSamples   = 5
	KlagExporterRateMaxAge    = 600 * second
	KlagExporterRateMinPerSec = 0.01
)

// messageMethod is klag-exporter's message mode: the record at each
// lagging group's committed offset is read (its timestamp cached per group
// for a cache TTL while the group stays there) and its timestamp taken as
// the time. The read is a librdkafka consumer at its default
// isolation.level read_committed polled once from the committed offset
// (src/kafka/consumer.rs, fetch_timestamp): it returns the first committed
// data record below the last stable offset, past transaction markers and
// aborted records; where there is none the poll times out and the group
// gets no time lag.
type messageMethod struct {
	cache map[int]cachedStamp
	cost  Cost
}

type cachedStamp struct{ offset, ts, at int64 }

func newKlagExporterMessage() Method {
	m := &messageMethod{cache: map[int]cachedStamp{}}
	return &polled{poll: KlagExporterPoll, compute: m.scrape}
}

func (m *messageMethod) scrape(s Scrape) Estimate {
	m.cost.OffsetReads++
	var groups []GroupEstimate
	for i, c := range s.Committed {
		if c >= s.End {
			groups = append(groups, GroupEstimate{OK: true})
			continue
		}
		if hit, ok := m.cache[i]; ok && hit.offset == c && s.Received-hit.at < KlagExporterCacheTTL {
			groups = append(groups, GroupEstimate{TimeLag: lagSince(s.Received, float64(hit.ts)), OK: true})
			continue
		}
		// Below the log start its consumer resets to the earliest record
		// (auto.offset.reset earliest) and fetches from there.
		from := max(c, s.Start)
		_, bytes, _ := readRecord(s.Log, from, s.Start, s.End)
		m.cost.RecordReads++
		m.cost.FetchBytes += bytes
		var ts int64
		data, ok := s.Log.NextData(from, s.Log.StableAt(s.Received))
		if ok {
			ts, ok = s.Log.Stamp(data)
			ts = ts / 1e6 * 1e6
		}
		var g GroupEstimate
		if ok {
			m.cache[i] = cachedStamp{offset: c, ts: ts, at: s.Received}
			g = GroupEstimate{TimeLag: lagSince(s.Received, float64(ts)), OK: true}
		}
		groups = append(groups, g)
	}
	e := Estimate{At: s.Received, Groups: groups, Cost: m.cost}
	m.cost = Cost{}
	return e
}

func newKlagExporterRate() Method {
	m := &rateMethod{maxPoints: KlagExporterRateSamples, maxAge: KlagExporterRateMaxAge, minRate: KlagExporterRateMinPerSec}
	return &polled{poll: KlagExporterPoll, compute: m.Scrape}
}
