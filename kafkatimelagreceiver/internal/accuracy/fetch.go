package accuracy

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
