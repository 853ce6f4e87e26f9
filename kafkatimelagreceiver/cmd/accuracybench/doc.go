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
func document(results, clocks []accuracy.Result, plot func(accuracy.Shape) string, seed uint64) string {
	var legend []string
	for i, m := range accuracy.Methods() {
		legend = append(legend, fmt.Sprintf("%d %s: %s", i+1, accuracy.ColorNames[i], m.Name))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# How accurate is time lag? This receiver against the published methods

Every time-lag monitor estimates; this page measures how wrong each way of
estimating is, on the same traffic, against the truth. A simulation
appends records to a partition on a known timeline, lets a consumer group
commit as it reads, and runs six methods over exactly the observations
each would have made: the end offsets sampled every sampling interval, and
at each scrape the group's committed offset and the end offset, plus the
records or anchors a method reads. Ground truth is the timeline: the time
lag at a scrape is the time since the oldest record the group has not
consumed was appended (0 when it has consumed everything).

Every table and plot below is written by one command, from the repository's
root:

`+"```"+`sh
cd kafkatimelagreceiver && go run ./cmd/accuracybench
`+"```"+`

It runs in a few seconds, reads no clock and uses seed %d: a second run
writes the same bytes (document and PNGs). The first row of each table
runs the receiver's own estimator code (the interpolation tables of
`+"`internal/timetable`"+`, the record-read rules of `+"`lag.OutOfTable`"+` and the
dating of `+"`lag.AppendTimes`"+`), not a re-implementation of it.

## The target

At every scrape, the error of the time lag should be at most
max(0.1 x the sampling interval, 1 %% of the true time lag), at the 95th
percentile. The *target ratio* column is the 95th percentile over all
scrapes of |error| / that bound, a scrape without an estimate counting as
a miss: at most 1 meets the target (✓), above 1 misses it (✗). A fast
subset of this simulation runs in `+"`make test`"+`
(`+"`TestAccuracyTarget`"+` in `+"`kafkatimelagreceiver/internal/accuracy`"+`) and fails
when the receiver's row misses the target on any shape at any interval;
`+"`TestProducerClocksAreMeasured`"+` holds it within 50 ms on
skewed clocks.

## The methods

Each is re-implemented from its published description and named by what
it does:

1. **this receiver**: per-partition interpolation tables of end offsets
   sampled every sampling interval (at most %d points, simplified and thinned
   as they age), a record placed at (k+1)/(n+1) of its bracket, and record
   timestamps read where no table can date the record (older than the table,
   in an unwatched gap, on an idle partition) or where the bracket is coarse
   against the time lag it yields; reads are remembered while a group sits on
   the record.
2. **this receiver, no record reads**: the same with
   `+"`max_record_reads_per_scrape: 0`"+`: tables only.
3. **last-60 table, extrapolated**: the last 60 end-offset observations of the
   partition (a flat run kept as its first and last point), linear
   interpolation inside the table, extrapolation along the line through its
   oldest and newest points outside it, and no lag when the committed offset
   is the newest point's offset.
4. **lag / produce rate (5 min)**: the offset lag divided by the production
   rate measured over the end-offset observations of the last 5 minutes; no
   estimate when no record was appended in the window.
5. **log-start to max-timestamp line**: one straight line through the log,
   from its first record (the log-start offset and its timestamp) to the
   record with the largest timestamp (ListOffsets for the max timestamp), the
   committed offset's append time read off it.
6. **record at committed offset**: the timestamp of the record at the
   committed offset, read at every scrape where the group lags.

All methods clamp a negative time lag to 0. Methods 3 and 4 are given the
same end-offset observations as ours (every sampling interval, and at each
scrape); method 5 asks for its anchors at each scrape; method 6 keeps no
history.

## What the simulation models, and what it does not

It models: one partition and the consumer groups reading it (one, but
for one shape of six); producers that append
batches (a busy producer every 100 ms, a Poisson number of records at the
shape's rate); each record's timestamp equal to its append time (but for
one shape, of skewed clocks), in milliseconds as Kafka keeps it; a group
that commits every 1 to 120 s what it has read, at a bounded read rate;
end-offset reads answered at the instant they are sent and received 2 ms
later; samples every sampling interval and scrapes every 30 s (every 60 s
at 60 s sampling), a quarter second apart so they never coincide. The
receiver's defaults (512 points per table, a gap after 3 sampling
intervals without a point) are used.

It does not model the following, so that in production each method's
error is likely larger than here:

- **Producer clocks**, but for one shape. Record timestamps are exact
  append times everywhere except in "steady, skewed clocks", where two
  producers' clocks are 1.5 s behind and 0.3 s ahead of the broker's, each
  constant. In production timestamps are the producers' clocks
  (CreateTime) unless the topic uses LogAppendTime: method 6 is then off
  by the producers' clock skew and batching delay (linger), which the
  tables (broker-side end offsets) are not; this receiver measures each
  producer's clock (see what each method gets wrong, 1), which needs
  producer IDs on the batches (idempotent producers, every client's
  default since Kafka 3.0; the simulation's producers all have one) and
  clocks that stay put for minutes.
- **Retention.** No record is ever deleted: the log starts at the first
  record of the simulated history (1 to 4 h before watching starts). On a
  topic keeping days of data, method 5's line spans days and its error on
  every unsteady shape grows accordingly.
- **Many groups on a partition**, but for one shape. Every shape has one
  group on its partition except "steady, six groups", where six groups read
  the same busy partition at different distances from its head, the case
  that decides how many records this receiver must read. Its rows count
  all six groups' scrapes.
- **Faults.** No broker, request or collector failure, no restart (the
  tables start empty when watching starts), no transactions, compaction or
  log truncation; latency is constant.
- **CPU and memory.** Only accuracy and the Kafka traffic each method asks
  for are measured here; BENCHMARKS.md has the receiver's CPU and memory,
  and (scalebench `+"`-accuracy`"+`) the error of every time lag the built
  collector exports for 1,000,000 pairs that all move, with and without
  record reads, against the records' own timestamps.

## The cost model

Requests and bytes are per scrape, for 100,000 (group, partition) pairs:
%d partitions read by %d groups each, led by %d brokers, every pair behaving
like the simulated one. An end-offset read (ListOffsets, one request per
broker) serves every group of a partition; a record read (Fetch) is a
group's: the groups of a partition are assumed to sit at different
offsets, and a round of Fetch requests carries one offset per partition,
so a read per group per partition costs %d rounds of %d requests.
This receiver's refining reads (of records the table dates, but coarsely)
and method 5's log-start read are the partition's: they are counted in
the rounds of Fetch requests they take, a read answering every wanted
offset of the partition that its batches hold, as the receiver's reads do.
Bytes are the
ListOffsets request and answer per partition (44 B), a Fetch partition's
request and answer header (73 B) plus the record batches returned (%d B a
record, a 61 B batch header, the batch holding the offset and those after
it up to the %d KiB the receiver asks per partition), and 100 B of
headers per request. Reading the committed offsets, which every method
needs alike, is left out.

## Summary

Our row (method 1) against the target, and the methods that are more
accurate (a lower p95 error, and an estimate at least as often) at less
than 10 times our requests per scrape:

%s
Where method 6 is listed, it is because the simulation's record timestamps
are exact append times but for one shape (see above): it is exact there
and not in production, where it is off by the producers' clock skew,
and on steady traffic its bytes per scrape are about a hundred times ours.
At 1 s sampling our end-offset reads alone are 31 ListOffsets rounds per
scrape (186 requests), which is what brings its requests within 10 times
ours. Method 5 is listed
on sparse traffic because a group one record behind there sits on the
newest record, which is its max-timestamp anchor: exact; two records
behind, it is minutes off (its max column).

## What measuring producers' clocks is worth

Record reads date a record by its producer's timestamp moved by that
producer's clock offset, as the records read measure it (what each method
gets wrong, 1). Where batches do not say which producer wrote them
(LogAppendTime topics, producers without an ID), the timestamp is taken as
it stands, clamped to the bracket the table proves: on skewed clocks the
error is then the skew (1.5 s), or the bracket's width where that is
narrower. Both, in the same run:

%s
The other shapes are the same either way: their clocks are exact, and an
offset the reads cannot tell from none moves nothing.

## Results by shape

Errors are in seconds: the median, 95th percentile and maximum of the
absolute error over the scrapes with an estimate, and the bias (mean
signed error, estimate minus truth). Plot colours: %s; the truth is the
thick grey line, and estimates above the plot's top are drawn on its edge.
%s
## What each method gets wrong, and why

1. **This receiver.** Between two samples the table cannot tell when a
   record was appended: it places the k-th of the n records appended in a
   bracket at (k+1)/(n+1) of it, which is unbiased when the records of a
   bracket are spread over it, and off by up to the bracket's width when
   they landed at once (a burst, a batch job). Where that uncertainty is
   more than a tenth of the time lag it yields, the record is read; so the
   errors left are those of groups far enough behind that the bracket is
   under a tenth of their lag (a second or so on groups minutes behind:
   diurnal, catching up, replay, well within 1 %% of the lag). The tightest
   row is sparse traffic at 1 s sampling: a lone record in a 1 s bracket
   is placed at its middle (up to 0.5 s off), and the record is read only
   while the lag is under 10 s, so a group 10 to 50 s behind can be off by
   more than 1 %% of its lag. It meets the target there, but with the
   least margin. Its cost is highest where a partition stops between
   bursts or batches (bursty at 1 s sampling, batch): once the end offset
   has stood still for a second, the record at each lagging group's offset
   is read to tell data from a transaction marker, and read again each
   time the group moves, so there it reads nearly as much as method 6. A
   group catching up from hours behind costs a read per scrape too, while
   its records are older than the table. A record's timestamp is its
   producer's clock, which may be off by seconds; but every record read
   lies in a bracket the table proves, so its producer's clock offset
   (append time minus timestamp) lies between the bracket's ends minus the
   timestamp. A read also answers, from the batches it returns anyway, the
   records on either side of the next two samples, whose brackets bound
   the offset to within the time between two appends. Each producer ID's
   reads narrow its offset, and its records are dated by their timestamps
   moved by it, then clamped to the bracket: by none while the reads allow
   an exact clock, by the middle of what they allow once that is under
   0.2 s wide or 16 reads have narrowed it, else by the offset they allow
   closest to none; and by none
   below 0.1 s, which a producer's batching and the end-offset read's
   round trip make an exact clock look. On
   skewed clocks that is a few milliseconds off once a few reads have
   measured each producer (the max column is the first scrapes). What it
   cannot measure: producers without an ID (not idempotent), whose records
   are dated by their timestamps clamped to the bracket; a clock that
   drifts by more than 0.1 s between reads is measured again from then on;
   a topic with LogAppendTime timestamps, stamped by the broker, needs
   none of it.
2. **No record reads.** The same tables without the reads: on bursty and
   batch traffic a burst lands anywhere in its bracket, so the error is up to
   the sampling interval; a group behind everything the table has watched
   (catching up, a replay, a stalled group on an idle topic) has no estimate
   at all until the table reaches back to its offset, which on an idle
   topic is never.
3. **Last-60 table.** The table covers 60 observations: a minute at 1 s
   sampling, 10 minutes at 10 s. A group further behind is dated by
   extrapolating the table's average rate over its whole lag, which is
   wrong by as much as the rate changed (the diurnal peak, a group catching
   up from hours behind: errors of minutes to hours). A flat table (an idle
   topic) has no line to extrapolate along: no estimate. Inside the table,
   a flat run is kept as its first and last point, so a record appended
   after a pause is dated to the end of the pause: sparse traffic is
   overstated by up to a sampling interval (its bias is positive).
4. **Lag / produce rate.** Right only when the producer kept today's rate
   over the whole lag: it divides the records behind by the rate of the
   last 5 minutes, so after a lull (sparse traffic, the trough of the
   diurnal cycle, the end of an outage) or a surge it is off by the ratio of
   the two rates; with nothing produced in the window (an idle topic) it has
   no estimate.
5. **Log-start to max-timestamp line.** One straight line through the
   whole retained log assumes production was steady since the log's first
   record: any daily cycle, burst or outage bends the truth away from it
   (diurnal: minutes off; an outage: tens of minutes at the surge). It needs
   no history, so it has an estimate from the first scrape, and it costs
   three offset reads per scrape. Here the log is only hours long; with days
   of retention the line is longer and the error larger.
6. **Record at committed offset.** Exact here, by construction, but for
   skewed clocks: the simulation's record timestamps are the append times.
   In production it is off by the producers' clock skew and linger (1.5 s
   on the skewed shape, whatever the sampling), and it costs a Fetch per
   lagging group and partition at every scrape, with a batch of records
   behind each: at 100,000 pairs, hundreds of requests and gigabytes per
   scrape on busy topics.

## The simulation against the real receiver

`+"`TestSimulationAgreesWithReceiver`"+` (in `+"`kafkatimelagreceiver`"+`, part of
`+"`make test`"+`) checks that rows 1 and 2 are what the receiver computes. It
runs the real receiver, as shipped and with record reads off, against an
in-process Kafka cluster ([the one the tests use](development.md#what-the-tests-run-against)) for 15 s of steady (a record every 100 ms,
the group 1.5 s behind) and bursty traffic (200 records at once every 4 to
6 s, the group part way through the newest burst), and the same steady
traffic from a producer (idempotent, with an ID) whose clock is 1.5 s
behind, scraping every second; it records every append, and the scrapes'
instants and offsets. The
simulation then replays the same appends and scrapes through rows 1
and 2, which run the receiver's own sampler, read and dating against a
simulated cluster, and every scrape's time lag must agree with the receiver's
to within 2 ms (Kafka's timestamps are milliseconds). They agree exactly
in the runs made so far: the same errors, scrape by scrape, including the
producer's clock measured from the same records read (the real reads
through sarama, the simulation's from its timeline). To see the figures:

`+"```"+`sh
cd kafkatimelagreceiver && go test -count=1 -run TestSimulationAgreesWithReceiver -v .
`+"```"+`

What that test does not cover is what the simulation does not model
(above): the sampler's real ticks (the test's tables take their points
from the scrapes alone, so that nothing depends on the machine's speed),
faults, and producers whose clocks drift or step.
`, seed, timetable.DefaultMaxSamples,
		accuracy.CostPartitions, accuracy.CostGroups, accuracy.CostBrokers, accuracy.CostGroups, accuracy.CostBrokers,
		accuracy.RecordSize, accuracy.FetchMaxBytes>>10,
		accuracy.Summary(results), accuracy.BeforeAfter(clocks), strings.Join(legend, "; "), accuracy.Tables(results, plot))
	return b.String()
}
