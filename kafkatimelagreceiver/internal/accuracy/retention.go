package accuracy

import "time"

// Retention is a topic's deletion by time (cleanup.policy delete): its
// log rolls a segment every SegmentMs (segment.ms), and every CheckEvery
// (log.retention.check.interval.ms) the broker deletes the oldest segments
// whose largest timestamp is more than Ms (retention.ms) old, never the
// active one; the log start moves to the first offset left. The checks
// come at Phase into each CheckEvery (when the broker started).
type Retention struct{ Ms, SegmentMs, CheckEvery, Phase int64 }

// Retain deletes as r says from from to to, after every batch is
// appended: the log start's moves (StartAt).
func (tl *Timeline) Retain(r Retention, from, to int64) {
	tl.Retention = r
	segment := func(i int) int64 { return (tl.at[i] - from) / r.SegmentMs }
	first := 0 // the first batch left
	for check := from + r.Phase + r.CheckEvery; check < to; check += r.CheckEvery {
		active := segment(max(0, atOrBefore(tl.at, check)-1))
		moved := false
		for first < len(tl.at) && segment(first) < active {
			last, largest := first, tl.stamp[first]
			for last+1 < len(tl.at) && segment(last+1) == segment(first) {
				last++
				largest = max(largest, tl.stamp[last])
			}
			if largest >= check-r.Ms {
				break
			}
			first, moved = last+1, true
		}
		if moved {
			tl.startAt = append(tl.startAt, check)
			tl.startOffset = append(tl.startOffset, tl.end[first-1])
		}
	}
}

// StartAt is the log start offset at time t: 0 until retention deletes.
func (tl *Timeline) StartAt(t int64) int64 {
	i := atOrBefore(tl.startAt, t)
	if i == 0 {
		return 0
	}
	return tl.startOffset[i-1]
}

// FirstStampedLeft is FirstStampedFrom in the log left at or after start
// (retention deleted the records below it, and their time index).
func (tl *Timeline) FirstStampedLeft(t, start, end int64) (offset, stamp int64, ok bool) {
	offset, stamp, ok = tl.FirstStampedFrom(t, end)
	if !ok || offset >= start {
		return offset, stamp, ok
	}
	ms := int64(time.Millisecond)
	i, left := tl.batchOf(start)
	for ; left && i < len(tl.end) && (i == 0 || tl.end[i-1] < end); i++ {
		if tl.stamp[i]/ms < t/ms {
			continue
		}
		from := start
		if i > 0 {
			from = max(start, tl.end[i-1])
		}
		for o := from; o < min(tl.end[i], end); o++ {
			if st := spreadIn(tl, i, o, tl.first[i], tl.stamp[i]); st/ms >= t/ms {
				return o, st, true
			}
		}
	}
	return 0, 0, false
}
