package lag

import (
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// MarkerCheck tells whether the record at a lagging group's offset, of
// bracket b, is to be read to tell data from a transaction marker or an
// aborted record, on a partition whose reads showed transactions or that
// none was read of yet (markers): where the partition's end offset stood
// still for IdleBeforeMarkerCheck (idle), or its table is too young to
// tell (young). A group sitting on a marker there is caught up, and the
// index would date the marker and age it with the clock. A partition whose
// records read were written outside transactions holds none: its records
// are the index's.
func MarkerCheck(markers, idle, young bool, b timetable.Bracket) bool {
	return markers && (idle || young) && !b.Gap
}

// IdleBeforeMarkerCheck is how long a partition's end offset must have
// stood still before the records at its lagging groups' offsets are read
// to tell data from a transaction marker, when dating from the time index.
// A partition written every few seconds stands still between writes, and
// the next write makes its lag real data: reading for it every scrape
// would cost a Fetch of a batch for nothing. A group sitting on a marker
// is found caught up once the partition has been still this long, its time
// lag ageing until then.
const IdleBeforeMarkerCheck = time.Minute
