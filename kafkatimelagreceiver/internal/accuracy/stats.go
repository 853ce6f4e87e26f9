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
	// relative bound there (max(0.1 x sampling, 1 % of the true lag)); a
	// scrape without an estimate counts as missing the target.
	// AbsoluteP95 is the same over the absolute bound (max(AbsoluteFloor,
	// 1 % of the true lag)), whatever the sampling. The target is met when
	// both are at most 1.
	TargetP95, AbsoluteP95 float64
	// P95Create and BiasCreate are P95 and Bias against the CreateTime
	// truth (since the record was sent).
	P95Create, BiasCreate float64
	// Worst is where the target is missed most: the scrape's time and its
	// truth and estimate (Estimated false: none).
	Worst Point
}

// Met tells whether the accuracy target is met.
func (s Stats) Met() bool { return s.TargetP95 <= 1 && s.AbsoluteP95 <= 1 }

// Bound is the accuracy target's relative bound on a scrape's |error|: a
// tenth of the sampling interval, or 1 % of the true time lag, whichever
// is larger.
func Bound(sampling int64, truth float64) float64 {
	return max(0.1*float64(sampling)/1e9, 0.01*truth)
}

// AbsoluteFloor is the absolute bound's floor, in seconds: what an
// operator alerting on time lag can tell apart (a threshold of seconds),
// the same for every method whatever it samples at.
const AbsoluteFloor = 1.0

// AbsoluteBound is the accuracy target's absolute bound on a scrape's
// |error|: AbsoluteFloor, or 1 % of the true time lag, whichever is larger.
func AbsoluteBound(truth float64) float64 { return max(AbsoluteFloor, 0.01*truth) }

// Score computes a series' Stats at a sampling interval.
func Score(points []Point, sampling int64) Stats {
	st := Stats{Scrapes: len(points)}
	var abs, absCreate, ratios, absRatios []float64
	sum, sumCreate, missing := 0.0, 0.0, 0
	worst := -1.0
	for _, p := range points {
		ratio, absRatio := math.Inf(1), math.Inf(1)
		if p.Estimated {
			err := p.Estimate - p.Truth
			sum += err
			sumCreate += p.Estimate - p.TruthCreate
			abs = append(abs, math.Abs(err))
			absCreate = append(absCreate, math.Abs(p.Estimate-p.TruthCreate))
			ratio = math.Abs(err) / Bound(sampling, p.Truth)
			absRatio = math.Abs(err) / AbsoluteBound(p.Truth)
		} else {
			missing++
		}
		ratios = append(ratios, ratio)
		absRatios = append(absRatios, absRatio)
		if ratio > worst {
			worst, st.Worst = ratio, p
		}
	}
	if len(points) == 0 {
		return st
	}
	st.NoEstimate = float64(missing) / float64(len(points))
	st.TargetP95 = quantile(ratios, 0.95)
	st.AbsoluteP95 = quantile(absRatios, 0.95)
	if len(abs) > 0 {
		st.P95Create = quantile(absCreate, 0.95)
		st.BiasCreate = sumCreate / float64(len(abs))
		st.Median = quantile(abs, 0.5)
		st.P95 = quantile(abs, 0.95)
		st.Max = quantile(abs, 1)
		st.Bias = sum / float64(len(abs))
	}
	return st
}

// Interval95 is a figure's mean over seeds and the half-width of its 95 %
// confidence interval (Student's t over the seeds' values).
type Interval95 struct{ Mean, HalfWidth float64 }

// tQuantile975 is Student's t 0.975-quantile by degrees of freedom (1 to
// 30; the normal's 1.96 beyond).
var tQuantile975 = []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// Over is the 95 % interval of xs, one value per seed; an infinite value
// (no estimate) makes the interval infinite.
func Over(xs []float64) Interval95 {
	n := len(xs)
	if n == 0 {
		return Interval95{}
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n == 1 || math.IsInf(mean, 0) {
		return Interval95{Mean: mean}
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	t := 1.96
	if n-1 <= len(tQuantile975) {
		t = tQuantile975[n-2]
	}
	return Interval95{Mean: mean, HalfWidth: t * math.Sqrt(ss/float64(n-1)/float64(n))}
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
// 100,000 pairs, from its simulated pair's requests: end-offset reads and
// the anchors' log-start read are the partition's, shared by its groups;
// record reads of the group's are made for every group (each at its own
// offset: the groups of a partition are assumed apart, as they are when
// they lag), one offset per partition in each round of Fetch requests.
// This receiver's time-index rounds (one time per partition in each round
// of ListOffsets requests) and its reads inside the watched stretch grow
// with the groups as well: they are scaled as the record reads are, from
// the simulated groups to the model's, an upper bound where groups near one
// another would share them.
type ScaledCost struct {
	Requests float64 // Kafka requests per scrape
	Bytes    float64 // bytes sent and received per scrape
	// SharedRequests are the requests were this receiver's time-index
	// searches and reads inside the watched stretch the partition's: its
	// groups all at one offset, the lower bound.
	SharedRequests float64
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
	nearReads := float64(c.NearReads) / n * perGroup    // per partition
	rounds := pairReads + sharedReads + nearReads       // one offset per partition a round
	indexReads := float64(c.IndexReads) / n * perGroup  // per partition, one time a round
	listOffsets := (offsetReads + indexReads) * CostBrokers
	fetches := rounds * CostBrokers
	bytes := (offsetReads+indexReads)*CostPartitions*listOffsetsPartitionBytes +
		rounds*CostPartitions*fetchPartitionBytes +
		((float64(c.FetchBytes)+float64(c.NearBytes))*perGroup+float64(c.SharedBytes))/n*CostPartitions +
		(listOffsets+fetches)*requestBytes
	shared := (offsetReads+float64(c.IndexReads)/n)*CostBrokers + (pairReads+sharedReads+float64(c.NearReads)/n)*CostBrokers
	return ScaledCost{Requests: listOffsets + fetches, Bytes: bytes, SharedRequests: shared}
}
