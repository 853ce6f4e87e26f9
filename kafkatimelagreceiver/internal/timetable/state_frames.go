package timetable

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"
)

// checkedFrame reads the frame of one table of a state with checksums: its
// body, and whether the checksum matches. A frame that does not fit the
// input is left in d.Err().
func checkedFrame(d *statecodec.Reader) (body []byte, match bool) {
	start := d.Pos()
	size := d.Uvarint()
	if d.OK() && size > uint64(d.Len()) {
		d.Fail("a table of %d bytes exceeds the input", size)
	}
	body = d.Bytes(size)
	return body, d.Checksum(start)
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
