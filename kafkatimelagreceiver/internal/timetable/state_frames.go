package timetable

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"
)

// nextFrame reads the frame of a state with checksums at the start of b:
// the table's body, where the frame ends (-1 when it does not fit b), and
// whether the frame matches its checksum. When it does not, a length one
// flipped bit away whose frame matches says where the frame really ends:
// the table is left out still, but the tables after it are found.
func nextFrame(b []byte) (body []byte, end int, match bool) {
	body, end, match = frameAt(b, b)
	if match {
		return body, end, true
	}
	head := slices.Clone(b[:min(len(b), binary.MaxVarintLen64)])
	for bit := range 8 * len(head) {
		head[bit/8] ^= 1 << (bit % 8)
		if saved, repaired, ok := frameAt(head, b); ok {
			return saved, repaired, false
		}
		head[bit/8] ^= 1 << (bit % 8)
	}
	return body, end, false
}

// frameAt reads the frame at the start of b whose length is the varint
// at the start of head (b's own, or one with a bit flipped back).
func frameAt(head, b []byte) (body []byte, end int, match bool) {
	size, n := binary.Uvarint(head)
	if n <= 0 || size > uint64(len(b)-n) || uint64(len(b)-n)-size < statecodec.ChecksumLen {
		return nil, -1, false
	}
	end = n + int(size) + statecodec.ChecksumLen
	body = b[n : n+int(size)]
	return body, end, statecodec.Matches(b[end-statecodec.ChecksumLen:end], head[:n], body)
}

// decodeFramedTable decodes the body of the n-th table of a framed state.
func decodeFramedTable(body []byte, n uint64, version uint64, maxPoints int, maxGap time.Duration) (storedTable, error) {
	r := statecodec.NewReader(body)
	st, problem := decodeTable(r, version, maxPoints, maxGap)
	if problem == nil && r.OK() && r.Len() != 0 {
		problem = fmt.Errorf("table of %s/%d: %d trailing bytes", st.tp.Topic, st.tp.Partition, r.Len())
	}
	if !r.OK() {
		problem = fmt.Errorf("table %d: %w", n, r.Err())
	}
	return st, problem
}

// savedAs names the partition of a table whose checksum does not match, as
// far as its damaged bytes tell.
func savedAs(body []byte) string {
	r := statecodec.NewReader(body)
	topic := r.Bytes(r.Bounded(maxTopicLen, "topic length"))
	partition := r.Varint()
	if !r.OK() || len(topic) == 0 || partition < 0 || partition > math.MaxInt32 {
		return "a partition its damaged bytes do not tell"
	}
	return fmt.Sprintf("%s/%d (as far as its damaged bytes tell)", strings.ToValidUTF8(string(topic), "?"), partition)
}

// implausible says why a table that decoded must not be restored: it is a
// second one of its partition, was read after notAfter, or holds a point
// before notBefore.
func implausible(st storedTable, seen map[kafka.TopicPartition]bool, notBefore, notAfter int64) error {
	t := st.table
	switch {
	case seen[st.tp]:
		return fmt.Errorf("table of %s/%d: stored twice", st.tp.Topic, st.tp.Partition)
	case t.lastRead > notAfter:
		return fmt.Errorf("table of %s/%d: read at %s, after now: the clock was stepped back since it was saved, or the state comes from a host whose clock was ahead",
			st.tp.Topic, st.tp.Partition, time.Unix(0, t.lastRead).UTC().Format(time.RFC3339))
	case t.n > 0 && t.first.At < notBefore:
		return fmt.Errorf("table of %s/%d: its oldest point is at %s, before any Kafka record: the state comes from a host whose clock was wrong",
			st.tp.Topic, st.tp.Partition, time.Unix(0, t.first.At).UTC().Format(time.RFC3339))
	}
	return nil
}
