// Package accuracy is a deterministic simulation of a topic's partitions
// and the consumer groups reading them, the ground truth of every record's
// append and send times in hand,
// that runs methods of estimating time lag over exactly the observations
// each would have made and scores them against the truth. It does no I/O
// and reads no clock: every time is the simulation's.
package accuracy

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"
)

// Epoch is the simulated wall clock's zero: record timestamps must look
// like a clock's (kafka.MinRecordTime), so the simulation does not start at
// the Unix epoch.
var Epoch = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC).UnixNano()

// Timeline is what a partition's producers appended: batches of records,
// each batch appended by the leader at one instant and visible (below the
// high watermark) from a later one, the records of a batch at consecutive
// offsets. Each record carries a timestamp (its producer's clock when
// send() was called, or the broker's append time on a LogAppendTime
// topic) and was truly sent at an instant of its own: the CreateTime truth.
// Offsets start at 0.
type Timeline struct {
	at      []int64 // append time of each batch, non-decreasing
	visible []int64 // when the high watermark passed each batch, non-decreasing
	end     []int64 // end offset after each batch (cumulative count)
	stamp   []int64 // each batch's last (and largest) record timestamp
	first   []int64 // each batch's first record timestamp
	// sentFirst and sentLast are when the batch's first and last records
	// were sent (send() on a true clock); its records' are spread between.
	sentFirst, sentLast []int64
	// producer is each batch's producer ID; noID tells the batches of
	// producers without one (not idempotent), control the transaction
	// markers (one offset, no data record).
	producer      []int64
	noID, control []bool
	// removed tells the batches the log cleaner removed (their keys were
	// written again): their offsets were taken, no record of them is left.
	removed []bool
	// aborted tells the data batches of transactions that were aborted: in
	// the log and its time index, skipped by read_committed consumers.
	aborted []bool
	// open are each producer's transactions the last stable offset waits
	// for (Batch.TxnStart), in append order.
	open map[int64][]openTxn
	// Compacted: the topic's cleanup.policy compacts.
	Compacted bool
	// LogAppendTime: the topic's message.timestamp.type is LogAppendTime,
	// so its stamps are the broker's append times.
	LogAppendTime bool
	// Retention is the topic's deletion by time (Retain), when Ms is set;
	// startAt and startOffset are the log start's moves: from startAt[i]
	// it is startOffset[i].
	Retention            Retention
	startAt, startOffset []int64
	// transactional are the producers that wrote a marker: their batches
	// are transactional ones.
	transactional map[int64]bool
	// maxUpTo[i] is the first batch of those up to i with the largest
	// timestamp.
	maxUpTo []int32
}

// Append adds a batch of n records appended at at, stamped at at by
// producer 0, whose clock is the broker's; n <= 0 or a time before the last
// batch's is ignored.
func (tl *Timeline) Append(at, n int64) { tl.AppendStamped(0, at, at, n) }

// AppendStamped adds a batch of n records appended (and visible) at at and
// stamped stamp by producer, whose clock is off by stamp-at: sent at at.
func (tl *Timeline) AppendStamped(producer, at, stamp, n int64) {
	tl.AppendBatch(Batch{Producer: producer, At: at, Visible: at, FirstStamp: stamp, LastStamp: stamp, SentFirst: at, SentLast: at, Records: n})
}

// Batch is one produce request's records on one partition.
type Batch struct {
	Producer int64
	// NoID: the producer has no ID (not idempotent); Control: a
	// transaction marker (Records 1); Removed: compacted away, its offsets
	// taken but no record left; Aborted: a data batch of a transaction
	// that was aborted.
	NoID, Control, Removed, Aborted bool
	// TxnStart: the first batch of its producer's transaction on the
	// partition, which holds the last stable offset at its first offset
	// until its marker (the producer's next Control batch) is replicated.
	TxnStart bool
	// At is when the leader appended it, Visible when the high watermark
	// passed it.
	At, Visible int64
	// FirstStamp and LastStamp are its first and last records' timestamps,
	// SentFirst and SentLast when they were truly sent.
	FirstStamp, LastStamp int64
	SentFirst, SentLast   int64
	Records               int64
}

// AppendBatch adds b; no records, or an append before the last batch's,
// is ignored. Visibility never goes back: a batch is visible no sooner
// than the one before it.
func (tl *Timeline) AppendBatch(b Batch) {
	if b.Records <= 0 || len(tl.at) > 0 && b.At < tl.at[len(tl.at)-1] {
		return
	}
	visible := max(b.Visible, b.At)
	if k := len(tl.visible); k > 0 {
		visible = max(visible, tl.visible[k-1])
	}
	tl.at = append(tl.at, b.At)
	tl.visible = append(tl.visible, visible)
	tl.end = append(tl.end, tl.EndOffset()+b.Records)
	if b.Removed {
		// No record left to answer a time index with.
		b.FirstStamp, b.LastStamp = 0, 0
	}
	best := int32(len(tl.stamp))
	if n := len(tl.maxUpTo); n > 0 && tl.stamp[tl.maxUpTo[n-1]] >= b.LastStamp {
		best = tl.maxUpTo[n-1]
	}
	tl.stamp = append(tl.stamp, b.LastStamp)
	tl.first = append(tl.first, b.FirstStamp)
	tl.sentFirst = append(tl.sentFirst, b.SentFirst)
	tl.sentLast = append(tl.sentLast, b.SentLast)
	tl.producer = append(tl.producer, b.Producer)
	tl.noID = append(tl.noID, b.NoID)
	tl.control = append(tl.control, b.Control)
	tl.removed = append(tl.removed, b.Removed)
	tl.aborted = append(tl.aborted, b.Aborted)
	tl.maxUpTo = append(tl.maxUpTo, best)
	if b.TxnStart {
		if tl.open == nil {
			tl.open = map[int64][]openTxn{}
		}
		tl.open[b.Producer] = append(tl.open[b.Producer], openTxn{first: tl.EndOffset() - b.Records, from: b.At, until: math.MaxInt64})
	}
	if txns := tl.open[b.Producer]; b.Control && len(txns) > 0 && txns[len(txns)-1].until == math.MaxInt64 {
		txns[len(txns)-1].until = visible
	}
	if b.Control {
		if tl.transactional == nil {
			tl.transactional = map[int64]bool{}
		}
		tl.transactional[b.Producer] = true
	}
}

// Transactional tells whether the record at offset was written in a
// transaction: by a producer that writes markers.
func (tl *Timeline) Transactional(offset int64) bool {
	producer, ok := tl.Producer(offset)
	return ok && tl.transactional[producer]
}

// EndOffset is the end offset after every batch (the next offset to write).
func (tl *Timeline) EndOffset() int64 {
	if len(tl.end) == 0 {
		return 0
	}
	return tl.end[len(tl.end)-1]
}

// EndAt is the end offset a ListOffsets for the latest offset answers at
// time t, the high watermark: every batch visible at or before t.
func (tl *Timeline) EndAt(t int64) int64 {
	i := atOrBefore(tl.visible, t)
	if i == 0 {
		return 0
	}
	return tl.end[i-1]
}

// batchOf is the index of the batch holding offset, and whether there is one.
func (tl *Timeline) batchOf(offset int64) (int, bool) {
	if offset < 0 || offset >= tl.EndOffset() {
		return 0, false
	}
	i, found := slices.BinarySearch(tl.end, offset)
	if found {
		i++ // end is exclusive: offset opens the next batch
	}
	return i, true
}

// AppendTime is when the record at offset was appended.
func (tl *Timeline) AppendTime(offset int64) (int64, bool) {
	i, ok := tl.batchOf(offset)
	if !ok {
		return 0, false
	}
	return tl.at[i], true
}

// Stamp is the timestamp of the record at offset: its producer's clock
// when it was sent (records of a batch spread between its first and last
// timestamps), or its append time on a LogAppendTime topic.
func (tl *Timeline) Stamp(offset int64) (int64, bool) {
	i, ok := tl.batchOf(offset)
	if !ok {
		return 0, false
	}
	return spreadIn(tl, i, offset, tl.first[i], tl.stamp[i]), true
}

// Sent is when the record at offset was truly sent: the CreateTime truth.
func (tl *Timeline) Sent(offset int64) (int64, bool) {
	i, ok := tl.batchOf(offset)
	if !ok {
		return 0, false
	}
	return spreadIn(tl, i, offset, tl.sentFirst[i], tl.sentLast[i]), true
}

// spreadIn places the record at offset of batch i between from (its first
// record's) and to (its last record's).
func spreadIn(tl *Timeline, i int, offset, from, to int64) int64 {
	start := int64(0)
	if i > 0 {
		start = tl.end[i-1]
	}
	n := tl.end[i] - start
	if n <= 1 || from == to {
		return to
	}
	return from + (to-from)*(offset-start)/(n-1)
}

// Identified tells whether the record at offset was written by a producer
// with an ID, and whether it is a data record (not a transaction marker).
func (tl *Timeline) Identified(offset int64) (byProducer, data bool) {
	i, ok := tl.batchOf(offset)
	if !ok {
		return false, false
	}
	return !tl.noID[i], !tl.control[i]
}

// NextData is the first data record's offset at or after offset below
// end (past transaction markers, aborted transactions' records and
// compacted gaps: the next record a read_committed consumer gets), and
// whether there is one.
func (tl *Timeline) NextData(offset, end int64) (int64, bool) {
	for offset < end {
		i, ok := tl.batchOf(offset)
		if !ok {
			return offset, false
		}
		if !tl.control[i] && !tl.removed[i] && !tl.aborted[i] {
			return offset, true
		}
		offset = tl.end[i]
	}
	return offset, false
}

// NextRecord is the first record left at or after offset below end (past
// compacted gaps: a read from offset starts there), and whether there is
// one.
func (tl *Timeline) NextRecord(offset, end int64) (int64, bool) {
	for offset < end {
		i, ok := tl.batchOf(offset)
		if !ok {
			return offset, false
		}
		if !tl.removed[i] {
			return offset, true
		}
		offset = tl.end[i]
	}
	return offset, false
}

// Producer is the ID of the producer that wrote the record at offset.
func (tl *Timeline) Producer(offset int64) (int64, bool) {
	i, ok := tl.batchOf(offset)
	if !ok {
		return 0, false
	}
	return tl.producer[i], true
}

// MaxStamp is the offset and timestamp of the record with the largest
// timestamp below end (the first such), as ListOffsets for the max
// timestamp answers.
func (tl *Timeline) MaxStamp(end int64) (offset, stamp int64) {
	last := atOrBefore(tl.end, end) // batches wholly below end
	if last == 0 {
		return 0, 0
	}
	best := tl.maxUpTo[last-1]
	if best > 0 {
		offset = tl.end[best-1]
	}
	return offset, tl.stamp[best]
}

// FirstStampedFrom is the first record below end, in offset order, whose
// timestamp truncated to the millisecond is at or after the millisecond
// of t (a time index's answer), and that timestamp. A broker answers a
// record, not a batch: in the first batch whose largest timestamp reaches
// t, the first record stamped at or after t (FileRecords.searchForTimestamp).
func (tl *Timeline) FirstStampedFrom(t, end int64) (offset, stamp int64, ok bool) {
	ms := int64(time.Millisecond)
	floor := func(x int64) int64 { return x / ms } // times are after the epoch
	// The largest stamp up to each batch grows with the batch: the first
	// batch where it reaches t is the first stamped at or after t.
	i, _ := slices.BinarySearchFunc(tl.maxUpTo, floor(t), func(best int32, want int64) int {
		return cmp.Compare(floor(tl.stamp[best]), want)
	})
	if i == len(tl.stamp) {
		return 0, 0, false
	}
	start := int64(0)
	if i > 0 {
		start = tl.end[i-1]
	}
	// Its records' stamps grow from its first to its last, which reaches t.
	stampOf := func(o int64) int64 { return spreadIn(tl, i, o, tl.first[i], tl.stamp[i]) }
	offset = start + int64(sort.Search(int(tl.end[i]-start), func(j int) bool { return floor(stampOf(start+int64(j))) >= floor(t) }))
	if offset >= end {
		return 0, 0, false
	}
	return offset, stampOf(offset), true
}

// Commits are a group's committed offsets over time: offset[i] from at[i].
type Commits struct {
	at     []int64
	offset []int64
}

// Commit records that the group committed offset at at; a time before the
// last commit's is ignored.
func (c *Commits) Commit(at, offset int64) {
	if len(c.at) > 0 && at < c.at[len(c.at)-1] {
		return
	}
	c.at = append(c.at, at)
	c.offset = append(c.offset, offset)
}

// At is the committed offset at t, and whether the group had committed.
func (c *Commits) At(t int64) (int64, bool) {
	i := atOrBefore(c.at, t)
	if i == 0 {
		return 0, false
	}
	return c.offset[i-1], true
}

// atOrBefore is how many of the sorted times are at or before t.
func atOrBefore(times []int64, t int64) int {
	i, _ := slices.BinarySearch(times, t+1)
	return i
}
