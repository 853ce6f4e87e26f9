package dating

import (
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// What the time index answers, turned into records as a read gives them.

// indexRead is a record the time index dated: the record at offset,
// stamped millis, answering wanted. Its stamp is still in milliseconds'
// range: Date checks it (timedInMillis) before it is converted.
func indexRead(wanted, offset, millis int64) kafka.RecordRead {
	return kafka.RecordRead{Wanted: wanted, RecordTimestamp: kafka.RecordTimestamp{
		Offset: offset, Timestamp: millis, Found: kafka.RecordTimed,
		ByProducer: true, Producer: lag.TimeIndexClock,
	}}
}

// timedInMillis turns the index's answers (stamps in milliseconds) into
// records as a read gives them: a stamp that gives no time when read at
// readAt (kafka.MillisGiveTime: before Kafka, a day ahead, past 2262, in
// microseconds) dates nothing and measures no clock, and is refused in
// milliseconds, before a conversion to nanoseconds could wrap it; the
// others in nanoseconds.
func timedInMillis(found kafka.RecordReads, readAt time.Time) {
	for _, reads := range found {
		for i := range reads {
			rec := &reads[i].RecordTimestamp
			if !kafka.MillisGiveTime(rec.Timestamp, readAt) {
				*rec = kafka.RecordTimestamp{Offset: rec.Offset, Found: kafka.RecordUntimed}
				continue
			}
			rec.Timestamp *= int64(time.Millisecond)
		}
	}
}
