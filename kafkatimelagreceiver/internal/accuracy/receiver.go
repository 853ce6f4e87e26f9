package accuracy

import (
	"context"
	"slices"
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

var simPartition = kafka.TopicPartition{Topic: "sim", Partition: 0}

// receiverMethod is the receiver as it ships: its sampler's samples
// (sampler.Sampler.Sample) and its scrape's read (read.Reader.Read, which
// dates the lagging records through dating.Date), asking a simulated
// cluster (simCluster) that answers from the timeline at the simulation's
// times. The time lags are the read's estimates, as the scrape's
// computation takes them (lag.Estimates.GroupLags).
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
	return newReceiver(sampling, dating, true)
}

// The receiver's rows: as shipped, reading records instead of asking the
// time index, and its tables alone.
var (
	Receiver            = MethodSpec{Key: "receiver", Name: "this receiver", New: func(s int64) Method { return NewReceiver(s, DateFromIndex) }}
	ReceiverRecordReads = MethodSpec{Key: "receiver-record-reads", Name: "this receiver, timestamp_source: record_reads", New: func(s int64) Method { return NewReceiver(s, DateFromReads) }}
	ReceiverTablesOnly  = MethodSpec{Key: "receiver-no-reads", Name: "this receiver, tables only", New: func(s int64) Method { return NewReceiver(s, DateNone) }}
)

// TrustClocks is the receiver reading batches that do not say which
// producer wrote them, told that the topic's stamps are append times
// (trusted_timestamp_topics): each record is dated by its timestamp as it
// stands, clamped to its bracket, with no producer's clock measured.
// It is the baseline measuring the clocks is held against.
var TrustClocks = MethodSpec{Key: "receiver-trust-clocks", Name: "this receiver, producers' clocks not measured", New: func(s int64) Method {
	m := newReceiver(s, DateFromReads, false)
	m.reader.Records = recordcache.New(recordcache.TrustedStamps(func(string) bool { return true }))
	return m
}}

func newReceiver(sampling int64, dating Dating, byProducer bool) *receiverMethod {
	every, err := filter.New(nil, nil)
	if err != nil {
		panic(err) // no pattern: cannot fail
	}
	cluster := &simCluster{byProducer: byProducer, watchedFrom: -1}
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

func (m *receiverMethod) Sample(r Read) {
	m.cluster.read = r
	m.samples++
	// The sampler's full sample (log starts and topic ids) comes every few.
	_ = m.sampler.Sample(context.Background(), m.samples%sampler.FullSampleEvery == 1)
}

func (m *receiverMethod) Scrape(s Scrape) Estimate {
	in, e, ok := m.read(s)
	if !ok {
		return e
	}
	var lags []lag.PartitionLag
	for i := range s.Committed {
		var g GroupEstimate
		lags = in.Estimates.GroupLags(lags[:0], groupName(i), in.Snap.At)
		for _, pl := range lags {
			g = GroupEstimate{TimeLag: pl.TimeLag, OK: pl.HasTimeLag}
		}
		e.Groups = append(e.Groups, g)
	}
	return e
}

// read is the shipped scrape's read of s (read.Reader.Read, which dates
// its records), and the estimate it starts: at the read's snapshot, with
// what the cluster was asked. Not ok when the read failed.
func (m *receiverMethod) read(s Scrape) (*read.Input, Estimate, bool) {
	m.cluster.scrape(s)
	var errs scrapererror.ScrapeErrors
	in, err := m.reader.Read(context.Background(), nil, kafka.NewDenials(), &errs)
	e := Estimate{At: s.Received, Cost: m.cluster.take()}
	if err != nil {
		return nil, e, false
	}
	e.At = in.Snap.At
	return in, e, true
}

// groupName names the simulation's i-th group.
func groupName(i int) string { return "group-" + strconv.Itoa(i) }

// simCluster is the one-partition cluster of the simulation as the
// receiver's Kafka layer would answer it: the groups' committed offsets
// and the end offset of the current scrape or sample, at the simulation's
// times, and records' timestamps from the timeline, read as the receiver's
// reads are (each read answering every wanted offset its batches hold).
// It counts what it is asked (Cost).
type simCluster struct {
	kafka.Cluster // what the reader is not configured to ask panics
	// byProducer: batches of producers with an ID say which wrote them
	// (false: no batch does).
	byProducer bool
	// read is the end offset answered, and when.
	read      Read
	committed []int64
	log       *Timeline
	cost      Cost
	// watchedFrom is the first end offset answered (-1: none yet): the
	// records before it are older than any table.
	watchedFrom int64
}

// scrape makes the cluster answer as at scrape s.
func (c *simCluster) scrape(s Scrape) {
	c.read, c.committed, c.log = s.Read, s.Committed, s.Log
}

// take returns what the cluster was asked since the last take.
func (c *simCluster) take() Cost {
	cost := c.cost
	c.cost = Cost{}
	return cost
}

// now is the simulation's clock: when the current read was answered.
func (c *simCluster) now() time.Time { return time.Unix(0, c.read.Received) }

func (c *simCluster) ConsumerGroups(context.Context) ([]string, error) {
	groups := make([]string, len(c.committed))
	for i := range c.committed {
		groups[i] = groupName(i)
	}
	slices.Sort(groups)
	return groups, nil
}

func (c *simCluster) CommittedOffsets(_ context.Context, groups []string) (map[string]kafka.Commits, error) {
	out := make(map[string]kafka.Commits, len(groups))
	for i, offset := range c.committed {
		out[groupName(i)] = kafka.Commits{{TopicPartition: simPartition, Offset: offset}}
	}
	return out, nil
}

func (c *simCluster) Identify(context.Context, []string) (*kafka.Identity, error) {
	return &kafka.Identity{}, nil
}

func (c *simCluster) EndOffsets(_ context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	c.cost.OffsetReads++
	if c.watchedFrom < 0 {
		c.watchedFrom = c.read.End
	}
	return c.offsetRead(partitions, c.read.End), nil
}

// TopicRetention answers the simulated topic's configuration: records
// kept for ever, compacted where the timeline is, stamped at the append
// where it is LogAppendTime.
func (c *simCluster) TopicRetention(_ context.Context, topics []string) (map[string]kafka.TopicRetention, error) {
	out := make(map[string]kafka.TopicRetention, len(topics))
	for _, t := range topics {
		out[t] = kafka.TopicRetention{Delete: true, RetentionMs: -1, RetentionBytes: -1, Compact: c.log != nil && c.log.Compacted, LogAppendTime: c.log != nil && c.log.LogAppendTime}
	}
	return out, nil
}

// PartitionSizes answers none: no simulated topic deletes by size.
func (c *simCluster) PartitionSizes(context.Context, []kafka.TopicPartition) (map[kafka.TopicPartition]int64, error) {
	return map[kafka.TopicPartition]int64{}, nil
}

// StartOffsets answers 0: the simulation's logs keep every record.
func (c *simCluster) StartOffsets(_ context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	c.cost.OffsetReads++
	return c.offsetRead(partitions, 0), nil
}

func (c *simCluster) offsetRead(partitions []kafka.TopicPartition, offset int64) kafka.OffsetRead {
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}, Sent: time.Unix(0, c.read.Sent), Received: time.Unix(0, c.read.Received)}
	for _, tp := range partitions {
		read.Offsets[tp] = offset
	}
	return read
}

// TimestampOffsets answers from the timeline as a broker's time index
// does: for each time, the first record below the end whose timestamp (in
// milliseconds) is at or after it, with that timestamp. Each time is a
// round of its own, as a request carries one time per partition.
func (c *simCluster) TimestampOffsets(_ context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error) {
	out := kafka.TimePoints{}
	for _, ask := range asks {
		times := slices.Clone(ask.Millis)
		slices.Sort(times)
		for _, at := range slices.Compact(times) {
			c.cost.IndexReads++
			p := kafka.TimePoint{AtMillis: at, Offset: -1, TimestampMillis: -1}
			if offset, stamp, ok := c.log.FirstStampedFrom(at*1e6, c.read.End); ok {
				p.Found, p.Offset, p.TimestampMillis = true, offset, stamp/1e6
			}
			out[ask.TopicPartition] = append(out[ask.TopicPartition], p)
		}
	}
	return out, nil
}

// RecordTimestamps reads the wanted records as the receiver's reads do: a
// read from the first offset not answered yet returns the batches that fit
// in FetchMaxBytes, and answers every wanted offset, and every near one,
// they hold. The cost model's groups (CostGroups) each sit at an offset of
// their own: a record older than the tables is read for each of them, and
// the reads of records inside the watched stretch grow with them too
// (Scale).
func (c *simCluster) RecordTimestamps(_ context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error) {
	out := kafka.RecordReads{}
	end := c.read.End
	for _, w := range wanted {
		reads := c.log.Fetched(w.Offsets, end, FetchMaxBytes)
		var found []kafka.RecordRead
		var watched []int64
		for _, o := range w.Offsets {
			if o >= c.watchedFrom {
				watched = append(watched, o)
				continue
			}
			if _, bytes, ok := readRecord(c.log, o, end); ok {
				c.cost.RecordReads++
				c.cost.FetchBytes += bytes
			}
		}
		rounds, bytes := c.log.FetchRounds(watched, end, FetchMaxBytes)
		c.cost.NearReads += rounds
		c.cost.NearBytes += bytes
		held := func(o int64) bool {
			return slices.ContainsFunc(reads, func(r FetchedRange) bool { return r.From <= o && o < r.UpTo })
		}
		for _, o := range append(slices.Clone(w.Offsets), w.Near...) {
			if o >= end || !held(o) {
				continue
			}
			// A read skips transaction markers (and compacted gaps) to the
			// next data record.
			next, isData := c.log.NextData(o, end)
			if !isData {
				found = append(found, kafka.RecordRead{Wanted: o, RecordTimestamp: kafka.RecordTimestamp{Offset: end, Found: kafka.RecordNone}})
				continue
			}
			left, _ := c.log.NextRecord(o, end)
			ts, _, _ := readRecord(c.log, next, end)
			rec := kafka.RecordTimestamp{Offset: next, Timestamp: ts, Found: kafka.RecordTimed,
				Transactional: next != left || c.log.Transactional(next)}
			if identified, _ := c.log.Identified(next); c.byProducer && identified {
				rec.Producer, _ = c.log.Producer(next)
				rec.ByProducer = true
			}
			found = append(found, kafka.RecordRead{Wanted: o, RecordTimestamp: rec})
		}
		out[w.TopicPartition] = found
	}
	return out, nil
}
