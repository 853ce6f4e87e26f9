package accuracy

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// BrokenMethods are this receiver deliberately broken, to show that the
// target catches what it should: every time lag off by half the sampling
// interval, and the table's records placed at k/n of their bracket (the
// straight line) instead of (k+1)/(n+1). They are not in the tables;
// TestAccuracyTarget fails them (-args -accuracy.method=KEY).
func BrokenMethods() []MethodSpec {
	return []MethodSpec{
		{Key: "broken-half-interval", Name: "this receiver, every time lag half a sampling interval long", New: func(s int64) Method {
			return &offsetMethod{inner: newReceiver(s, DateFromIndex, true, 1), offset: float64(s) / 2e9}
		}},
		{Key: "broken-kn", Name: "this receiver, table records placed at k/n", New: func(s int64) Method {
			return &straightLineMethod{newReceiver(s, DateFromIndex, true, 1)}
		}},
	}
}

// offsetMethod adds offset seconds to every time lag of inner.
type offsetMethod struct {
	inner  Method
	offset float64
}

func (m *offsetMethod) Sample(r Read) { m.inner.Sample(r) }

func (m *offsetMethod) Scrape(s Scrape) Estimate {
	e := m.inner.Scrape(s)
	for i := range e.Groups {
		if e.Groups[i].OK {
			e.Groups[i].TimeLag += m.offset
		}
	}
	return e
}

// straightLineMethod is the receiver with each time lag its table dated
// re-dated on the straight line through the record's bracket.
type straightLineMethod struct{ *receiverMethod }

func (m *straightLineMethod) Scrape(s Scrape) Estimate {
	in, e, ok := m.read([]Scrape{s})
	if !ok {
		return e
	}
	ref := m.reader.Tables.Refs([]kafka.TopicPartition{simPartition(0)})[0]
	upper := timetable.Sample{Offset: s.End, At: s.Received}
	var lags []lag.PartitionLag
	for i, c := range s.Committed {
		var g GroupEstimate
		lags = in.Estimates.GroupLags(lags[:0], groupName(i), in.Snap.At)
		for _, pl := range lags {
			g = GroupEstimate{TimeLag: pl.TimeLag, OK: pl.HasTimeLag}
			if pl.Method != lag.MethodTable {
				continue
			}
			if b, ok := m.reader.Tables.Bracket(ref, c, upper); ok {
				g.TimeLag = float64(in.Snap.At-timetable.Interpolate(b.Lo, b.Hi, c)) / 1e9
			}
		}
		e.Groups = append(e.Groups, g)
	}
	return e
}
