package dating

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// The time index's answers are judged in milliseconds before any
// conversion to nanoseconds: a stamp past 2262 would wrap (87,697,617,913,
// 735,311 ms is 4.4e15 ns past the int64 limit), and one in microseconds
// (a producer's bug) wraps into the years since 2011 about 3 % of the time.
// Neither, nor one before 2011 or a day ahead, gives a time.
func TestIndexStampsCheckedInMilliseconds(t *testing.T) {
	readAt := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	now := readAt.UnixMilli()
	cases := map[string]struct {
		millis int64
		timed  bool
	}{
		"a second ago":       {now - 1000, true},
		"past 2262":          {87_697_617_913_735_311, false},
		"in microseconds":    {readAt.UnixMicro(), false},
		"before 2011":        {time.Date(2010, 12, 31, 0, 0, 0, 0, time.UTC).UnixMilli(), false},
		"25 hours ahead":     {now + 25*3600*1000, false},
		"23 hours ahead":     {now + 23*3600*1000, true},
		"negative (no time)": {-1, false},
	}
	tp := kafka.TopicPartition{Topic: "t"}
	for name, c := range cases {
		found := kafka.RecordReads{tp: {indexRead(7, 7, c.millis)}}
		timedInMillis(found, readAt)
		rec := found[tp][0].RecordTimestamp
		if !c.timed {
			require.Equal(t, kafka.RecordUntimed, rec.Found, name)
			continue
		}
		require.Equal(t, kafka.RecordTimed, rec.Found, name)
		require.Equal(t, c.millis*int64(time.Millisecond), rec.Timestamp, name)
	}
}

// A record the index dates by a stamp after the scrape's end-offset read,
// or by one that gives no time, is read instead: a stamp ahead of its
// clock hides every record after it from the index.
func TestStampedAheadAreRead(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	tp := kafka.TopicPartition{Topic: "t"}
	dated := kafka.RecordReads{tp: {indexRead(5, 5, at.UnixMilli()-100), indexRead(6, 6, at.UnixMilli()+3_600_000), indexRead(7, 7, 87_697_617_913_735_311)}}
	timedInMillis(dated, at)
	require.Equal(t, []kafka.PartitionOffsets{{TopicPartition: tp, Offsets: []int64{6, 7}}}, stampedAhead(dated, at.UnixNano()))
}
