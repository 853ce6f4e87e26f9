package main

import (
	"fmt"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/accuracy"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// simulationModel is the section on what the simulation models.
func simulationModel() string {
	p := accuracy.DefaultProducers()
	return fmt.Sprintf(`## What the simulation models

There are two kinds of shapes. The *idealized* ones (steady to replay) stamp
every record with its append time, one partition, but for one shape of
skewed clocks: they show how each method copes with the traffic's form. The
*realistic* ones (prefixed "realistic") deliver records as real producers
do, on %d partitions each (one shape %d, all read by one receiver):

- producers: %d on each partition, %d of them without a producer ID
  (librdkafka's `+"`enable.idempotence`"+` defaults to false; the Java client is
  idempotent by default since Kafka 3.0, KIP-679), each an even share of the
  records, sent as a Poisson process;
- batching: a batch closes when full (`+"`batch.size`"+` 16384 B, %d records of
  %d B) or when its first record has waited `+"`linger.ms`"+` %d ms (the Java
  client's default since Kafka 4.0, KIP-1030, and librdkafka's); its records'
  timestamps spread over the time they were sent;
- in flight: at most %d requests a producer
  (`+"`max.in.flight.requests.per.connection`"+`), each answered once the high
  watermark passes it (`+"`acks=all`"+`, the Java default since Kafka 3.0);
- network: one way, log-normal, %.2f ms median, shape %.0f (99th percentile
  about 2.5 ms), an assumption for one region;
- the high watermark trails the leader's append by a log-normal delay, %d ms
  median, shape %.0f (a follower's next fetch; an assumption): end offsets,
  consumers and record reads see only what is below it;
%s- transactions: one shape's producers commit every 100 ms (Kafka Streams'
  exactly-once `+"`commit.interval.ms`"+`), each commit a control record taking
  an offset; its group reads up to the high watermark. Another's abort one
  transaction in 20 and leave one open for minutes (below), and its group
  reads `+"`read_committed`"+`: up to the last stable offset (the first offset of
  the oldest transaction whose marker is not yet replicated), its aborted
  records skipped, as the receiver's reads are; the time index, read as
  `+"`read_uncommitted`"+`, answers any record below the high watermark, aborted
  ones and markers too. There the truth is the next record the group will
  consume: past markers and aborted records, a transaction left open
  counting as aborted from the start. One shape's topic uses LogAppendTime;
- linger: one shape's producers linger 100 to 1,000 ms each (uniform) at
  1 record a second a partition, so that every batch waits out its linger;
- the group: auto-commits every %d s (`+"`auto.commit.interval.ms`"+`) at a
  random phase, and rebalances on average every %d minutes, stopping for 3 to
  %d s (`+"`session.timeout.ms`"+`, 45 s since Kafka 3.0, KIP-735) and starting
  again from its last commit, on every partition at once; one shape's group
  commits after every poll (every 200 ms), one's after every 1,000 records
  it reads on a partition.

Every shape: end-offset reads answered at the instant they are sent and
received 2 ms later; our samples every sampling interval and scrapes every
30 s (every 60 s at 60 s sampling); the receiver's defaults (%d points a
table, a gap after 3 sampling intervals without a point). The scrapes come
a quarter second after a sample, and the rows that poll on a timer of
their own (kafka-lag-exporter, klag, klag-exporter) poll at the scrapes, so
that a scrape sees a value computed at once; but on one shape, realistic
steady with scrapes at random phases, where the scrapes fall at a random
phase to our samples and those rows poll at random phases to the scrapes,
as a Prometheus scrape of an exporter does: a scrape then sees a value up
to a poll old. The fixed phase favours the rows that poll; that shape shows
by how much.

One idealized shape deletes by time, retention overtaking a group: the log
rolls a segment every 10 minutes, and every 5 minutes (at a random phase)
the broker deletes the oldest segments whose records are all more than an
hour old, moving the log start. A record read below the log start is out
of range and returns nothing; the time index answers from the records left.
Once retention has deleted the record at the stopped group's committed
offset, the truth is the time since the append of the oldest record left,
the log start's: the first record the group reads when it resumes
(`+"`auto.offset.reset`"+` earliest, as modelled), and what
`+"`kafka.consumer_group.time_lag`"+` is defined to report there
([how it works](how-it-works.md)), the records lost counted by
`+"`kafka.consumer_group.lost_messages`"+`. A row that dates the committed
offset itself reports the age of a record no longer in the log, up to the
stop's age, and is scored against that truth; a group resetting to the
latest offset instead would have no such record to wait for, which is not
modelled.

`, accuracy.RealisticPartitions, accuracy.ManyPartitions, p.Producers, p.NoID, p.BatchRecords, accuracy.RecordSize, p.Linger/1e6, p.MaxInFlight,
		float64(p.NetMedian)/1e6, p.NetSigma, p.ReplicationMedian/1e6, p.ReplicationSigma,
		clockModel(p),
		accuracy.AutoCommitInterval/1e9, accuracy.RebalanceEvery/6e10, accuracy.SessionTimeout/1e9,
		timetable.DefaultMaxSamples)
}
