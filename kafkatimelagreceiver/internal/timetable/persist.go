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
	// Skipped says, for each table left out, why: it broke an invariant of
	// the tables, or was read in the future.
	Skipped []error
}

// encodeChunk is how many tables EncodeState encodes per hold of the lock:
// a few hundred microseconds of work, so that saving the tables of a large
// cluster delays neither the sampler nor a scrape by more than that.
const encodeChunk = 512

// EncodeState serialises every non-empty table with its log start offset
// and topic id, and the id of the cluster they were sampled from. It copies
// no table: it lists the partitions under the lock, then encodes their
// tables encodeChunk at a time, each chunk under the lock, so that neither
// the lock is held for long nor memory doubles while it saves. Each table
// is saved as it was when its chunk was encoded; one dropped meanwhile is
// left out.
func (s *Store) EncodeState() []byte {
	s.mu.Lock()
	tps := make([]kafka.TopicPartition, 0, len(s.tables))
	for tp, t := range s.tables {
		if t.n > 0 {
			tps = append(tps, tp)
		}
	}
	clusterID := s.clusterID
	s.mu.Unlock()
	kafka.SortPartitions(tps)
	var frames, body []byte
	count := 0
	for from := 0; from < len(tps); from += encodeChunk {
		s.mu.Lock()
		for _, tp := range tps[from:min(from+encodeChunk, len(tps))] {
			t, ok := s.tables[tp]
			if !ok || t.n == 0 {
				continue
			}
			start, hasStart := s.starts[tp]
			frames, body = appendFramedTable(frames, body, storedTable{tp: tp, topicID: s.topicIDs[tp.Topic], table: t, start: start, hasStart: hasStart})
			count++
		}
		s.mu.Unlock()
	}
	return appendStateHeader(clusterID, count, len(frames), frames)
}

// RestoreState installs the tables of state made by EncodeState (of this
// release or an earlier one), as the tracked set until the first Track says
// which are still wanted, and as tables whose cluster and topic ids are to
// be checked (see Identify). The store's bounds apply: tables saved under a
// larger maxPoints are thinned. A table that breaks an invariant, or was
// read more than restoreClockTolerance after the store's clock says it is
// now, is left out and named in Skipped; the others are installed. The
// error, when the state cannot be read at all, wraps ErrStateCorrupt when
// data is damaged, and says which version it is when it is another
// version's; then nothing is installed.
func (s *Store) RestoreState(data []byte) (Restored, error) {
	notAfter := int64(math.MaxInt64)
	var now time.Time
	if s.clock != nil {
		now = s.clock()
		notAfter = now.Add(restoreClockTolerance).UnixNano()
	}
	decoded, err := decodeState(data, s.maxPoints, s.maxGap, notAfter)
	if err != nil {
		return Restored{}, fmt.Errorf("restore interpolation tables from %d bytes: %w", len(data), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range decoded.tables {
		s.tables[st.tp] = st.table
		s.wanted[st.tp] = now
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
