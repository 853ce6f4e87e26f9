package progress

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"
)

// Stored state layout (version 2), every integer an unsigned varint:
//
//	magic "KTLP" | version | group count
//	per group: name length, name | topic count
//	  per topic: name length, name | pair count
//	    per pair: partition | committed offset | stuck since (unix ns)
//	checksum of everything after the magic (statecodec.AppendChecksum)
//
// Only the stuck clocks are kept: a pair whose clock is not running needs
// nothing to resume, and the consumption marks of a collector that was down
// are better restarted than stretched over the outage. Anything that does
// not decode exactly, or does not match its checksum, is rejected whole.
// Version 1 has no checksum, and is still read; no single flipped bit
// turns 2 into 1.
const (
	stateMagic            = "KTLP"
	stateVersion          = 2
	stateVersionUnchecked = 1
)

// ErrStateCorrupt is wrapped by the error of RestoreState when the state is
// damaged or was not written by EncodeState.
var ErrStateCorrupt = statecodec.ErrCorrupt

// pairKey names one group's partition.
type pairKey struct {
	group, topic string
	partition    int32
}

// stuckClock is a saved stuck clock: it resumes only at the same offset.
type stuckClock struct {
	offset int64
	since  int64 // unix nanoseconds, > 0
}

// EncodeState serialises the running stuck clocks, those of pairs observed
// and those restored but not seen yet. The copy is taken under the lock
// and encoded outside it, so that saving delays no scrape.
func (t *Tracker) EncodeState() []byte {
	t.mu.Lock()
	clocks := make(map[pairKey]stuckClock, len(t.restored))
	for key, c := range t.restored {
		clocks[key] = c
	}
	for name, g := range t.groups {
		for i := range g.pairs.Len() {
			tp, p := g.pairs.At(i)
			if n := p.len(); n > 0 && p.stuckSince != 0 {
				key := pairKey{group: name, topic: tp.Topic, partition: tp.Partition}
				clocks[key] = stuckClock{offset: p.marks.at(n - 1).Offset, since: p.stuckSince}
			}
		}
	}
	t.mu.Unlock()
	return encodeState(clocks)
}

// RestoreState installs the stuck clocks of state made by EncodeState: each
// resumes when its pair is first observed at the offset it was saved at.
// It is called before the first scrape. Nothing is installed unless all of
// data decodes; the error wraps ErrStateCorrupt when data is damaged and
// says which version it is when it is another version's.
func (t *Tracker) RestoreState(data []byte) (pairs int, err error) {
	clocks, err := decodeState(data)
	if err != nil {
		return 0, fmt.Errorf("restore stuck clocks from %d bytes: %w", len(data), err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.restored = clocks
	t.restoredScrape = t.scrapes
	return len(clocks), nil
}

func encodeState(clocks map[pairKey]stuckClock) []byte {
	keys := make([]pairKey, 0, len(clocks))
	for key := range clocks {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b pairKey) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	var buf bytes.Buffer
	var scratch [binary.MaxVarintLen64]byte
	put := func(v uint64) { buf.Write(scratch[:binary.PutUvarint(scratch[:], v)]) }
	putString := func(s string) {
		put(uint64(len(s)))
		buf.WriteString(s)
	}
	// runLength counts the keys from i sharing what same compares.
	runLength := func(i int, same func(a, b pairKey) bool) int {
		n := 1
		for i+n < len(keys) && same(keys[i], keys[i+n]) {
			n++
		}
		return n
	}
	sameGroup := func(a, b pairKey) bool { return a.group == b.group }
	sameTopic := func(a, b pairKey) bool { return a.group == b.group && a.topic == b.topic }

	buf.WriteString(stateMagic)
	put(stateVersion)
	groups := 0
	for i := 0; i < len(keys); i += runLength(i, sameGroup) {
		groups++
	}
	put(uint64(groups))
	for g := 0; g < len(keys); {
		groupEnd := g + runLength(g, sameGroup)
		putString(keys[g].group)
		topics := 0
		for i := g; i < groupEnd; i += runLength(i, sameTopic) {
			topics++
		}
		put(uint64(topics))
		for tp := g; tp < groupEnd; {
			topicEnd := tp + runLength(tp, sameTopic)
			putString(keys[tp].topic)
			put(uint64(topicEnd - tp))
			for _, key := range keys[tp:topicEnd] {
				c := clocks[key]
				put(uint64(key.partition))
				put(uint64(c.offset))
				put(uint64(c.since))
			}
			tp = topicEnd
		}
		g = groupEnd
	}
	return statecodec.AppendChecksum(buf.Bytes(), len(stateMagic))
}

// checked is body without its checksum, and whether it matches.
func checked(body []byte) ([]byte, bool) {
	if len(body) < statecodec.ChecksumLen {
		return nil, false
	}
	r := statecodec.NewReader(body)
	content := r.Bytes(uint64(len(body) - statecodec.ChecksumLen))
	return content, r.Checksum(0)
}

func decodeState(data []byte) (map[pairKey]stuckClock, error) {
	if !bytes.HasPrefix(data, []byte(stateMagic)) {
		return nil, fmt.Errorf("%w: not a kafka_time_lag progress state (bad magic)", ErrStateCorrupt)
	}
	body := data[len(stateMagic):]
	d := statecodec.NewReader(body)
	version := d.Bounded(math.MaxUint64, "version")
	if d.OK() && version != stateVersion && version != stateVersionUnchecked {
		return nil, fmt.Errorf("stored progress state has version %d, this receiver reads versions %d and %d", version, stateVersionUnchecked, stateVersion)
	}
	if d.OK() && version == stateVersion {
		content, ok := checked(body)
		if !ok {
			return nil, fmt.Errorf("%w: %w", ErrStateCorrupt, statecodec.ErrDamaged)
		}
		d = statecodec.NewReader(content[d.Pos():])
	}
	out := map[pairKey]stuckClock{}
	// A group is at least 3 bytes (name length, a name byte, topic count);
	// so is a topic; a pair at least 3 (one byte per field).
	groups := d.Count(3, "group count")
	seenGroups := map[string]bool{}
	for range groups {
		group := d.Name("group name")
		if d.OK() && seenGroups[group] {
			d.Fail("group %q stored twice", group)
		}
		seenGroups[group] = true
		topics := d.Count(3, "topic count")
		seenTopics := map[string]bool{}
		for range topics {
			topic := d.Name("topic name")
			if d.OK() && seenTopics[topic] {
				d.Fail("topic %q of group %q stored twice", topic, group)
			}
			seenTopics[topic] = true
			pairs := d.Count(3, "pair count")
			for range pairs {
				key := pairKey{group: group, topic: topic, partition: int32(d.Bounded(math.MaxInt32, "partition"))}
				c := stuckClock{offset: int64(d.Bounded(math.MaxInt64, "offset")), since: int64(d.Bounded(math.MaxInt64, "stuck since"))}
				if !d.OK() {
					return nil, d.Err()
				}
				if _, dup := out[key]; dup {
					return nil, fmt.Errorf("%w: %s/%d of group %q stored twice", ErrStateCorrupt, topic, key.partition, group)
				}
				if c.since == 0 {
					return nil, fmt.Errorf("%w: %s/%d of group %q has no stuck time", ErrStateCorrupt, topic, key.partition, group)
				}
				if c.since < kafka.MinRecordTime.UnixNano() {
					// No receiver ran then: an edited or damaged file, which
					// would report decades of stuck time.
					return nil, fmt.Errorf("%w: %s/%d of group %q stuck since %s, before Kafka existed", ErrStateCorrupt, topic, key.partition, group,
						time.Unix(0, c.since).UTC().Format(time.RFC3339))
				}
				out[key] = c
			}
		}
		if !d.OK() {
			return nil, d.Err()
		}
	}
	if d.OK() && d.Len() != 0 {
		d.Fail("%d trailing bytes", d.Len())
	}
	if !d.OK() {
		return nil, d.Err()
	}
	return out, nil
}
