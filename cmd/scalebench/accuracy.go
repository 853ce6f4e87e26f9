package main

// Accuracy check (-accuracy, with -busy): every time lag the collector
// exports is compared with the truth, the age at the scrape of the record
// at the group's committed offset by that record's own timestamp. Busy
// mode's writes stamp their records with this machine's clock, which is the
// in-process brokers' clock too, so the timestamps are append times to
// within the produce latency. The committed offset comes from the
// kafka.consumer_group.offset points of the same export (the check turns
// that metric on); the scrape's instant from the points' timestamp, which is
// the instant the receiver measures time lag at.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/otlpsink"
)

const (
	timeLagMetric   = "kafka.consumer_group.time_lag"
	offsetMetric    = "kafka.consumer_group.offset"
	accuracyConfig  = "receivers:\n  kafka_time_lag:\n    metrics:\n      " + offsetMetric + ":\n        enabled: true\n"
	appendLogKeeps  = 3 * time.Minute // far longer than a churning group sits behind
	targetFraction  = 0.1             // of the sampling interval (docs/accuracy.md, the target)
	targetLagFactor = 0.01            // of the true time lag
)

// writeAccuracyConfig writes the configuration the check merges over the
// generated one, and returns its path.
func writeAccuracyConfig(dir string) (string, error) {
	path := filepath.Join(dir, "accuracy.yaml")
	return path, os.WriteFile(path, []byte(accuracyConfig), 0o600)
}

type partitionKey struct {
	topic     string
	partition int32
}

// appendMark is one write's records on a partition: offsets first to end
// (exclusive), stamped at stamp (unix nanoseconds, whole milliseconds as
// Kafka keeps them).
type appendMark struct {
	first, end, stamp int64
}

// appendLog remembers, by partition, which offsets busy mode's writes
// appended and their timestamps, for appendLogKeeps.
type appendLog struct {
	mu    sync.Mutex
	marks map[partitionKey][]appendMark
	// skew is how far the writer's clock is off (-busy-clock-skew), in
	// nanoseconds: a record stamped t was written at t - skew.
	skew int64
}

func newAppendLog(skew time.Duration) *appendLog {
	return &appendLog{marks: map[partitionKey][]appendMark{}, skew: int64(skew)}
}

// note remembers one ProduceSync's records.
func (l *appendLog) note(results kgo.ProduceResults) {
	writes := map[partitionKey]appendMark{}
	for _, r := range results {
		if r.Err != nil || r.Record == nil {
			continue
		}
		key := partitionKey{r.Record.Topic, r.Record.Partition}
		stamp := r.Record.Timestamp.UnixMilli()*int64(time.Millisecond) - l.skew
		m, ok := writes[key]
		if !ok {
			m = appendMark{first: r.Record.Offset, end: r.Record.Offset + 1, stamp: stamp}
		}
		if r.Record.Offset < m.first {
			m.first, m.stamp = r.Record.Offset, stamp
		}
		m.end = max(m.end, r.Record.Offset+1)
		writes[key] = m
	}
	oldest := time.Now().Add(-appendLogKeeps).UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, m := range writes {
		// One goroutine writes, so a partition's marks come in offset order.
		marks := append(l.marks[key], m)
		if marks[0].stamp < oldest {
			drop := sort.Search(len(marks), func(i int) bool { return marks[i].stamp >= oldest })
			marks = append(marks[:0], marks[drop:]...)
		}
		l.marks[key] = marks
	}
}

// trueTimeLag is the time lag at at (unix nanoseconds) of a group committed
// at offset: at minus the timestamp of the record there, 0 when no record
// was there by then; not ok when the log does not know the offset (written
// before the log started, or dropped from it).
func (l *appendLog) trueTimeLag(key partitionKey, offset, at int64) (seconds float64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	marks := l.marks[key]
	if len(marks) == 0 || offset < marks[0].first {
		return 0, false
	}
	i := sort.Search(len(marks), func(i int) bool { return marks[i].end > offset })
	if i == len(marks) || marks[i].stamp > at {
		return 0, true // nothing appended at the offset yet: caught up
	}
	if offset < marks[i].first {
		return 0, false
	}
	return float64(at-marks[i].stamp) / 1e9, true
}

// scrapeErrors are one scrape's time lags against the truth.
type scrapeErrors struct {
	abs, ratio []float64 // |error| in seconds, and |error| over the target's bound
	undated    int       // pairs with a committed offset and no time lag
	unknown    int       // pairs whose truth the log does not know
}

// accuracyCheck compares the exported time lags with the append log.
type accuracyCheck struct {
	log      *appendLog
	sampling time.Duration

	mu      sync.Mutex
	scrapes map[int64]*scrapeErrors
}

func newAccuracyCheck(log *appendLog, sampling time.Duration) *accuracyCheck {
	return &accuracyCheck{log: log, sampling: sampling, scrapes: map[int64]*scrapeErrors{}}
}

type pairKey struct {
	group string
	partitionKey
}

// observe checks the pairs of one export: a pair's offset and time lag go
// out in the same chunk.
func (c *accuracyCheck) observe(md pmetric.Metrics) {
	type pairPoint struct {
		at                int64
		offset            int64
		timeLag           float64
		hasOffset, hasLag bool
	}
	pairs := map[pairKey]*pairPoint{}
	otlpsink.EachGaugePoint(md, func(metric string, dp pmetric.NumberDataPoint) {
		if metric != offsetMetric && metric != timeLagMetric {
			return
		}
		attrs := dp.Attributes()
		group, _ := attrs.Get("group")
		topic, _ := attrs.Get("topic")
		partition, _ := attrs.Get("partition")
		key := pairKey{group.Str(), partitionKey{topic.Str(), int32(partition.Int())}}
		p, ok := pairs[key]
		if !ok {
			p = &pairPoint{at: int64(dp.Timestamp())}
			pairs[key] = p
		}
		if metric == offsetMetric {
			p.offset, p.hasOffset = dp.IntValue(), true
		} else {
			p.timeLag, p.hasLag = dp.DoubleValue(), true
		}
	})
	bound := targetFraction * c.sampling.Seconds()
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, p := range pairs {
		if !p.hasOffset {
			continue
		}
		s, ok := c.scrapes[p.at]
		if !ok {
			s = &scrapeErrors{}
			c.scrapes[p.at] = s
		}
		truth, known := c.log.trueTimeLag(key.partitionKey, p.offset, p.at)
		switch {
		case !known:
			s.unknown++
		case !p.hasLag:
			s.undated++
		default:
			e := p.timeLag - truth
			if e < 0 {
				e = -e
			}
			s.abs = append(s.abs, e)
			s.ratio = append(s.ratio, e/max(bound, targetLagFactor*truth))
		}
	}
}

// accuracySummary is the check over the measured scrapes.
type accuracySummary struct {
	scrapes, pairs, undated, unknown int
	p50, p95, max, ratio95           float64
}

// summary is the check over the scrapes at scrapes whose pairs all arrived
// (the run ends as the last one starts to).
func (c *accuracyCheck) summary(scrapes []time.Time, pairs int) accuracySummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	var abs, ratio []float64
	var s accuracySummary
	for _, at := range scrapes {
		e, ok := c.scrapes[at.UnixNano()]
		if !ok || len(e.abs)+e.undated+e.unknown < pairs {
			continue
		}
		s.scrapes++
		abs = append(abs, e.abs...)
		ratio = append(ratio, e.ratio...)
		s.undated += e.undated
		s.unknown += e.unknown
	}
	s.pairs = len(abs)
	if len(abs) == 0 {
		return s
	}
	slices.Sort(abs)
	slices.Sort(ratio)
	at := func(v []float64, q float64) float64 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	s.p50, s.p95, s.max, s.ratio95 = at(abs, 0.5), at(abs, 0.95), abs[len(abs)-1], at(ratio, 0.95)
	return s
}

func printAccuracy(out io.Writer, o options, results []*result) {
	fmt.Fprintf(out, "\nTime lag against each record's own timestamp (-accuracy), over the measured scrapes; the target is p95 of |error| / max(0.1 x the %s sampling interval, 1 %% of the true time lag) <= 1 (docs/accuracy.md):\n\n", o.sampling)
	fmt.Fprintln(out, "| workload | scrapes | pairs checked | p50 \\|error\\| | p95 \\|error\\| | max \\|error\\| | target ratio, p95 | without a time lag | truth unknown |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if r.accuracy == nil {
			continue
		}
		a := *r.accuracy
		fmt.Fprintf(out, "| %s | %d | %d | %.3f s | %.3f s | %.3f s | %.2f | %d | %d |\n", r.w, a.scrapes, a.pairs, a.p50, a.p95, a.max, a.ratio95, a.undated, a.unknown)
	}
}
