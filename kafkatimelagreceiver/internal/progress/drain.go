package progress

import (
	"math"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// keepingPace is how much faster than production a group must consume for
// its lag to be draining: within it, the two rates are the same rate as
// measured (both are differences of offsets read at different instants),
// and the group keeps pace with a lag that stays, its pipeline's delay. A
// drain time from the difference would be the noise's: hours for a group
// seconds behind.
const keepingPace = 0.05

// DrainTime is how long, in seconds, until a lag of lag records reaches 0
// when records are consumed at consume and produced at produce per second:
// 0 when there is no lag, lag / (consume - produce) when the group
// consumes more than keepingPace faster than production. ok is false when
// the lag is not being drained (consumption no faster than production, or
// keeping pace): there is no finite answer, and none is made up. The
// result is never negative, NaN or infinite.
func DrainTime(lag int64, consume, produce float64) (seconds float64, ok bool) {
	if lag <= 0 {
		return 0, true
	}
	net := consume - produce
	if !(net > 0) || net <= keepingPace*produce { // NaN too
		return 0, false
	}
	seconds = float64(lag) / net
	if math.IsInf(seconds, 0) || math.IsNaN(seconds) {
		return 0, false
	}
	return seconds, true
}

// partitionDrain is DrainTime for one partition whose lag is known.
func partitionDrain(pl *lag.PartitionLag, p Partition) (float64, bool) {
	if pl.Lag > 0 && !(p.HasConsumeRate && pl.HasProduceRate) {
		return 0, false
	}
	return DrainTime(pl.Lag, p.ConsumeRate, pl.ProduceRate)
}

// Topic is one group's progress on one topic: its partitions' summed up.
type Topic struct {
	Group, Topic string
	// ConsumeRate is the sum of the partitions' consumption rates, told
	// only when every partition has one.
	ConsumeRate    float64
	HasConsumeRate bool
	// Trend is how fast the lag changes, in records per second: the
	// partitions' production rates minus their consumption rates, summed;
	// positive while the lag grows. Told when every partition has both.
	Trend    float64
	HasTrend bool
	// Drain is DrainTime of the summed lag at the summed rates: 0 when no
	// partition has lag, none when the lag is not shrinking or a partition's
	// lag or rates are unknown.
	Drain    float64
	HasDrain bool
	// Stuck is the longest stuck time of the partitions, told only when
	// every partition's is known: the longest of some would understate it.
	Stuck    float64
	HasStuck bool
}

// Summarize appends to out the progress of each (group, topic) of lags,
// which are sorted by group, then topic; parts is their progress, in the
// same order. What it appends is in that order too.
func Summarize(out []Topic, lags []lag.PartitionLag, parts []Partition) []Topic {
	for start := 0; start < len(lags); {
		end := start + 1
		for end < len(lags) && lags[end].Group == lags[start].Group && lags[end].Topic == lags[start].Topic {
			end++
		}
		out = append(out, summarizeTopic(lags[start:end], parts[start:end]))
		start = end
	}
	return out
}

func summarizeTopic(lags []lag.PartitionLag, parts []Partition) Topic {
	s := Topic{Group: lags[0].Group, Topic: lags[0].Topic}
	var (
		lagSum                 int64
		produced               float64
		allConsume, allProduce = true, true
		allEnd, allStuck       = true, true
	)
	for i := range lags {
		pl, p := &lags[i], &parts[i]
		s.ConsumeRate += p.ConsumeRate
		allConsume = allConsume && p.HasConsumeRate
		produced += pl.ProduceRate
		allProduce = allProduce && pl.HasProduceRate
		lagSum = lag.AddLags(lagSum, pl.Lag)
		allEnd = allEnd && pl.HasEnd
		s.Stuck = max(s.Stuck, p.Stuck)
		allStuck = allStuck && p.HasStuck
	}
	s.HasStuck = allStuck
	if !allStuck {
		s.Stuck = 0
	}
	s.HasConsumeRate = allConsume
	if !allConsume {
		s.ConsumeRate = 0
	}
	s.HasTrend = allConsume && allProduce
	if s.HasTrend {
		s.Trend = produced - s.ConsumeRate
	}
	switch {
	case allEnd && lagSum == 0:
		s.HasDrain = true
	case s.HasTrend:
		s.Drain, s.HasDrain = DrainTime(lagSum, s.ConsumeRate, produced)
	}
	return s
}
