package accuracy

import "math"

// point is an end offset and when it was observed.
type point struct {
	offset int64
	at     int64
}

// LastNPoints is the size of the last-N table: the published default of
// the exporter that introduced the method.
const LastNPoints = 60

// lastNTable is a table of the last n end-offset observations, a flat run
// kept as its first and last point, looked up by linear interpolation
// inside it and by extrapolation along the line through its oldest and
// newest points outside it; an offset equal to the newest point's lags by
// nothing.
type lastNTable struct {
	n      int
	points []point
	cost   Cost
}

// NewLastNTable is the last-N table method.
func NewLastNTable(n int) Method { return &lastNTable{n: n} }

func (m *lastNTable) Sample(r Read) {
	m.cost.OffsetReads++
	m.add(point{offset: r.End, at: r.Received})
}

func (m *lastNTable) add(p point) {
	k := len(m.points)
	switch {
	case k > 0 && (m.points[k-1].at >= p.at || m.points[k-1].offset > p.offset):
		return // out of order, or not monotonic
	case k > 1 && m.points[k-1].offset == p.offset && m.points[k-2].offset == p.offset:
		m.points[k-1] = p // a flat run keeps its first point and moves its last
		return
	}
	if k == m.n {
		m.points = append(m.points[:0], m.points[1:]...)
	}
	m.points = append(m.points, p)
}

// lookup predicts when the record at offset was appended.
func (m *lastNTable) lookup(offset int64) (float64, bool) {
	k := len(m.points)
	if k < 2 {
		return 0, false
	}
	left, right := m.points[0], m.points[k-1] // extrapolation's line
	for i := k - 1; i > 0; i-- {
		if l, r := m.points[i-1], m.points[i]; offset >= l.offset && offset <= r.offset {
			left, right = l, r
			break
		}
	}
	dx, dy := float64(right.at-left.at), float64(right.offset-left.offset)
	predicted := float64(right.at) - float64(right.offset-offset)*dx/dy
	if math.IsNaN(predicted) || math.IsInf(predicted, 0) {
		return 0, false // a flat table has no line to follow
	}
	return predicted, true
}

func (m *lastNTable) Scrape(s Scrape) Estimate {
	m.cost.OffsetReads++
	m.add(point{offset: s.End, at: s.Received})
	e := Estimate{At: s.Received, Cost: m.cost}
	m.cost = Cost{}
	for _, c := range s.Committed {
		var g GroupEstimate
		if len(m.points) > 0 && c >= m.points[len(m.points)-1].offset {
			g.OK = true // lag is zero
		} else if predicted, ok := m.lookup(c); ok {
			g = GroupEstimate{TimeLag: lagSince(s.Received, predicted), OK: true}
		}
		e.Groups = append(e.Groups, g)
	}
	return e
}

// RateWindow is the history the lag / produce-rate method takes its rate
// over.
const RateWindow = int64(5 * 60 * 1e9)

// rateMethod divides the offset lag by the production rate measured over
// the end-offset observations of the last RateWindow: it assumes the
// producer kept that rate over the whole lag. With no rate measured
// (fewer than two observations, or no record appended in the window) a
// lagging group has no estimate.
type rateMethod struct {
	points []point
	cost   Cost
}

// NewRate is the lag / produce-rate method.
func NewRate() Method { return &rateMethod{} }

func (m *rateMethod) Sample(r Read) {
	m.cost.OffsetReads++
	m.add(point{offset: r.End, at: r.Received})
}

func (m *rateMethod) add(p point) {
	m.points = append(m.points, p)
	drop := 0
	for drop < len(m.points)-2 && m.points[drop+1].at <= p.at-RateWindow {
		drop++ // keep one point at or before the window's start
	}
	m.points = m.points[drop:]
}

func (m *rateMethod) Scrape(s Scrape) Estimate {
	m.cost.OffsetReads++
	m.add(point{offset: s.End, at: s.Received})
	e := Estimate{At: s.Received, Cost: m.cost}
	m.cost = Cost{}
	first, last := m.points[0], m.points[len(m.points)-1]
	rate := 0.0
	if last.at > first.at && last.offset > first.offset {
		rate = float64(last.offset-first.offset) / (float64(last.at-first.at) / 1e9)
	}
	for _, c := range s.Committed {
		var g GroupEstimate
		switch lagRecords := s.End - c; {
		case lagRecords <= 0:
			g.OK = true
		case rate > 0:
			g = GroupEstimate{TimeLag: float64(lagRecords) / rate, OK: true}
		}
		e.Groups = append(e.Groups, g)
	}
	return e
}

// anchorsMethod draws one straight line through the log: from its first
// record (the log-start offset and that record's timestamp) to the record
// with the largest timestamp (ListOffsets for the max timestamp, which
// gives its offset and timestamp), and reads the committed offset's append
// time off it. Each scrape asks for the latest, earliest and max-timestamp
// offsets; the log-start record's timestamp is read once per log start.
type anchorsMethod struct {
	start, startTime int64
	startKnown       bool
	cost             Cost
}

// NewAnchors is the linear fit between the log-start and max-timestamp
// anchors.
func NewAnchors() Method { return &anchorsMethod{} }

func (m *anchorsMethod) Sample(Read) {}

func (m *anchorsMethod) Scrape(s Scrape) Estimate {
	m.cost.OffsetReads += 3
	logStart := int64(0) // the simulation's logs keep every record
	if !m.startKnown || m.start != logStart {
		ts, bytes, ok := readRecord(s.Log, logStart, s.End)
		m.cost.SharedReads++
		m.cost.SharedBytes += bytes
		m.start, m.startTime, m.startKnown = logStart, ts, ok
	}
	e := Estimate{At: s.Received, Cost: m.cost}
	m.cost = Cost{}
	maxOffset, maxTime := s.Log.MaxStamp(s.End)
	for _, c := range s.Committed {
		var g GroupEstimate
		switch {
		case c >= s.End:
			g.OK = true
		case m.startKnown:
			appended := float64(maxTime)
			if maxOffset > m.start {
				appended = float64(m.startTime) + float64(c-m.start)*float64(maxTime-m.startTime)/float64(maxOffset-m.start)
			}
			g = GroupEstimate{TimeLag: lagSince(s.Received, appended), OK: true}
		}
		e.Groups = append(e.Groups, g)
	}
	return e
}

// recordMethod reads the record at the committed offset at every scrape
// where the group lags, and takes its timestamp as the append time: exact
// up to the producer's clock, at a record read per lagging pair per scrape.
type recordMethod struct{ cost Cost }

// NewRecordRead is the read-the-record-every-scrape method.
func NewRecordRead() Method { return &recordMethod{} }

func (m *recordMethod) Sample(Read) {}

func (m *recordMethod) Scrape(s Scrape) Estimate {
	m.cost.OffsetReads++
	var groups []GroupEstimate
	for _, c := range s.Committed {
		var g GroupEstimate
		if c >= s.End {
			g.OK = true
		} else {
			ts, bytes, ok := readRecord(s.Log, c, s.End)
			m.cost.RecordReads++
			m.cost.FetchBytes += bytes
			if ok {
				g = GroupEstimate{TimeLag: lagSince(s.Received, float64(ts)), OK: true}
			}
		}
		groups = append(groups, g)
	}
	e := Estimate{At: s.Received, Groups: groups, Cost: m.cost}
	m.cost = Cost{}
	return e
}

// Methods are the methods the evaluation compares, ours first.
func Methods() []MethodSpec {
	return []MethodSpec{
		{Key: "receiver", Name: "this receiver", New: func(s int64) Method { return NewReceiver(s, true) }},
		{Key: "receiver-no-reads", Name: "this receiver, no record reads", New: func(s int64) Method { return NewReceiver(s, false) }},
		{Key: "last-n", Name: "last-60 table, extrapolated", New: func(int64) Method { return NewLastNTable(LastNPoints) }},
		{Key: "rate", Name: "lag / produce rate (5 min)", New: func(int64) Method { return NewRate() }},
		{Key: "anchors", Name: "log-start to max-timestamp line", New: func(int64) Method { return NewAnchors() }},
		{Key: "record", Name: "record at committed offset", New: func(int64) Method { return NewRecordRead() }},
	}
}
