package timetable

import (
	"fmt"
	"math"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// restoreClockTolerance is how far in the future a restored table may have
// been read: clocks of two hosts kept by NTP agree to far better, and state
// from further ahead is from a clock that was wrong, or since stepped back.
const restoreClockTolerance = time.Minute

// Restored says what RestoreState installed.
type Restored struct {
	Tables int
	// Skipped says, for each table left out, why: its bytes were damaged
	// in storage (ErrDamaged), it broke an invariant of the tables, or its
	// times lie in the future or before any Kafka record.
	Skipped []error
}

// encodeChunk is how many tables EncodeState encodes per hold of the lock:
// about a millisecond of work for busy tables (BenchmarkEncodeStateChunk),
// so that saving the tables of a large cluster delays neither the sampler
// nor a scrape by more than that.
const encodeChunk = 512

// EncodeState serialises every non-empty table with its log start offset
// and topic id, and the id of the cluster they were sampled from. It copies
// no table, and holds the lock only while it encodes encodeChunk tables,
// in the order of the last Track, into a buffer of one chunk, which it
// appends to the state outside the lock: neither the sampler nor a scrape
// waits long, and memory does not double while it saves. Each table is
// saved as it was when its chunk was encoded; one dropped meanwhile is left
// out.
func (s *Store) EncodeState() []byte {
	s.mu.Lock()
	tps, clusterID := s.sorted, s.clusterID
	s.mu.Unlock()
	// The header, whose count is known at the end, goes into room kept
	// before the frames, so that the state is not copied to prepend it.
	room := stateHeaderRoom(clusterID)
	out := make([]byte, room)
	var chunk, body []byte
	count := 0
	for from := 0; from < len(tps); from += encodeChunk {
		var n int
		chunk, body, n = s.encodeTables(chunk[:0], body, tps[from:min(from+encodeChunk, len(tps))])
		out = append(out, chunk...)
		count += n
	}
	header := appendStateHeader(clusterID, count, 0, nil)
	copy(out[room-len(header):], header)
	return out[room-len(header):]
}

// encodeTables appends the frames of the tables of tps that have points to
// frames under the lock, encoding each in body, and returns how many.
func (s *Store) encodeTables(frames, body []byte, tps []kafka.TopicPartition) (newFrames, newBody []byte, count int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tp := range tps {
		t, ok := s.tables[tp]
		if !ok || t.n == 0 {
			continue
		}
		start, hasStart := s.starts[tp]
		frames, body = appendFramedTable(frames, body, storedTable{tp: tp, topicID: s.topicIDs[tp.Topic], table: t, start: start, hasStart: hasStart})
		count++
	}
	return frames, body, count
}

// RestoreState installs the tables of state made by EncodeState (of this
// release or an earlier one), as the tracked set until the first Track says
// which are still wanted, and as tables whose cluster and topic ids are to
// be checked (see Identify). The store's bounds apply: tables saved under a
// larger maxPoints are thinned. A table whose checksum does not match, that
// breaks an invariant, or (with a clock) was read more than
// restoreClockTolerance after the store's clock says it is now or holds a
// point before kafka.MinRecordTime, is left out and named in Skipped; the
// others are installed. The error, when the state cannot be read at all,
// wraps ErrStateCorrupt when data is damaged, and says which version it is
// when it is another version's; then nothing is installed.
func (s *Store) RestoreState(data []byte) (Restored, error) {
	notBefore, notAfter := int64(math.MinInt64), int64(math.MaxInt64)
	var now time.Time
	if s.clock != nil {
		now = s.clock()
		notBefore = kafka.MinRecordTime.UnixNano()
		notAfter = now.Add(restoreClockTolerance).UnixNano()
	}
	decoded, err := decodeState(data, s.maxPoints, s.maxGap, notBefore, notAfter)
	if err != nil {
		return Restored{}, fmt.Errorf("restore interpolation tables from %d bytes: %w", len(data), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.sortTracked()
	for _, st := range decoded.tables {
		s.tables[st.tp] = st.table
		st.table.wanted = now
		if st.hasStart {
			s.starts[st.tp] = st.start
		}
		if !st.topicID.IsZero() {
			s.topicIDs[st.tp.Topic] = st.topicID
		}
	}
	if decoded.clusterID != "" {
		s.clusterID = decoded.clusterID
	}
	s.identified = false
	return Restored{Tables: len(decoded.tables), Skipped: decoded.skipped}, nil
}
