package accuracy

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// ReceiverMaxRecordReads is the receiver's default for
// max_record_reads_per_scrape; its tables hold timetable.DefaultMaxSamples
// points, and a stretch of timetable.GapSamples sampling intervals without
// one is unwatched.
const ReceiverMaxRecordReads = read.DefaultMaxRecordReads

// receiverMethod is the receiver as it ships: its sampler's samples
// (sampler.Sampler.Sample) and its scrape's read (read.Reader.Read, which
// dates the lagging records through dating.Date), asking a simulated
// cluster (simCluster) that answers from the timelines at the simulation's
// times. The time lags are the read's estimates, as the scrape's
// computation takes them (lag.Estimates.GroupLags). One instance reads one
// partition (Method) or every partition of a shape at once
// (PartitionsMethod), its per-scrape budgets shared between them.
type receiverMethod struct {
	cluster *simCluster
	sampler *sampler.Sampler
	reader  *read.Reader
	samples int
}

// Dating is where the receiver finds the timestamps of the records its
// tables date too loosely (timestamp_source).
type Dating int

const (
	// DateFromIndex asks the brokers' time index, reading records only
	// where it cannot answer, within read.TimeIndexRecordReadBytes: the
	// receiver as shipped.
	DateFromIndex Dating = iota
	// DateFromReads reads the records (timestamp_source: record_reads).
	DateFromReads
	// DateNone dates nothing: the tables alone
	// (max_record_reads_per_scrape: 0).
	DateNone
)

// NewReceiver is the receiver at the sampling interval, dating as dating
// says.
func NewReceiver(sampling int64, dating Dating) Method {
	return newReceiver(sampling, dating, true, 1)
}

// The receiver's rows: as shipped, reading records instead of asking the
// time index, and its tables alone.
var (
	Receiver            = receiverSpec("receiver", "this receiver", DateFromIndex)
	ReceiverRecordReads = receiverSpec("receiver-record-reads", "this receiver, timestamp_source: record_reads", DateFromReads)
	ReceiverTablesOnly  = receiverSpec("receiver-no-reads", "this receiver, tables only", DateNone)
)

// TrustClocks is the receiver reading batches that do not say which
// producer wrote them, told that the topic's stamps are append times
// (trusted_timestamp_topics): each record is dated by its timestamp as it
// stands, clamped to its bracket, with no producer's clock measured.
// It is the baseline measuring the clocks is held against.
var TrustClocks = MethodSpec{Key: "receiver-trust-clocks", Name: "this receiver, producers' clocks not measured", New: func(s int64) Method {
	m := newReceiver(s, DateFromReads, false, 1)
	m.reader.Records = recordcache.New(recordcache.TrustedStamps(func(string) bool { return true }))
	return m
}}

// receiverSpec is a receiver row: one instance a partition, or one for
// every partition of a shape that reads them together.
func receiverSpec(key, name string, dating Dating) MethodSpec {
	return MethodSpec{Key: key, Name: name, New: func(s int64) Method { return NewReceiver(s, dating) },
		NewPartitions: func(s int64, partitions int) PartitionsMethod { return newReceiver(s, dating, true, partitions) }}
}

func newReceiver(sampling int64, dating Dating, byProducer bool, partitions int) *receiverMethod {
	every, err := filter.New(nil, nil)
	if err != nil {
		panic(err) // no pattern: cannot fail
	}
	cluster := newSimCluster(byProducer, partitions)
	// The simulation's reads carry its own times: a store watching the
	// wall clock would take them for clock steps.
	tables := timetable.NewStore(timetable.DefaultMaxSamples, timetable.GapSamples*time.Duration(sampling), nil)
	maxReads := 0
	if dating != DateNone {
		maxReads = ReceiverMaxRecordReads
	}
	return &receiverMethod{
		cluster: cluster,
		sampler: sampler.New(cluster, tables, sampler.Settings{Interval: time.Duration(sampling), Timeout: time.Minute}),
		reader: &read.Reader{
			Cluster:            cluster,
			Tables:             tables,
			Records:            recordcache.New(),
			Groups:             every,
			Topics:             every,
			MaxRecordReads:     maxReads,
			TimeIndex:          dating == DateFromIndex,
			MaxRecordReadBytes: read.TimeIndexRecordReadBytes,
			// The topic's configuration (whether it compacts), as the
			// receiver reads it.
			Retention:       retention.NewCache(cluster),
			KeepUnwantedFor: time.Hour,
			Now:             cluster.now,
			Logger:          zap.NewNop(),
		},
	}
}

func (m *receiverMethod) Sample(r Read) { m.SampleAll([]Read{r}) }

func (m *receiverMethod) SampleAll(reads []Read) {
	m.cluster.sample(reads)
	m.samples++
	// The sampler's full sample (log starts and topic ids) comes every few.
	_ = m.sampler.Sample(context.Background(), m.samples%sampler.FullSampleEvery == 1)
}

func (m *receiverMethod) Scrape(s Scrape) Estimate { return m.ScrapeAll([]Scrape{s})[0] }

// ScrapeAll is one scrape of every partition: the first estimate carries
// the scrape's whole cost.
func (m *receiverMethod) ScrapeAll(scrapes []Scrape) []Estimate {
	in, e, ok := m.read(scrapes)
	out := make([]Estimate, len(scrapes))
	for p := range out {
		out[p].At = e.At
	}
	out[0].Cost = e.Cost
	if !ok {
		return out
	}
	var lags []lag.PartitionLag
	for p, s := range scrapes {
		for i := range s.Committed {
			var g GroupEstimate
			lags = in.Estimates.GroupLags(lags[:0], groupName(i), in.Snap.At)
			for _, pl := range lags {
				if pl.TopicPartition == simPartition(p) {
					g = GroupEstimate{TimeLag: pl.TimeLag, OK: pl.HasTimeLag}
				}
			}
			out[p].Groups = append(out[p].Groups, g)
		}
	}
	return out
}

// read is the shipped scrape's read of scrapes (read.Reader.Read, which
// dates its records), and the estimate it starts: at the read's snapshot,
// with what the cluster was asked. Not ok when the read failed.
func (m *receiverMethod) read(scrapes []Scrape) (*read.Input, Estimate, bool) {
	m.cluster.scrape(scrapes)
	var errs scrapererror.ScrapeErrors
	in, err := m.reader.Read(context.Background(), nil, kafka.NewDenials(), &errs)
	e := Estimate{At: scrapes[0].Received, Cost: m.cluster.take()}
	if err != nil {
		return nil, e, false
	}
	e.At = in.Snap.At
	return in, e, true
}

// groupName names the simulation's i-th group.
func groupName(i int) string { return "group-" + strconv.Itoa(i) }
