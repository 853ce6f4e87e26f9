package main

import (
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/otlpsink"
)

// lagMetric identifies a scrape: all its points carry the instant the
// scrape read the end offsets, and every scrape of the workload has lag points.
const lagMetric = "kafka.consumer_group.lag"

// scrapeSeen is what the sink learned about one scrape.
type scrapeSeen struct {
	at        time.Time // the scrape's end-offset read, from its points
	arrived   time.Time // first export request carrying it
	requests  int       // export requests that carried its points
	points    int       // data points of every metric
	lagPoints int       // points of kafka.consumer_group.lag
	bytes     int       // request bodies as sent (compressed)
}

// sink is an OTLP/HTTP metrics endpoint that counts what it receives, per
// scrape, and calls onScrape when the first export of a new scrape arrives,
// before answering it (the collector waits for the answer).
type sink struct {
	server   *http.Server
	listener net.Listener
	onScrape func(at time.Time)
	// check, when set, compares the exported time lags with the truth.
	check *accuracyCheck

	mu      sync.Mutex
	scrapes map[int64]*scrapeSeen
	order   []int64
	bad     error
}

func startSink(onScrape func(time.Time)) (*sink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{listener: l, onScrape: onScrape, scrapes: map[int64]*scrapeSeen{}}
	s.server = &http.Server{Handler: otlpsink.Handler(s.record, s.fail), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

func (s *sink) url() string { return "http://" + s.listener.Addr().String() }

func (s *sink) close() { _ = s.server.Close() }

func (s *sink) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad == nil {
		s.bad = err
	}
}

// record counts the points of one export by timestamp and reports each
// scrape the first time one of its lag points is seen.
func (s *sink) record(md pmetric.Metrics, size int) {
	byAt := map[int64]*scrapeSeen{}
	seen := func(ts int64) *scrapeSeen {
		c, ok := byAt[ts]
		if !ok {
			c = &scrapeSeen{}
			byAt[ts] = c
		}
		return c
	}
	if s.check != nil {
		s.check.observe(md)
	}
	otlpsink.EachGaugePoint(md, func(metric string, dp pmetric.NumberDataPoint) {
		c := seen(int64(dp.Timestamp()))
		c.points++
		if metric == lagMetric {
			c.lagPoints++
		}
	})
	now := time.Now()
	var fresh []time.Time
	s.mu.Lock()
	for ts, c := range byAt {
		cur, ok := s.scrapes[ts]
		if !ok {
			if c.lagPoints == 0 {
				continue // not a scrape's lag (e.g. only group metrics without end offsets)
			}
			cur = &scrapeSeen{at: time.Unix(0, ts), arrived: now}
			s.scrapes[ts] = cur
			s.order = append(s.order, ts)
			fresh = append(fresh, cur.at)
		}
		cur.requests++
		cur.points += c.points
		cur.lagPoints += c.lagPoints
		cur.bytes += size
	}
	s.mu.Unlock()
	for _, at := range fresh {
		if s.onScrape != nil {
			s.onScrape(at)
		}
	}
}

// err is the first export the sink could not read, if any.
func (s *sink) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bad
}

// seen returns what is known of every scrape, in arrival order.
func (s *sink) seen() ([]scrapeSeen, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]scrapeSeen, 0, len(s.order))
	for _, ts := range s.order {
		out = append(out, *s.scrapes[ts])
	}
	return out, s.bad
}
