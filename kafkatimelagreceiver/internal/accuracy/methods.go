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
	// unclamped: a negative lag (a record dated after the scrape) is
	// reported as it stands.
	unclamped bool
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
			if m.unclamped {
				g.TimeLag = (float64(s.Received) - predicted) / 1e9
			}
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
	// maxPoints, when set, keeps that many observations instead of a
	// RateWindow of them.
	maxPoints int
}

// NewRate is the lag / produce-rate method.
func NewRate() Method { return &rateMethod{} }

func (m *rateMethod) Sample(r Read) {
	m.cost.OffsetReads++
	m.add(point{offset: r.End, at: r.Received})
}

func (m *rateMethod) add(p point) {
	m.points = append(m.points, p)
	if m.maxPoints > 0 {
		m.points = m.points[max(0, len(m.points)-m.maxPoints):]
		return
	}
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
	return m.scrape(s, func(start, startTime, maxOffset, maxTime, c int64) (float64, bool) {
		if maxOffset <= start {
			return float64(maxTime), true
		}
		return float64(startTime) + float64(c-start)*float64(maxTime-startTime)/float64(maxOffset-start), true
	})
}

// scrape asks for the anchors and dates each lagging group's offset c by
// line, given the log start's offset and timestamp and the max-timestamp
// record's.
func (m *anchorsMethod) scrape(s Scrape, line func(start, startTime, maxOffset, maxTime, c int64) (float64, bool)) Estimate {
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
			if appended, ok := line(m.start, m.startTime, maxOffset, maxTime, c); ok {
				g = GroupEstimate{TimeLag: lagSince(s.Received, appended), OK: true}
			}
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

// Links to the sources each peer's row is read from.
const (
	kleSource          = "https://github.com/seglo/kafka-lag-exporter/blob/v0.8.2/src/main/scala/com/lightbend/kafkalagexporter/LookupTable.scala"
	klagSource         = "https://github.com/themoah/klag/blob/main/src/main/java/io/github/themoah/klag/metrics/timelag/LagMsCalculator.java"
	klagExporterSource = "https://github.com/softwaremill/klag-exporter/blob/main/src/collector/timestamp_sampler.rs"
	datadogSource      = "https://github.com/DataDog/integrations-core/blob/master/kafka_consumer/datadog_checks/kafka_consumer/kafka_consumer.py"
)

// Methods are the methods the evaluation compares, ours first: the peers
// at their shipped defaults, and kafka-lag-exporter also at the settings
// closest to ours.
func Methods() []MethodSpec {
	return []MethodSpec{
		Receiver,
		ReceiverRecordReads,
		ReceiverTablesOnly,
		{Key: "kle", Name: "kafka-lag-exporter, defaults, cold start", New: func(int64) Method { return newKLE(KLEPoll, KLEPoints) },
			Tool: "kafka-lag-exporter 0.8.2", Source: kleSource, Settings: "poll-interval 30 s, lookup-table size 60, lag not clamped at 0; the table starts empty"},
		{Key: "kle-warm", Name: "kafka-lag-exporter, defaults, warm start", New: func(int64) Method { return newKLE(KLEPoll, KLEPoints) }, Warm: KLEPoll * KLEPoints,
			Tool: "kafka-lag-exporter 0.8.2", Source: kleSource, Settings: "as above, its table full when watching starts (a Redis-backed table kept across a restart)"},
		{Key: "last-n", Name: "kafka-lag-exporter at our sampling and table size", New: func(int64) Method { return newKLE(0, 512) },
			Tool: "kafka-lag-exporter 0.8.2", Source: kleSource, Settings: "closest to ours: poll-interval = our sampling interval, lookup-table size 512 (ours), not clamped"},
		{Key: "klag", Name: "klag, defaults", New: func(int64) Method { return newKlag() },
			Tool: "klag 0.2.6", Source: klagSource, Settings: "METRICS_INTERVAL_MS 60 s; anchors: the log start's record and the max-timestamp record; its fallback table (interpolation only) run at 60 points"},
		{Key: "klag-exporter-message", Name: "klag-exporter, message mode", New: func(int64) Method { return newKlagExporterMessage() },
			Tool: "klag-exporter (main)", Source: klagExporterSource, Settings: "poll_interval 30 s, timestamp cache 60 s per group while it stays; up to 8 offsets scanned back past transaction markers"},
		{Key: "klag-exporter-rate", Name: "klag-exporter, rate mode", New: func(int64) Method { return newKlagExporterRate() },
			Tool: "klag-exporter (main)", Source: klagExporterSource, Settings: "poll_interval 30 s; offset lag over the rate across its last 10 polls (history size as run: its default was not confirmed)"},
		{Key: "datadog", Name: "Datadog kafka_consumer", New: func(int64) Method { return newDatadog() },
			Tool: "Datadog Agent kafka_consumer (master)", Source: datadogSource, Settings: "offset->time cache of 1,000 high watermarks (timestamp_history_size as run), lag from the newest; checked at each scrape (30 s) here, every 15 s by default"},
	}
}
