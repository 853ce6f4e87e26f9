package main

import (
	"fmt"
	"strings"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/accuracy"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// document is docs/accuracy.md: the prose around the generated tables.
// clocks are the runs of our method with producers' clocks measured and
// not.
func document(results, clocks []accuracy.Result, sensitivity sensitivityRuns, plot func(accuracy.Shape) string, seed uint64, seeds int) string {
	methods := accuracy.Methods()
	var legend []string
	for i, m := range methods {
		legend = append(legend, fmt.Sprintf("%d %s: %s", i+1, accuracy.ColorNames[i], m.Name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# How accurate is time lag? This receiver against the other monitors

Every time-lag monitor estimates; this page measures how wrong each one is,
on the same traffic, against the truth. A simulation appends records to the
partitions of a topic on a known timeline, lets a consumer group commit as
it reads, and runs each monitor's method over exactly the observations it
would have made: end offsets at its own polling interval, the group's
committed offsets, and the records or anchors it reads. The receiver's rows
run the receiver's own code: its sampler and its scrape's read and dating,
asking a simulated cluster that answers from the timeline.

Every table and plot below is written by one command, from the repository's
root:

`+"```"+`sh
cd kafkatimelagreceiver && go run ./cmd/accuracybench
`+"```"+`

It runs in a few minutes on two cores, reads no clock, and runs every cell
(a traffic shape at a sampling interval) with %d seeds, %d to %d: a second run
writes the same bytes (document and PNGs).

## Two truths

A record has two times: when the partition's leader appended it (its
*append time*) and when its producer called send() (its *CreateTime*, on
a true clock). Between the two lie the producer's linger, its wait for an
in-flight slot, the network, and queueing; a record's timestamp field holds
the CreateTime as the producer's clock read it, or the append time on a
topic with LogAppendTime. Every row is scored against both: the time lag
since the append (the *p95* columns, and the target) and since the send
(*p95 vs CreateTime*).

`+"`kafka.consumer_group.time_lag`"+` reports the time since the append of the
oldest record the group has not consumed: it is what the tables of end
offsets measure, it does not move with a producer's clock or its batching,
and it is the delay Kafka itself added, which is what a consumer group can
be held to ([metrics](metrics.md)). The difference between the two columns
is the producers' own delay.

## The target

At every scrape, the error of the time lag should be at most
max(0.1 x the sampling interval, 1 %% of the true time lag) (the *relative*
view: our bound, which scales with our sampling interval), and at most
max(%.0f s, 1 %% of the true time lag) (the *absolute* view, the same for
every method whatever it samples at), each at the 95th percentile over the
scrapes, a scrape without an estimate counting as a miss. The *ratio*
columns are those 95th percentiles of |error| / bound: at most 1 meets the
target. Our row meets it (met, ✓) only when both are at most 1, scored
against the append time, in every seed; where a seed misses, the cell says
how many of the seeds met it. Figures are pooled over the seeds' scrapes and
printed beside the worst seed's; a ± follows the seeds' mean, its centre:
the half-width of the 95 %% confidence interval of that mean (Student's t
over %d seeds).

%s
## The rows

1. **this receiver**, as shipped: per-partition interpolation tables of end
   offsets sampled every sampling interval (at most %d points), a record
   placed at (k+1)/(n+1) of its bracket, and, where no table can date the
   record or where the bracket is coarse against the time lag it yields,
   the record's timestamp found in the brokers' time index (ListOffsets by
   timestamp, no record sent), the partition's clock measured from the
   exact points the index answers; records are read only where the index
   cannot answer, within `+"`max_record_read_bytes_per_scrape`"+`.
2. **this receiver, `+"`timestamp_source: record_reads`"+`**: the same, reading
   the records themselves (Fetch) instead of asking the index, each
   producer's clock measured from the records it reads.
3. **this receiver, tables only**: `+"`max_record_reads_per_scrape: 0`"+`.

The other rows are other tools' methods, re-implemented from their source at
the release named, each at that release's defaults, with where each default
is set (the file and line, or the function or constant that sets it). An
option a user must turn on is a row of its own, marked opt-in: klag-exporter's
message mode (its default is rate mode) and Datadog's data streams (at its
defaults the check sends no time lag, so that row has no estimate).
kafka-lag-exporter also runs at the settings closest to ours (our sampling
interval and table size), which is fairer to it where its 30 s poll is what
costs it:

%s
A row polls on its own interval and, between polls, reports what its last
poll computed: what a scrape of its metrics sees. kminion and kafka_exporter
export offset lag only, with no time lag, so they have no row; AWS MSK's
EstimatedTimeLag is computed inside the managed service, whose method is not
published, so it has none either.

%s## Summary

Our row against the target, and the rows more accurate (a lower p95 error,
and an estimate at least as often) at less than 10 times our requests per
scrape:

%s
%s
## Where the receiver misses

- **Idle, stalled group, at every interval: no time lag.** The topic has
  been idle since watching started, and the stalled group's record is
  older than the tables: only its timestamp could date it, and no record
  the tables bound shows that the partition's CreateTime stamps are append
  times (stamps written when the events happened, as Kafka Streams,
  Connect sources and MirrorMaker 2 write, would be minutes or days off).
  The receiver withholds it (`+"`otelcol_kafka_time_lag_estimates{method=\"unproven\"}`"+`)
  rather than guess (`+"`TestIdlePartitionIsWithheldNotGuessed`"+` holds it to
  that). A LogAppendTime topic, KIP-937 timestamp bounds on the topic, or
  `+"`trusted_timestamp_topics`"+` date it; so do the clocks measured before a
  restart once a read agrees with them.
- **Compacted, catching up, at every interval: scrapes without a time
  lag.** A group catching up through compacted history older than the
  tables: a committed offset in a gap (its records removed by the log
  cleaner) is dated only by a read finding the next record left, which its
  producer's clock dates once reads show that clock; reads of records that
  old, far from the tables' samples, show it slowly, and about half the
  scrapes of the first 20 minutes have no time lag (those whose offset
  holds a record, found exactly in the time index, have one), never a
  wrong one (`+"`TestCompactedHistoryIsRightOrWithheld`"+`). The tables alone
  date nothing there: a table cannot tell which offsets hold records.
- **Retention overtaking a group, deleting by size.** A group behind the
  log start is dated by the oldest record left, from the log start read at
  the scrape wherever a group with a lag sits at or below the log start
  known, or on a record the tables say may be older than its topic's
  `+"`retention.ms`"+` (`+"`TestDeletedLogStartIsNotDated`"+`,
  `+"`TestRecordRetentionMayHaveDeletedIsNotDated`"+`, `+"`internal/read`"+`). A topic
  deleting by `+"`retention.bytes`"+` can delete a younger record: there the group
  keeps its deleted record's date until the sampler's next read of the
  log start (every `+"`sampler.FullSampleEvery`"+` samples). The shape here deletes
  by time.
- **The first scrape or two after a start** withhold the records only
  their timestamps date, until the records either side of the newest
  samples show the partition's stamps are append times.
- **Realistic, skewed clocks, at 10 and 60 s sampling, in some seeds.**
  Producers 1.5 s behind whose stamps jitter by up to 100 ms: the
  receiver dates the records of groups seconds behind by their timestamps
  moved by the measured clock offset, and against 10 s brackets the points
  of row 1 (the index's answers, among them the records on either side of
  the samples) take about an hour to narrow that offset to within a
  second; until then the error is most of the skew. Pooled over the
  seeds' two hours row 1 meets the target, but not in the seeds where the
  offset narrows late (the summary gives how many, and the worst seed's
  p95); row 2, whose reads of the records groups sit on never narrow it,
  misses it throughout. Trusting the table alone (row 3) meets the target
  there in every seed; so does a sampling interval of 1 s in the absolute
  view (at 10 times the end-offset reads).
- **Skewed clocks on one partition, at 1 s sampling.** Producers 1.5 s
  behind and 0.3 s ahead writing to one partition: the time index answers
  the latest timestamp up to a record and not which producer stamped it,
  so that a record of the producer behind is dated by the latest stamp of
  the one ahead before it, early by up to the gap between that producer's
  writes. Where the records read in the first minute (to learn whether the
  partition holds transaction markers) measured both producers' clocks
  apart, the partition's records are read from then on and meet the
  target; where they measured one, the index dates them, in some of the
  seeds (the wide interval). At 10 and 60 s sampling row 1 meets it; row 2
  measures each producer's clock and meets it at 1 s too, at the cost of
  reading the records.
- **At 1 s sampling**, the relative bound is 0.1 s. As modelled (hosts
  running NTP, linger.ms 5) a record's timestamp dates its append to within
  that, and our row meets the target on the steady, bursty, transactional,
  NTP-step, random-phase and committing realistic shapes ([what the error comes from](#what-the-error-comes-from)
  measures the parts: the clocks' residual offsets most, batching a few
  milliseconds, the high watermark's delay none that shows). It misses the
  relative view where timestamps are further off: batches sent 0 to 500 ms
  after they close (slow producers), batches of one record lingering up to
  a second (long linger at a low rate), hosts without NTP 1.5 s behind (the
  skewed realistic shape), stamps of when events happened (event-time,
  which the tables alone date, to about 0.2 s at 1 s sampling); and, in
  some seeds, on six groups (the absolute view it meets; the group 8 s
  behind, dated from its table alone). A record read cannot date an append more closely than its
  producer's delay and clock; the tables alone can, to within the sampling
  interval.
- **At 60 s sampling, the absolute view**, where a table's bracket is a
  minute wide: groups tens of seconds behind (six groups, the skewed
  realistic shape) are dated to within the relative bound (6 s) but not
  within the absolute floor, and so, in some seeds, are the records of the
  event-time shape, which the tables alone date. The default interval meets both there; 60 s
  trades accuracy for a sixth of the end-offset reads.

%s
## What measuring producers' clocks is worth

Record reads (row 2) date a record by its producer's timestamp moved by
that producer's clock offset, as the records read measure it. Where batches do
not say which producer wrote them (LogAppendTime topics, producers without
an ID), the timestamp is taken as it stands, clamped to the bracket the
table proves: the second row below is the error of a producer without an
ID whose clock is off, which stays in its records' time lags up to the
skew (the whole 1.5 s at the default sampling), less only where the
table's bracket is narrower than the skew. Both, on the idealized skewed
shape:

%s
## Results by shape

Errors are in seconds: the 95th percentile of the absolute error against
the append time and against the CreateTime, the median and maximum, and the
bias (mean signed error, estimate minus truth) over the scrapes with an
estimate. The p95 against the append time is given pooled over the seeds'
scrapes, in the worst seed, and as the seeds' mean ± the half-width of its
95 %% interval. Plot colours (the first seed's first partition and group): %s; the truth is the thick grey
line, and estimates above the plot's top are drawn on its edge.
%s
## The cost model

Requests and bytes are per scrape, for 100,000 (group, partition) pairs:
%d partitions read by %d groups each, led by %d brokers, every pair behaving
like the simulated one. An end-offset read (ListOffsets, one request per
broker) serves every group of a partition; a record read (Fetch) is a
group's, a round of Fetch requests carrying one offset per partition, so a
read per group per partition costs %d rounds of %d requests. The anchors'
log-start read is the partition's. This receiver's time-index searches (a
round of ListOffsets requests each) and its reads of records inside the
watched stretch are made for its groups' records, and grow with the groups
as the others' record reads do: they are scaled alike, from the simulated
groups (one, or six) to the model's, an upper bound where groups near one
another would share them. Bytes
are the ListOffsets request and answer per partition (44 B), a Fetch
partition's request and answer header (73 B) plus the record batches
returned (%d B a record, a 61 B batch header, up to %d KiB a partition), and
100 B of headers per request. Reading the committed offsets, which every
row needs alike, is left out.
%s
%s## The simulation against the real receiver

`+"`TestSimulationAgreesWithReceiver`"+` (in `+"`kafkatimelagreceiver`"+`, part of
`+"`make test`"+`) checks that rows 1 to 3 are what the receiver computes. It
runs the real receiver, as shipped, with `+"`timestamp_source: record_reads`"+`
and with `+"`max_record_reads_per_scrape: 0`"+`, against an
in-process Kafka cluster ([the one the tests use](development.md#what-the-tests-run-against))
for 15 s of steady traffic, bursty traffic, and steady traffic from a
producer (with an ID) whose clock is 1.5 s behind, scraping every second;
it records every append, and the scrapes' instants and offsets. The
simulation then replays the same appends and scrapes through rows 1 to 3,
which run the receiver's own sampler, read and dating against a simulated
cluster, and every scrape's time lag must agree with the receiver's to
within 2 ms (Kafka's timestamps are milliseconds). To see the figures:

`+"```"+`sh
cd kafkatimelagreceiver && go test -count=1 -run 'TestSimulationAgreesWithReceiver$' -v .
`+"```"+`

## The simulation against the real receiver: producers stamping early

`+"`TestSimulationAgreesWithReceiverOnEarlyStamps`"+` (in `+"`kafkatimelagreceiver`"+`,
part of `+"`make test`"+`) makes the same check where producers stamp each
record 0 to 500 ms (uniform, seeded) before the leader appends it, as the
realistic, slow producers do: their clocks are true, and a record's
timestamp is when it was sent, not when it was appended. Two producers
write to the in-process cluster: an idempotent one, whose batches carry its
producer ID, so that the receiver measures its clock from the records it
reads, and one without an ID (not idempotent, librdkafka's default), whose
timestamps the receiver takes as they stand. For 15 s, each writes a record
every 100 ms to a steady partition of its own, and both write to a third; a
group reads the three 1.5 s behind. Each also writes bursts of 200 records,
sent one after another over up to 500 ms, to a partition of its own every 3
to 6 s, which a group reads part way. Two receivers scrape every second:
row 1, as shipped (`+"`timestamp_source: time_index`"+`), and row 2
(`+"`timestamp_source: record_reads`"+`). The simulation replays the same
appends and scrapes through both rows;
on every partition, every scrape's time lag must agree with the receiver's
to within 2 ms (but for row 2 on the bursty partitions, below), and the
95th percentile of the error must meet the absolute view of the target.
Reading the records of bursts, row 2's clock bounds depend on which batches
a Fetch returns, which the simulation models by a record size of its own:
in some runs one scrape falling against a burst measures the clock tens of
milliseconds apart from the receiver's; those scrapes are logged, not
asserted. The relative view (0.1 s at scrapes every second) is
missed on every partition by records stamped up to 0.5 s early, as on the
slow producers' shape at 1 s sampling ([where the receiver misses](#where-the-receiver-misses)).

The figures of one run, in seconds against the append time (they move from
run to run with where the scrapes fall between the appends; the receiver's
and the simulation's are the same in each):

| timestamp source | partition | producer | median | p95 | p95 vs CreateTime | max | bias | relative ratio | absolute ratio |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|
| time_index | steady/0 | with an ID | 0.245 | 0.437 | 0.339 | 0.437 | +0.246 | 4.37 | 0.44 |
| time_index | steady/1 | without an ID | 0.212 | 0.469 | 0.362 | 0.469 | +0.212 | 4.69 | 0.47 |
| time_index | steady/2 | both | 0.230 | 0.326 | 0.259 | 0.326 | +0.199 | 3.26 | 0.33 |
| time_index | bursty/0 | with an ID | 0.229 | 0.347 | 0.012 | 0.347 | +0.203 | 3.47 | 0.35 |
| time_index | bursty/1 | without an ID | 0.345 | 0.397 | 0.209 | 0.397 | +0.226 | 3.97 | 0.40 |
| record_reads | steady/0 | with an ID | 0.104 | 0.425 | 0.255 | 0.425 | +0.079 | 4.25 | 0.43 |
| record_reads | steady/1 | without an ID | 0.231 | 0.490 | 0.000 | 0.490 | +0.277 | 4.90 | 0.49 |
| record_reads | steady/2 | both | 0.108 | 0.337 | 0.200 | 0.337 | +0.106 | 3.37 | 0.34 |
| record_reads | bursty/0 | with an ID | 0.229 | 0.347 | 0.001 | 0.347 | +0.204 | 3.47 | 0.35 |
| record_reads | bursty/1 | without an ID | 0.345 | 0.397 | 0.084 | 0.397 | +0.276 | 3.97 | 0.40 |

To see them:

`+"```"+`sh
cd kafkatimelagreceiver && go test -count=1 -run TestSimulationAgreesWithReceiverOnEarlyStamps -v .
`+"```"+`

## The simulation against Apache Kafka

`+"`TestApacheKafkaSimulationAgrees`"+` (in `+"`kafkatimelagreceiver`"+`, part of the
suite against Apache Kafka that `+"`make test`"+` runs) makes the same check on a
real broker: one Apache Kafka 4.4 node, a steady partition written a
record every 100 ms and read 1.5 s behind and a bursty one written 200
records every 4 to 6 s and read part way, both LogAppendTime so that the
broker's stamps are the truth, for 15 s, rows 1 to 3 scraped every second.
Afterwards the records are read back and the simulation's log built from
their stamps. Kafka's time index and the simulation's answer the same
record, with the same timestamp, at every time asked (each record's
millisecond and those either side of it, and every tenth millisecond of
the run: about 1,900 times on the steady partition, 1,500 on the bursty
one); and the simulation, replaying the receivers' scrapes, gives every
scrape of every row the time lag the receiver gave it, within 2 ms, from
the first scrape on. In one run, row 3 (the tables alone) was off the
append times by a median of 0.048 s and a 95th percentile of 0.057 s on
the steady partition, 0.326 s and 0.821 s on the bursty one, the same on
both sides; rows 1 and 2 read the broker's stamps exactly.

`+"```"+`sh
cd kafkatimelagreceiver && KAFKA_LIB="$(../deploy/kafka/fetch-kafka.sh)" go test -tags kafka -count=1 -run TestApacheKafkaSimulationAgrees -v .
`+"```"+`
`, seeds, seed, seed+uint64(seeds)-1,
		accuracy.AbsoluteFloor, seeds, targetTest(), timetable.DefaultMaxSamples,
		accuracy.Peers(methods),
		simulationModel(),
		accuracy.Summary(results), errorSources(sensitivity, seeds), exemptions(results), accuracy.BeforeAfter(clocks), strings.Join(legend, "; "), accuracy.Tables(results, plot),
		accuracy.CostPartitions, accuracy.CostGroups, accuracy.CostBrokers, accuracy.CostGroups, accuracy.CostBrokers,
		accuracy.RecordSize, accuracy.FetchMaxBytes>>10, costBounds(results), threats(seeds))
	return b.String()
}
