package kafkatimelagreceiver

import "sync"

// recordTimes remembers the timestamps read for records at committed offsets
// older than their partition's table, so that a group stuck at one offset
// costs one Fetch, not one per scrape. Entries live while some group is still
// committed there.
type recordTimes struct {
	mu    sync.Mutex
	known map[recordAt]recordTimestamp
}

func newRecordTimes() *recordTimes {
	return &recordTimes{known: map[recordAt]recordTimestamp{}}
}

func (r *recordTimes) get(at recordAt) (recordTimestamp, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts, ok := r.known[at]
	return ts, ok
}

func (r *recordTimes) putAll(found map[recordAt]recordTimestamp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for at, ts := range found {
		r.known[at] = ts
	}
}

// forget drops everything known about the partitions, whose logs were
// recreated or truncated.
func (r *recordTimes) forget(partitions []topicPartition) {
	if len(partitions) == 0 {
		return
	}
	drop := make(map[topicPartition]struct{}, len(partitions))
	for _, tp := range partitions {
		drop[tp] = struct{}{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for at := range r.known {
		if _, ok := drop[at.topicPartition]; ok {
			delete(r.known, at)
		}
	}
}

// retain keeps only the entries still in use.
func (r *recordTimes) retain(used map[recordAt]struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for at := range r.known {
		if _, ok := used[at]; !ok {
			delete(r.known, at)
		}
	}
}

func (r *recordTimes) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.known)
}
