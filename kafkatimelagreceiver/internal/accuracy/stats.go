package accuracy

import (
	"math"
	"slices"
)

// Stats score one method's series.
type Stats struct {
	Scrapes    int
	Median     float64 // of |error|, seconds, over scrapes with an estimate
	P95        float64
	Max        float64
	Bias       float64 // mean error (estimate - truth)
	NoEstimate float64 // share of scrapes without an estimate
	// TargetP95 is the p95, over every scrape, of |error| / the target's
	// bound there (max(0.1 x sampling, 1 % of the true lag)); a scrape
	// without an estimate counts as missing the target. The target is met
	// when it is at most 1.
	TargetP95 float64
	// Worst is where the target is missed most: the scrape's time and its
	// truth and estimate (Estimated false: none).
	Worst Point
}

// Met tells whether the accuracy target is met.
func (s Stats) Met() bool { return s.TargetP95 <= 1 }

// Bound is the accuracy target's bound on a scrape's |error|: a tenth of
// the sampling interval, or 1 % of the true time lag, whichever is larger.
func Bound(sampling int64, truth float64) float64 {
	return max(0.1*float64(sampling)/1e9, 0.01*truth)
}

// Score computes a series' Stats at a sampling interval.
func Score(points []Point, sampling int64) Stats {
	st := Stats{Scrapes: len(points)}
	var abs, ratios []float64
	sum, missing := 0.0, 0
	worst := -1.0
	for _, p := range points {
		ratio := math.Inf(1)
		if p.Estimated {
			err := p.Estimate - p.Truth
			sum += err
			abs = append(abs, math.Abs(err))
			ratio = math.Abs(err) / Bound(sampling, p.Truth)
		} else {
			missing++
		}
		ratios = append(ratios, ratio)
		if ratio > worst {
			worst, st.Worst = ratio, p
		}
	}
	if len(points) == 0 {
		return st
	}
	st.NoEstimate = float64(missing) / float64(len(points))
	st.TargetP95 = quantile(ratios, 0.95)
	if len(abs) > 0 {
		st.Median = quantile(abs, 0.5)
		st.P95 = quantile(abs, 0.95)
		st.Max = quantile(abs, 1)
		st.Bias = sum / float64(len(abs))
	}
	return st
}

// quantile is the q-quantile of xs (nearest rank); xs is sorted in place.
func quantile(xs []float64, q float64) float64 {
	slices.Sort(xs)
	return xs[max(0, int(math.Ceil(q*float64(len(xs))))-1)]
}

// The cost model's cluster: 100,000 (group, partition) pairs as 1,000
// partitions read by 100 groups each, led by 6 brokers.
const (
	CostPartitions = 1000
	CostGroups     = 100
	CostBrokers    = 6
	// Bytes on the wire per partition of a ListOffsets request and its
	// answer (v7: partition, leader epoch and timestamp asked; error,
	// timestamp, offset and leader epoch answered), per partition of a
	// Fetch request and the answer's partition header (v11), and per
	// request for headers and topic names.
	listOffsetsPartitionBytes = 17 + 27
	fetchPartitionBytes       = 33 + 40
	requestBytes              = 100
)

// ScaledCost is what a method asks of Kafka per scrape at the cost model's
// 100,000 pairs, from its simulated pair's requests: end-offset reads are
// the partition's, shared by its groups; record reads of the group's are
// made for every group (each at its own offset: the groups of a partition
// are assumed apart, as they are when they lag), one offset per partition
// in each round of Fetch requests.
type ScaledCost struct {
	Requests float64 // Kafka requests per scrape
	Bytes    float64 // bytes sent and received per scrape
}

// Scale turns a series' summed cost over its run into the per-scrape cost
// at the cost model's size.
func Scale(s Series) ScaledCost {
	scrapes := 0
	for i, p := range s.Points {
		if i == 0 || p.At != s.Points[i-1].At {
			scrapes++
		}
	}
	if scrapes == 0 || s.Groups == 0 {
		return ScaledCost{}
	}
	c, n := s.Cost, float64(scrapes)
	offsetReads := float64(c.OffsetReads) / n
	perGroup := float64(CostGroups) / float64(s.Groups) // the model's groups a simulated one stands for
	pairReads := float64(c.RecordReads) / n * perGroup  // per partition
	sharedReads := float64(c.SharedReads) / n           // per partition
	rounds := pairReads + sharedReads                   // one offset per partition a round
	listOffsets := offsetReads * CostBrokers
	fetches := rounds * CostBrokers
	bytes := offsetReads*CostPartitions*listOffsetsPartitionBytes +
		(pairReads+sharedReads)*CostPartitions*fetchPartitionBytes +
		(float64(c.FetchBytes)*perGroup+float64(c.SharedBytes))/n*CostPartitions +
		(listOffsets+fetches)*requestBytes
	return ScaledCost{Requests: listOffsets + fetches, Bytes: bytes}
}
