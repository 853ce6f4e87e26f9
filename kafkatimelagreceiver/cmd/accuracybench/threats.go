package main

import "fmt"

// threats is the section on the threats to validity.
func threats(seeds int) string {
	return fmt.Sprintf(`## Threats to validity

What the simulation cannot show, and what would change the ranking:

- **The delays are modelled, not measured.** Network, replication and
  clock figures are assumptions for one region with NTP; a cross-region
  producer, a broker under GC or disk pressure, or a host without NTP moves
  records' timestamps further from their appends ([what the error comes
  from](#what-the-error-comes-from) measures how far each part moves each
  row). That favours the rows that never read a timestamp (3 to 6, 9, 11)
  against those that do (1, 2, 7, 8); the ranking between the table rows
  does not depend on it.
- **In-flight queueing rarely binds.** With the network assumed, five
  requests in flight are seldom all waiting even in the bursts; a slow
  broker would make it bind and widen the gap between CreateTime and the
  append.
- **Read-committed groups on one shape.** Only the shape of aborted and
  hung transactions holds its group at the last stable offset; on the
  other transactional shape the group reads up to the high watermark,
  past transactions open for 100 ms, and the peers' record reads read as
  `+"`read_uncommitted`"+` (the Java consumer's default) everywhere.
- **No faults or restarts** (but kafka-lag-exporter's warm start): the
  logs keep every record from the start of the history, but on the
  retention shape (an hour kept, one partition, stamps at the append) and
  the compacted one (records removed, not offsets); a topic keeping days of
  data lengthens klag's anchor line and its error on every unsteady shape.
- **Budgets shared on one shape only.** Every method runs each partition
  with a fresh instance, but on the shape of 100 partitions read by one
  receiver, where this receiver's budgets shared by a scrape's partitions
  (`+"`max_record_reads_per_scrape`"+`, `+"`max_record_read_bytes_per_scrape`"+` and
  the time index's rounds) are spent on all of them at once. There, in
  seeds 1 to 3 at every interval, sharing them left row 1's p95 and largest
  errors and its scrapes without an estimate as with a receiver a
  partition, and cut its bytes a scrape by 17 to 34 %% (fewer record reads
  within the shared byte budget).
  A cluster of thousands of partitions, where they bind harder, is not
  simulated here ([sizing](sizing.md) measures what a scrape costs there).
- **Peers re-implemented.** Each row follows its source as read (linked);
  Datadog's follows the source of July 2026, whose release tag is not
  confirmed here. Datadog's data-streams row checks at each 30 s scrape
  here, not every 15 s: its cache holds half the points it would, and
  reaches its 1,000 points after 8 h 20 min, past the runs here, so its
  compaction never runs in them; its estimate is anchored at the newest
  check's time, so it loses no staleness to the slower checks.
- **Seeds, not deployments.** %d seeds per cell bound the simulation's own
  noise (the ± columns), not how representative the shapes are.
- **CPU and memory** are not measured here (BENCHMARKS.md).

`, seeds)
}
