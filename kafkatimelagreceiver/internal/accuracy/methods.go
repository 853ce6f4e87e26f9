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
	// RateWindow of them, none older than maxAge (0: any age).
	maxPoints int
	maxAge    int64
	// minRate, when set, is the rate in records a second below which a
	// lagging group has no estimate (an idle producer's rate is no rate).
	minRate float64
}

// NewRate is the lag / produce-rate method.
func NewRate() Method { return &rateMethod{} }

func (m *rateMethod) Sample(r Read) {
	m.cost.OffsetReads++
	m.add(point{offset: r.End, at: r.Received})
}

func (m *rateMethod) add(p point) {
	if m.maxPoints > 0 {
		for m.maxAge > 0 && len(m.points) > 0 && p.at-m.points[0].at > m.maxAge {
			m.points = m.points[1:]
		}
		m.points = append(m.points, p)
		m.points = m.points[max(0, len(m.points)-m.maxPoints):]
		return
	}
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
	if rate < m.minRate {
		rate = 0
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
	logStart := s.Start
	if !m.startKnown || m.start != logStart {
		ts, bytes, ok := readRecord(s.Log, logStart, logStart, s.End)
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
			ts, bytes, ok := readRecord(s.Log, c, s.Start, s.End)
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

// The releases each peer's row is read from, and links to their files.
const (
	kleTag          = "https://github.com/seglo/kafka-lag-exporter/blob/v0.8.2/"
	kleSource       = kleTag + "src/main/scala/com/lightbend/kafkalagexporter/LookupTable.scala"
	kleConf         = kleTag + "src/main/resources/reference.conf"
	klagTag         = "https://github.com/themoah/klag/blob/0.2.6/src/main/java/io/github/themoah/klag/metrics/"
	klagSource      = klagTag + "timelag/LagMsCalculator.java"
	klagExporterTag = "https://github.com/softwaremill/klag-exporter/blob/v0.1.22/"
	klagConfig      = klagExporterTag + "src/config.rs"
	// The crate published for the tag records the commit it was packed
	// from (.cargo_vcs_info.json); the line numbers are that source's.
	klagExporterRelease = "klag-exporter v0.1.22 (crate klag-exporter-0.1.22, commit 4907fa51)"
	datadogSource       = "https://github.com/DataDog/integrations-core/pull/24167"
)

// Methods are the methods the evaluation compares, ours first: each peer
// at the defaults of the release named, an opt-in of a peer's as a row of
// its own, and kafka-lag-exporter also at the settings closest to ours.
func Methods() []MethodSpec {
	const (
		kleDefaults    = "poll-interval 30 s ([reference.conf:4](" + kleConf + "#L4)), lookup-table size 60 ([reference.conf:10](" + kleConf + "#L10)), lag not clamped at 0"
		klagDefaults   = "METRICS_INTERVAL_MS 60 s ([MetricsConfig.java:18](" + klagTag + "MetricsConfig.java#L18)); anchors: the log start's record and the max-timestamp record ([KafkaOffsetTimestampInterpolator.java:65](" + klagTag + "timelag/KafkaOffsetTimestampInterpolator.java#L65)); its fallback table, interpolation only, TIME_LAG_INTERPOLATION_BUFFER_SIZE 60 ([TimeLagConfig.java:26](" + klagTag + "timelag/TimeLagConfig.java#L26))"
		klagExporterOn = "poll_interval 30 s ([config.rs:223](" + klagConfig + "#L223))"
	)
	return []MethodSpec{
		Receiver,
		ReceiverRecordReads,
		ReceiverTablesOnly,
		{Key: "kle", Name: "kafka-lag-exporter, defaults, cold start", New: func(int64) Method { return newKLE(KLEPoll, KLEPoints) },
			Tool: "kafka-lag-exporter v0.8.2", Source: kleSource, Defaults: "defaults",
			Settings: kleDefaults + "; the table starts empty"},
		{Key: "kle-warm", Name: "kafka-lag-exporter, defaults, warm start", New: func(int64) Method { return newKLE(KLEPoll, KLEPoints) }, Warm: KLEPoll * KLEPoints,
			Tool: "kafka-lag-exporter v0.8.2", Source: kleSource, Defaults: "defaults, but its table full when watching starts (the Redis-backed table, an option, kept across a restart)",
			Settings: kleDefaults},
		{Key: "last-n", Name: "kafka-lag-exporter at our sampling and table size", New: func(int64) Method { return newKLE(0, 512) },
			Tool: "kafka-lag-exporter v0.8.2", Source: kleSource, Defaults: "**not at defaults**: the settings closest to ours",
			Settings: "poll-interval = our sampling interval, lookup-table size 512 (ours), not clamped"},
		{Key: "klag", Name: "klag, defaults", New: func(int64) Method { return newKlag() },
			Tool: "klag 0.2.6", Source: klagSource, Defaults: "defaults", Settings: klagDefaults},
		{Key: "klag-exporter-message", Name: "klag-exporter, message mode (opt-in)", New: func(int64) Method { return newKlagExporterMessage() },
			Tool: klagExporterRelease, Source: klagExporterTag + "src/collector/timestamp_sampler.rs", Defaults: "**opt-in**: `timestamp_sampling.mode: message` (rate is the default)",
			Settings: klagExporterOn + ", timestamp cache 60 s per group while it stays ([config.rs:243](" + klagConfig + "#L243)); one poll of a read_committed consumer from the committed offset, no time lag where no committed data record follows ([consumer.rs:124](" + klagExporterTag + "src/kafka/consumer.rs#L124))"},
		{Key: "klag-exporter-rate", Name: "klag-exporter, defaults (rate mode)", New: func(int64) Method { return newKlagExporterRate() },
			Tool: klagExporterRelease, Source: klagExporterTag + "src/collector/rate_sampler.rs", Defaults: "defaults",
			Settings: klagExporterOn + "; mode rate ([config.rs:251](" + klagConfig + "#L251)): offset lag over the rate across its last 5 polls ([config.rs:255](" + klagConfig + "#L255)), none older than 600 s ([config.rs:259](" + klagConfig + "#L259)), no estimate below 0.01 records/s ([config.rs:263](" + klagConfig + "#L263)) or without a rise in the high watermark over them ([rate_sampler.rs:37](" + klagExporterTag + "src/collector/rate_sampler.rs#L37))"},
		{Key: "datadog", Name: "Datadog kafka_consumer, defaults", New: func(int64) Method { return newDatadogDefaults() },
			Tool: "Datadog integrations-core kafka_consumer, source of July 2026 (release tag not confirmed)", Source: datadogSource, Defaults: "defaults",
			Settings: "`data_streams_enabled` false (`kafka_consumer.py`, `config.py`): `kafka.estimated_consumer_lag` is not sent, only the offset lag; the high watermarks are still read every check"},
		{Key: "datadog-dsm", Name: "Datadog kafka_consumer, data streams (opt-in)", New: func(int64) Method { return newDatadog() },
			Tool: "Datadog integrations-core kafka_consumer, source of July 2026 (release tag not confirmed)", Source: datadogSource, Defaults: "**opt-in**: `data_streams_enabled: true`; checked at each scrape (30 s) here, every 15 s by default",
			Settings: "offset->time cache of 1,000 high watermarks a partition (`MAX_TIMESTAMPS`, `timestamp_history_size`), lag from the newest; when full, the points below the groups' lowest offset but the nearest dropped, then halved by Visvalingam–Whyatt keeping the oldest and newest (`_add_broker_timestamps`, `_visvalingam_whyatt`); dating below the oldest point extrapolated at most 600 s back (`LAG_EXTRAPOLATION_LIMIT_SECONDS`)"},
	}
}
