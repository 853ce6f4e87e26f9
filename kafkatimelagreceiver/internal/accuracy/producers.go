package accuracy

import (
	"math"
	"math/rand/v2"
	"slices"
)

const ms = int64(1e6)

// ProducerModel is how real producers stamp and deliver records to one
// partition: send() stamps each record with the producer's clock; the
// record waits in the producer's accumulator until its batch is full or
// lingered, then for a free in-flight slot, crosses the network, is
// appended by the leader and becomes visible when the followers have
// replicated it (the high watermark), which is when acks=all answers.
// Each field's default (DefaultProducers) names its source.
type ProducerModel struct {
	// Producers write the partition, each an even share of its records.
	Producers int
	// NoID are how many of them have no producer ID: not idempotent, so
	// their batches cannot be told apart by producer.
	NoID int
	// Linger is linger.ms: how long a batch waits for more records; when
	// LingerMax is set, each producer's is drawn uniform in [Linger,
	// LingerMax].
	Linger, LingerMax int64
	// BatchRecords is batch.size over the record size: a full batch is
	// sent without waiting out the linger.
	BatchRecords int64
	// MaxInFlight is max.in.flight.requests.per.connection.
	MaxInFlight int
	// SendDelayMax adds a delay uniform in [0, SendDelayMax) between a
	// batch's closing and its sending: a producer whose application
	// batches, whose buffer is full, or whose linger is long.
	SendDelayMax int64
	// NetMedian and NetSigma are the one-way network delay's log-normal
	// median and shape (its tail: the 99th percentile is about
	// NetMedian x e^(2.33 NetSigma)).
	NetMedian int64
	NetSigma  float64
	// ReplicationMedian and ReplicationSigma are the high watermark's delay
	// behind the leader's append (followers fetching it), log-normal.
	ReplicationMedian int64
	ReplicationSigma  float64
	// SkewSigma is the spread of producers' clock offsets (normal, mean
	// SkewMean): with NTP, the residual it cannot see; JitterMax a
	// per-batch offset uniform in [-JitterMax, JitterMax]; DriftPPM the
	// spread of their oscillators' frequency error (normal, parts per
	// million), which NTP slews away (newClock).
	SkewMean, SkewSigma, JitterMax int64
	DriftPPM                       float64
	// FreeRunning: the producers' hosts run no NTP, their drift
	// accumulating from the start.
	FreeRunning bool
	// Knock, when By is set, knocks one producer's clock (each partition's
	// own, drawn at random) off once, and NTP steps it back.
	Knock ClockStep
	// LogAppendTime: the topic's records carry the broker's append time.
	LogAppendTime bool
	// TransactionEvery, when set, makes every producer transactional,
	// committing that often: each commit appends a control record.
	TransactionEvery int64
	// LastStable: the transactions hold the last stable offset while open
	// (Batch.TxnStart), each producer's next starting on the partition
	// only once its marker is replicated (AddPartitionsToTxn answers
	// CONCURRENT_TRANSACTIONS before); AbortOneIn, when set, aborts one
	// transaction in that many (an abort marker, its records skipped by
	// read_committed consumers); Hang, when Min is set, leaves one
	// producer's transaction open.
	LastStable bool
	AbortOneIn int
	Hang       TxnHang
	// EventTimeMin and EventTimeMax, when EventTimeMax is set, make every
	// batch stamped with when its events happened rather than when it was
	// sent: uniform in [EventTimeMin, EventTimeMax) before the send, batch
	// by batch, in no order (Kafka Streams forwarding its input's
	// timestamps, a Connect source, MirrorMaker 2 keeping the source's).
	EventTimeMin, EventTimeMax int64
}

// TxnHang is a transaction left open: one producer (each partition's own,
// drawn at random) stops with its transaction open at its first commit
// after a time uniform in [After, After+Within) from the start of the
// timeline, and sends nothing until the transaction is aborted, Min to
// Max (uniform) later, when it starts again.
type TxnHang struct {
	After, Within, Min, Max int64
}

// DefaultProducers is the realistic producers' model, from the clients'
// documented defaults where there is one and stated assumptions where
// there is none:
//   - linger.ms 5: the Java producer's default since Kafka 4.0 (KIP-1030)
//     and librdkafka's (linger.ms, alias queue.buffering.max.ms, 5 ms).
//   - batch.size 16384 bytes, at RecordSize bytes a record: 81 records.
//   - max.in.flight.requests.per.connection 5 (both clients' default;
//     the most an idempotent producer allows).
//   - three producers on the partition, one without an ID: the Java
//     client is idempotent by default since Kafka 3.0 (KIP-679),
//     librdkafka's enable.idempotence defaults to false.
//   - acks=all (the Java default since 3.0): a request is answered when
//     the high watermark passes it.
//   - network: an assumption of a same-region data centre, 0.25 ms median
//     one way with a log-normal tail (sigma 1: 99th percentile 2.5 ms).
//   - replication: an assumption, 2 ms median (a follower's next fetch,
//     which waits for data up to replica.fetch.wait.max.ms, 500 ms), sigma
//     1 (99th percentile 20 ms).
//   - clocks: hosts running NTP (newClock), an assumption for the
//     public internet's time servers, which keep clocks within tens of
//     milliseconds: a residual offset normal with a 20 ms spread, 1 ms of
//     jitter a batch, oscillators off by a drift with a 10 ppm spread
//     (36 ms an hour unchecked), slewed away every NTPPoll.
func DefaultProducers() ProducerModel {
	return ProducerModel{
		Producers: 3, NoID: 1,
		Linger: 5 * ms, BatchRecords: 16384 / RecordSize, MaxInFlight: 5,
		NetMedian: ms / 4, NetSigma: 1,
		ReplicationMedian: 2 * ms, ReplicationSigma: 1,
		SkewSigma: 20 * ms, JitterMax: ms, DriftPPM: 10,
	}
}

// logNormal draws a log-normal duration of median median and shape sigma.
func logNormal(rng *rand.Rand, median int64, sigma float64) int64 {
	return int64(float64(median) * math.Exp(sigma*rng.NormFloat64()))
}

// Produce appends to a new timeline the records sent from from to to at
// rate(t) records per second, never above peak (a Poisson process, shared
// evenly by the producers), each delivered as the model says.
func (m ProducerModel) Produce(rng *rand.Rand, from, to int64, peak float64, rate func(t int64) float64) *Timeline {
	var batches []Batch
	knocked, hung := -1, -1
	if m.Knock.By != 0 {
		knocked = rng.IntN(m.Producers)
	}
	var hangAt, hangFor int64
	if m.Hang.Min > 0 {
		hung = rng.IntN(m.Producers)
		hangAt = from + m.Hang.After + rng.Int64N(m.Hang.Within)
		hangFor = m.Hang.Min + rng.Int64N(m.Hang.Max-m.Hang.Min+1)
	}
	for p := range m.Producers {
		var knock ClockStep
		if p == knocked {
			knock = m.Knock
		}
		clock := m.newClock(rng, from, to, knock)
		own := m
		own.Hang = TxnHang{}
		if p == hung {
			own.Hang = TxnHang{After: hangAt, Min: hangFor}
		}
		if m.LingerMax > m.Linger {
			own.Linger = m.Linger + rng.Int64N(m.LingerMax-m.Linger+1)
		}
		share := func(t int64) float64 { return rate(t) / float64(m.Producers) }
		batches = own.produceOne(batches, rng, int64(p), p < m.NoID, clock, from, to, peak/float64(m.Producers), share)
	}
	slices.SortStableFunc(batches, func(a, b Batch) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	tl := &Timeline{}
	for _, b := range batches {
		tl.AppendBatch(b)
	}
	return tl
}

// produceOne adds one producer's batches.
func (m ProducerModel) produceOne(out []Batch, rng *rand.Rand, id int64, noID bool, clock producerClock, from, to int64, maxRate float64, rate func(t int64) float64) []Batch {
	next := func(t int64) int64 { // the next send() after t (thinning)
		for t < to {
			t += int64(rng.ExpFloat64() / maxRate * 1e9)
			if rng.Float64()*maxRate < rate(t) {
				return t
			}
		}
		return to
	}
	stamp := func(sent int64) int64 {
		return sent + clock.at(sent)
	}
	acks := make([]int64, 0, m.MaxInFlight) // answers due, oldest first
	nextCommit := from + m.TransactionEvery
	// txnFirst is the index in out of the open transaction's first batch
	// (-1: none open); settled is when its last marker was replicated.
	txnFirst, settled := -1, int64(0)
	for t := next(from); t < to; {
		first, last, n := t, t, int64(1)
		deadline := first + m.Linger
		for {
			t = next(t)
			if t >= deadline || t >= to || n == m.BatchRecords {
				break
			}
			last, n = t, n+1
		}
		ready := deadline
		if n == m.BatchRecords {
			ready = last
		}
		if m.SendDelayMax > 0 {
			ready += rng.Int64N(m.SendDelayMax)
		}
		send := ready
		if len(acks) == m.MaxInFlight {
			send = max(send, acks[0])
			acks = acks[1:]
		}
		at := send + logNormal(rng, m.NetMedian, m.NetSigma)
		if m.LastStable {
			at = max(at, settled+1)
		}
		visible := at + logNormal(rng, m.ReplicationMedian, m.ReplicationSigma)
		acks = append(acks, visible+logNormal(rng, m.NetMedian, m.NetSigma))
		slices.Sort(acks)
		// Drawn whatever the jitter, so that a model without it sees the
		// same traffic.
		jitter := rng.Int64N(2*m.JitterMax+1) - m.JitterMax
		b := Batch{Producer: id, NoID: noID || m.LogAppendTime, At: at, Visible: visible,
			FirstStamp: stamp(first) + jitter, LastStamp: stamp(last) + jitter, SentFirst: first, SentLast: last, Records: n}
		if m.EventTimeMax > 0 {
			event := first - m.EventTimeMin - rng.Int64N(m.EventTimeMax-m.EventTimeMin)
			b.FirstStamp, b.LastStamp = event, event+(last-first)
		}
		if m.LogAppendTime {
			b.FirstStamp, b.LastStamp = at, at
		}
		if m.LastStable && txnFirst < 0 {
			b.TxnStart, txnFirst = true, len(out)
		}
		out = append(out, b)
		if m.TransactionEvery > 0 && at >= nextCommit {
			// The commit's marker follows the transaction's last batch.
			marker := at + logNormal(rng, m.NetMedian, m.NetSigma) + logNormal(rng, m.ReplicationMedian, m.ReplicationSigma)
			markerVisible := marker + logNormal(rng, m.ReplicationMedian, m.ReplicationSigma)
			aborted := m.AbortOneIn > 0 && rng.IntN(m.AbortOneIn) == 0
			if m.Hang.Min > 0 && at >= m.Hang.After {
				// The producer stops with the transaction open; its
				// coordinator aborts it when the hang ends, and it starts
				// again from there.
				hangFor := m.Hang.Min
				aborted, m.Hang.Min = true, 0
				marker, markerVisible = marker+hangFor, markerVisible+hangFor
				for t < markerVisible {
					t = next(t)
				}
			}
			if aborted {
				for i := max(txnFirst, 0); i < len(out); i++ {
					out[i].Aborted = true
				}
			}
			out = append(out, Batch{Producer: id, Control: true, At: marker, Visible: markerVisible,
				FirstStamp: stamp(marker), LastStamp: stamp(marker), SentFirst: marker, SentLast: marker, Records: 1})
			nextCommit = at + m.TransactionEvery
			txnFirst, settled = -1, markerVisible
		}
	}
	return out
}
