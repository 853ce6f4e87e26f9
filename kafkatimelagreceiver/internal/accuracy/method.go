package accuracy

// Read is one end-offset read: the end offset as the broker answered at
// Sent, the answer in hand at Received, and the log start offset then.
type Read struct {
	End            int64
	Sent, Received int64
	Start          int64
}

// Scrape is what every method is given at a scrape: the groups' committed
// offsets on the partition (read first), then the scrape's own end-offset
// read, and the partition's log, which only a method that reads records or
// asks for the log's anchors may look at.
type Scrape struct {
	Committed []int64 // by group
	Read
	Log *Timeline
}

// Estimate is one method's time lags at one scrape, by group, and what it
// asked of Kafka for them since the previous scrape.
type Estimate struct {
	At     int64 // the instant the time lags are of
	Groups []GroupEstimate
	Cost   Cost
}

// GroupEstimate is one group's time lag in seconds, when OK.
type GroupEstimate struct {
	TimeLag float64
	OK      bool
}

// Cost counts what a method asked of Kafka for one partition and its
// groups: offset reads (one ListOffsets spec each: latest, earliest or max
// timestamp) and record reads with the bytes their answers held.
type Cost struct {
	OffsetReads int64
	// RecordReads are reads of records for groups, each group's its own.
	RecordReads int64
	FetchBytes  int64
	// SharedReads are record reads made once per partition whatever its
	// groups (the anchors' log-start record).
	SharedReads, SharedBytes int64
	// NearReads are this receiver's rounds of reads of records inside the
	// watched stretch, for its groups' records and their producers' clocks:
	// more groups, more of them.
	NearReads, NearBytes int64
	// IndexReads are times looked up in the partition's time index
	// (ListOffsets by timestamp), each in a round of its own, for its
	// groups' records: more groups, more of them.
	IndexReads int64
}

// Method estimates time lag from the observations it is given: every
// sampling interval a Sample (methods that keep no history ignore them),
// every scrape a Scrape.
type Method interface {
	Sample(r Read)
	Scrape(s Scrape) Estimate
}

// PartitionsMethod is a method that reads every partition of a shape at
// once, as one instance: its samples and scrapes are of all of them, by
// partition, and what it spends is shared (this receiver's per-scrape
// budgets).
type PartitionsMethod interface {
	SampleAll(reads []Read)
	ScrapeAll(scrapes []Scrape) []Estimate
}

// MethodSpec names a method and makes a fresh one for a run at a sampling
// interval (nanoseconds).
type MethodSpec struct {
	Key, Name string
	New       func(sampling int64) Method
	// NewPartitions, when set, makes one instance for every partition of a
	// shape that is read as one (Shape.OneInstance); otherwise such a shape
	// gets a fresh instance a partition, as the method runs by design.
	NewPartitions func(sampling int64, partitions int) PartitionsMethod
	// Warm is how long before the scored stretch the method starts
	// watching (a restart that kept its state); 0: it starts cold, when
	// the scored stretch does.
	Warm int64
	// Tool is the tool that ships the method, the version its description
	// is read from, with a link to the source it is read from, and the
	// settings it runs at, with the source of each default; empty for
	// this receiver's rows. Defaults says whether the row runs at the
	// tool's defaults, and where not, what differs.
	Tool, Source, Settings, Defaults string
}

// FetchMaxBytes is the most a record read asks of a partition: the
// receiver's first fetch size (a producer's batch is rarely larger).
const FetchMaxBytes = 64 << 10

// readRecord is a record-timestamp read of the record at offset: its
// timestamp (its producer's clock, in Kafka's milliseconds) and the bytes
// the answer held; not ok at or past the end, where there is no record,
// nor below the log start, where retention deleted it (a Fetch there is
// out of range).
func readRecord(log *Timeline, offset, start, end int64) (ts, bytes int64, ok bool) {
	if offset >= end || offset < start {
		return 0, 0, false
	}
	// A read from a compacted gap returns the next record left.
	if next, left := log.NextRecord(offset, end); left {
		offset = next
	}
	ts, ok = log.Stamp(offset)
	_, bytes = log.Fetch(offset, end, FetchMaxBytes)
	return ts / 1e6 * 1e6, bytes, ok
}

// lagSince is the time lag at at of a record appended at appended, never
// negative (a method's estimate past the scrape is not a lead).
func lagSince(at int64, appended float64) float64 {
	return max(0, (float64(at)-appended)/1e9)
}
