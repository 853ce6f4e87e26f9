package accuracy

import "math/rand/v2"

// RealisticPartitions is how many partitions each realistic shape's topic
// has, but the one of ManyPartitions, read by one receiver.
const (
	RealisticPartitions = 3
	ManyPartitions      = 100
)

// Rebalance model of a consumer group: a rebalance on average every
// RebalanceEvery (a deploy, a scale-out, a member's crash), stopping the
// group for up to SessionTimeout (session.timeout.ms, 45 s since Kafka 3.0,
// KIP-735: how long a crashed member goes unnoticed) and at least
// RebalanceMin (a graceful leave and rejoin).
const (
	RebalanceEvery = 30 * minute
	SessionTimeout = 45 * second
	RebalanceMin   = 3 * second
	// AutoCommitInterval is auto.commit.interval.ms (5 s, the Java and
	// librdkafka default).
	AutoCommitInterval = 5 * second
)

// rebalancesOf draws a group's rebalances from group (the same on every
// partition) from from to to.
func rebalancesOf(group *rand.Rand, from, to int64) []pause {
	var out []pause
	for t := from + int64(group.ExpFloat64()*float64(RebalanceEvery)); t < to; t += int64(group.ExpFloat64() * float64(RebalanceEvery)) {
		out = append(out, pause{at: t, lasting: RebalanceMin + group.Int64N(SessionTimeout-RebalanceMin)})
	}
	return out
}

// realisticShape is traffic at rate from producers as model says, read by
// one group delay behind, with capacity (0: no limit), auto-committing and
// rebalancing.
func realisticShape(key, name, description string, model ProducerModel, peak float64, rate func(t int64) float64, delay int64, capacity float64) Shape {
	return committingShape(key, name, description, model, peak, rate, consumer{delay: delay, capacity: capacity, commitEvery: AutoCommitInterval})
}

// committingShape is traffic at rate from producers as model says, read by
// one group that consumes and commits as c does, rebalancing.
func committingShape(key, name, description string, model ProducerModel, peak float64, rate func(t int64) float64, c consumer) Shape {
	return Shape{
		Key: key, Name: name, Description: description, Realistic: true, Partitions: RealisticPartitions,
		History: hour, Duration: 2 * hour, PlotFrom: hour, PlotSpan: 30 * minute,
		build: func(rng *rand.Rand, s *Shape, group *rand.Rand) (*Timeline, []*Commits) {
			tl := model.Produce(rng, Epoch, s.End(), peak, rate)
			c := c
			c.from, c.to, c.rebalances = Epoch, s.End(), rebalancesOf(group, Epoch, s.End())
			return tl, []*Commits{c.run(tl, rng)}
		},
	}
}

// RealisticShapes are the shapes whose records are stamped and delivered
// as real producers do, on RealisticPartitions partitions.
func RealisticShapes() []Shape {
	steady := func(int64) float64 { return 20 }
	slow := DefaultProducers()
	slow.SendDelayMax = 500 * ms
	skewed := DefaultProducers()
	skewed.SkewMean, skewed.JitterMax = -1500*ms, 100*ms
	skewed.FreeRunning = true // NTP would have stepped a clock this far off
	bursts := func(t int64) float64 {
		if (t-Epoch)%(2*minute) < 5*second {
			return 2000
		}
		return 5
	}
	transactional := DefaultProducers()
	transactional.NoID = 0 // a transactional producer has an ID
	transactional.TransactionEvery = 100 * ms
	logAppend := DefaultProducers()
	logAppend.LogAppendTime = true
	eventTime := DefaultProducers()
	eventTime.EventTimeMin, eventTime.EventTimeMax = minute, 2*hour
	stepped := DefaultProducers()
	stepped.Knock = ClockStep{By: -second, After: hour + 15*minute, Within: 30 * minute}
	ntpStep := realisticShape("real-ntpstep", "realistic, NTP step",
		"the realistic steady traffic; one producer of each partition (drawn at random) has its host's clock knocked 1 s behind (a virtual machine resumed after a pause) 15 to 45 minutes into the scored stretch, which NTP takes for a spike until it has lasted its stepout (900 s) and then steps back", stepped, 20, steady, 2*second, 0)
	ntpStep.PlotFrom, ntpStep.PlotSpan = 0, hour
	phases := realisticShape("real-phases", "realistic steady, scrapes at random phases",
		"the realistic steady traffic; the scrapes fall at a random phase to our samples, and kafka-lag-exporter, klag and klag-exporter poll on timers of their own at random phases to the scrapes, which see each one's last poll (elsewhere scrapes come a quarter second after a sample, and those rows poll at the scrapes)", DefaultProducers(), 20, steady, 2*second, 0)
	phases.RandomPhases = true
	hanging := transactional
	hanging.LastStable, hanging.AbortOneIn = true, 20
	hanging.Hang = TxnHang{After: hour + 15*minute, Within: 30 * minute, Min: minute, Max: 10 * minute}
	hung := committingShape("real-hung", "realistic, aborted and hung transactions",
		"the realistic transactions (every 100 ms), one in 20 aborted (its records and an abort marker stay in the log and its time index); one producer of each partition (drawn at random) stops with its transaction open 15 to 45 minutes into the scored stretch, left open 1 to 10 minutes (from transaction.timeout.ms, 60 s, to a transaction its coordinator lost, aborted by an operator) and then aborted; the group reads read_committed, 2 s behind, so it stops at the last stable offset while the transaction hangs, its time lag growing, the other producers' committed records piling up behind it", hanging, 20, steady,
		consumer{delay: 2 * second, commitEvery: AutoCommitInterval, readCommitted: true})
	hung.PlotFrom, hung.PlotSpan = 0, hour
	many := realisticShape("real-partitions", "realistic, 100 partitions, one receiver",
		"5 records/s on each of 100 partitions from the default producers, read by one group 2 s behind, all of them watched by one receiver (one sampler, one scrape, its per-scrape budgets shared: max_record_reads_per_scrape and max_record_read_bytes_per_scrape), where the other shapes run a receiver a partition; the peers run as they are built, each partition on its own; watching starts 10 minutes into the traffic and lasts an hour", DefaultProducers(), 5, func(int64) float64 { return 5 }, 2*second, 0)
	many.Partitions, many.OneInstance = ManyPartitions, true
	many.History, many.Duration, many.PlotFrom, many.PlotSpan = 10*minute, hour, 0, 30*minute
	lingering := DefaultProducers()
	lingering.Linger, lingering.LingerMax = 100*ms, 1000*ms
	slowRate := func(int64) float64 { return 1 }
	return []Shape{
		realisticShape("real-steady", "realistic steady",
			"20 records/s per partition from three producers (two with an ID, one without), the default producer model; the group is 2 s behind", DefaultProducers(), 20, steady, 2*second, 0),
		realisticShape("real-slow", "realistic, slow producers",
			"the realistic steady traffic, each batch sent 0 to 500 ms (uniform) after it closed", slow, 20, steady, 2*second, 0),
		realisticShape("real-skew", "realistic, skewed clocks",
			"the realistic steady traffic from producers whose hosts run no NTP, their clocks 1.5 s behind (spread 20 ms) and drifting (spread 10 ppm), each batch's stamp jittering up to 100 ms either way", skewed, 20, steady, 2*second, 0),
		realisticShape("real-bursts", "realistic bursts",
			"5 records/s per partition and, every 2 minutes, 5 s at 2,000 records/s (full batches, in-flight slots busy); the group reads at most 500 records/s", DefaultProducers(), 2000, bursts, 0, 500),
		realisticShape("real-txn", "realistic, transactions",
			"the realistic steady traffic from transactional producers committing every 100 ms (Kafka Streams' exactly-once commit.interval.ms), a control record per commit", transactional, 20, steady, 2*second, 0),
		hung,
		realisticShape("real-logappend", "realistic, LogAppendTime topic",
			"the realistic steady traffic on a topic with message.timestamp.type LogAppendTime: records carry the broker's append time, no producer's", logAppend, 20, steady, 2*second, 0),
		realisticShape("real-eventtime", "realistic, event-time stamps",
			"the realistic steady traffic from producers stamping each batch with when its events happened, 1 minute to 2 hours before it was sent, in no order (Kafka Streams, Connect sources, MirrorMaker 2)", eventTime, 20, steady, 2*second, 0),
		ntpStep,
		phases,
		committingShape("real-commitpoll", "realistic, commits every poll",
			"the realistic steady traffic; the group, 2 s behind, polls every 200 ms and commits after every poll (enable.auto.commit false, a commit after each poll's records are processed)", DefaultProducers(), 20, steady,
			consumer{delay: 2 * second, commitEvery: 200 * ms}),
		committingShape("real-commitn", "realistic, commits every 1,000 records",
			"the realistic steady traffic; the group, 2 s behind, polls every 200 ms but commits only once it has read 1,000 records on a partition since its last commit (about every 50 s: a commit every N records)", DefaultProducers(), 20, steady,
			consumer{delay: 2 * second, commitEvery: 200 * ms, commitRecords: 1000}),
		many,
		realisticShape("real-linger", "realistic, long linger at a low rate",
			"1 record/s per partition from producers whose linger.ms is 100 to 1,000 ms (uniform, each its own): batches of one record wait out their linger, so a record's timestamp is up to a second before its append; the group is 2 s behind", lingering, 1, slowRate, 2*second, 0),
	}
}
