// Package accuracy is a deterministic simulation of one partition and one
// consumer group, the ground truth of every record's append time in hand,
// that runs methods of estimating time lag over exactly the observations
// each would have made and scores them against the truth. It does no I/O
// and reads no clock: every time is the simulation's.
package accuracy

import (
	"slices"
	"time"
)

// Epoch is the simulated wall clock's zero: record timestamps must look
// like a clock's (kafka.MinRecordTime), so the simulation does not start at
// the Unix epoch.
var Epoch = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC).UnixNano()

// Timeline is what a partition's producers appended: batches of records,
// each batch appended at one instant, the records of a batch at
// consecutive offsets, every record stamped with its batch's timestamp
// (its producer's clock when it sent the batch). Every producer has an ID,
// as idempotent producers (the clients' default since Kafka 3.0) do, which
// its batches carry. Offsets start at 0.
type Timeline struct {
	at    []int64 // append time of each batch, non-decreasing
	end   []int64 // end offset after each batch (cumulative count)
	stamp []int64 // each batch's timestamp
	// producer is each batch's producer ID.
	producer []int64
	// maxUpTo[i] is the first batch of those up to i with the largest
	// timestamp.
	maxUpTo []int32
}

// Append adds a batch of n records appended at at, stamped at at by
// producer 0, whose clock is the broker's; n <= 0 or a time before the last
// batch's is ignored.
func (tl *Timeline) Append(at, n int64) { tl.AppendStamped(0, at, at, n) }

// AppendStamped adds a batch of n records appended at at and stamped
// stamp by producer, whose clock is off by stamp-at.
func (tl *Timeline) AppendStamped(producer, at, stamp, n int64) {
	if n <= 0 || len(tl.at) > 0 && at < tl.at[len(tl.at)-1] {
		return
	}
	tl.at = append(tl.at, at)
	tl.end = append(tl.end, tl.EndOffset()+n)
	best := int32(len(tl.stamp))
	if n := len(tl.maxUpTo); n > 0 && tl.stamp[tl.maxUpTo[n-1]] >= stamp {
		best = tl.maxUpTo[n-1]
	}
	tl.stamp = append(tl.stamp, stamp)
	tl.producer = append(tl.producer, producer)
	tl.maxUpTo = append(tl.maxUpTo, best)
}

// EndOffset is the end offset after every batch (the next offset to write).
func (tl *Timeline) EndOffset() int64 {
	if len(tl.end) == 0 {
		return 0
	}
	return tl.end[len(tl.end)-1]
}

// EndAt is the end offset at time t: every batch appended at or before t.
func (tl *Timeline) EndAt(t int64) int64 {
	i := atOrBefore(tl.at, t)
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

// Stamp is the timestamp of the record at offset: its producer's clock.
func (tl *Timeline) Stamp(offset int64) (int64, bool) {
	i, ok := tl.batchOf(offset)
	if !ok {
		return 0, false
	}
	return tl.stamp[i], true
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

// RecordSize is the bytes a record takes in a batch, for the cost model.
const RecordSize = 200

// batchHeader is a record batch's header (Kafka's v2 format).
const batchHeader = 61

// Fetch is what a read of the record at offset returns when the log ends
// at end: the batch holding it and those after it, whole, up to maxBytes
// (and never less than that first batch, which a broker returns whole).
// It returns the offset past the last batch returned and the bytes.
func (tl *Timeline) Fetch(offset, end, maxBytes int64) (upTo, bytes int64) {
	i, ok := tl.batchOf(offset)
	if !ok {
		return offset, 0
	}
	for j := i; j < len(tl.end) && tl.end[j] <= max(end, tl.end[i]); j++ {
		start := int64(0)
		if j > 0 {
			start = tl.end[j-1]
		}
		size := (tl.end[j]-start)*RecordSize + batchHeader
		if j > i && bytes+size > maxBytes {
			break
		}
		upTo, bytes = tl.end[j], bytes+size
	}
	return upTo, bytes
}

// FetchRounds is what reading the records at offsets (sorted) costs when
// each read answers every wanted offset the batches it returns hold, as
// the receiver's reads do: how many reads, and their bytes.
func (tl *Timeline) FetchRounds(offsets []int64, end, maxBytes int64) (rounds, bytes int64) {
	for _, r := range tl.Fetched(offsets, end, maxBytes) {
		rounds, bytes = rounds+1, bytes+r.Bytes
	}
	return rounds, bytes
}

// FetchedRange is what one read returned: the records from From up to
// (not including) UpTo, in Bytes.
type FetchedRange struct {
	From, UpTo, Bytes int64
}

// Fetched is what reading the records at offsets (sorted) returns, read by
// read, when each read answers every wanted offset the batches it returns
// hold and the next starts from the first offset left.
func (tl *Timeline) Fetched(offsets []int64, end, maxBytes int64) []FetchedRange {
	var reads []FetchedRange
	for i := 0; i < len(offsets); {
		upTo, b := tl.Fetch(offsets[i], end, maxBytes)
		reads = append(reads, FetchedRange{From: offsets[i], UpTo: upTo, Bytes: b})
		for i < len(offsets) && (offsets[i] < upTo || b == 0) {
			i++
		}
	}
	return reads
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
