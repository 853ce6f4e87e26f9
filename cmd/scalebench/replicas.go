package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/childproc"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/promserver"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// parseReplicas reads -replicas: comma-separated replica counts, each 1 or
// more.
func parseReplicas(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-replicas %q: want comma-separated counts of 1 or more, e.g. 1,2,4", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// replicaSet is what one set of replicas cost over the measured intervals.
type replicaSet struct {
	n int
	// cpu is each replica's CPU per collection interval, and peak its
	// VmHWM over the whole run.
	cpu  []time.Duration
	peak []int64
	// rss is each one's resident set at the end, and live the largest live
	// heap its collections marked over the measured intervals (gctrace,
	// with -busy; 0 without): the peak includes the first scrapes, when a
	// replica that joined first holds every topic until the others join.
	rss  []int64
	live []float64
	// read is what the brokers sent all of them per interval, by API, and
	// requests what they asked.
	read, requests requestCounts
	// lagPoints is how many kafka.consumer_group.lag points they exported
	// together per round (a scrape of each): the workload's pairs when every
	// pair has one writer.
	lagPoints float64
}

func (r replicaSet) totalCPU() time.Duration {
	var sum time.Duration
	for _, c := range r.cpu {
		sum += c
	}
	return sum
}

// runReplicaSets runs each count of replicas in turn on one cluster of w
// (its busy writes and commits running throughout), measured as a single
// collector is: the replicas share the groups and topics through
// coordination.group_id (a group of their own for each count), each
// exporting to the same sink.
func runReplicaSets(ctx context.Context, o options, w scaleload.Workload, counts []int) ([]replicaSet, error) {
	k, err := startLoaded(ctx, o.brokers, w)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	if o.busy.on {
		defer startWriting(ctx, k, w, o)()
	}
	snk, err := startSink(nil)
	if err != nil {
		return nil, err
	}
	defer snk.close()
	var out []replicaSet
	for _, n := range counts {
		logf("replicas: %d on workload %s", n, w)
		set, err := runReplicaSet(ctx, o, k, snk, w, n)
		if err != nil {
			return nil, fmt.Errorf("%d replicas: %w", n, err)
		}
		out = append(out, set)
	}
	return out, nil
}

// lagPointsPerRound is how many lag points a round of n scrapes (one of
// each replica) exported, over the scrapes that began arriving between
// from and to: each scrape's points counted whole, however many export
// requests carried them.
func lagPointsPerRound(snk *sink, n int, from, to time.Time) (float64, error) {
	seen, err := snk.seen()
	var points, scrapes int
	for _, s := range seen {
		if s.arrived.Before(from) || s.arrived.After(to) {
			continue
		}
		points += s.lagPoints
		scrapes++
	}
	if scrapes == 0 {
		return 0, err
	}
	return float64(points) / (float64(scrapes) / float64(n)), err
}

// runReplicaSet runs n replicas on k until they are warm, and measures
// them over o.scrapes intervals.
func runReplicaSet(ctx context.Context, o options, k *scaleload.Cluster, snk *sink, w scaleload.Workload, n int) (replicaSet, error) {
	set := replicaSet{n: n}
	group := fmt.Sprintf("scalebench-replicas-%d-%d", n, time.Now().UnixNano())
	var (
		cols   []*childproc.Process
		logs   []string
		starts []time.Time
	)
	defer func() {
		for _, c := range cols {
			if err := c.Stop(time.Minute); err != nil {
				logf("replica stop: %v", err)
			}
		}
	}()
	for i := range n {
		name := fmt.Sprintf("%s-replicas-%d-%d", w, n, i)
		cfgPath := filepath.Join(o.workDir, name+".yaml")
		coordination := fmt.Sprintf("    coordination:\n      group_id: %s\n", group)
		own := o
		if o.busy.on {
			// Each replica's own metrics on a port of its own.
			port, err := promserver.FreePort()
			if err != nil {
				return set, err
			}
			own.busy.telemetryPort = port
		}
		if err := os.WriteFile(cfgPath, []byte(collectorConfig(k.Addrs, own, coordination, "otlp_http", "    endpoint: "+snk.url())), 0o600); err != nil {
			return set, err
		}
		col, err := startCollector(o, cfgPath, filepath.Join(o.workDir, name+".log"))
		if err != nil {
			return set, err
		}
		cols = append(cols, col)
		logs = append(logs, filepath.Join(o.workDir, name+".log"))
		starts = append(starts, time.Now())
		logf("replica %d of %d: pid %d", i+1, n, col.PID())
	}
	// Warm-up: the replicas join and split the work, and each reads its
	// share's records once (a cold start).
	warm := time.Duration(o.warmupMax)*o.interval + 20*time.Second
	logf("warming up for %s", warm)
	if !sleepCtx(ctx, warm) {
		return set, ctx.Err()
	}
	cpu0 := make([]time.Duration, n)
	for i, c := range cols {
		var err error
		if cpu0[i], err = procCPU(c.PID()); err != nil {
			return set, fmt.Errorf("replica %d: %w (log: %s)", i, err, c.LogTail(20))
		}
	}
	traffic0 := readTraffic(k)
	window := time.Duration(o.scrapes) * o.interval
	measured := time.Now()
	logf("measuring %d intervals (%s)", o.scrapes, window)
	if !sleepCtx(ctx, window) {
		return set, ctx.Err()
	}
	for i, c := range cols {
		cpu, err := procCPU(c.PID())
		if err != nil {
			return set, fmt.Errorf("replica %d: %w (log: %s)", i, err, c.LogTail(20))
		}
		hwm, rss, err := procMemory(c.PID())
		if err != nil {
			return set, err
		}
		set.cpu = append(set.cpu, (cpu-cpu0[i])/time.Duration(o.scrapes))
		set.peak = append(set.peak, hwm)
		set.rss = append(set.rss, rss)
		live := 0.0
		if o.busy.on {
			gcs, err := gctraceLives(logs[i])
			if err != nil {
				return set, err
			}
			from, to := measured.Sub(starts[i]), time.Since(starts[i])
			for _, gc := range gcs {
				if gc.at >= from && gc.at <= to {
					live = max(live, gc.mb)
				}
			}
		}
		set.live = append(set.live, live)
	}
	t := readTraffic(k).since(traffic0)
	// The last scrapes may still be arriving: those that began arriving
	// up to half an interval before the end count.
	var err error
	set.lagPoints, err = lagPointsPerRound(snk, n, measured, time.Now().Add(-o.interval/2))
	if err != nil {
		return set, err
	}
	for i := range t.bytes {
		set.read[i] = t.bytes[i] / int64(o.scrapes)
		set.requests[i] = t.requests[i] / int64(o.scrapes)
	}
	logf("%d replicas: CPU %s per interval, peaks %s, RSS at the end %s, live heaps %s, read %s per interval, %.0f lag points per round",
		n, cpuList(set.cpu), mibList(set.peak), mibList(set.rss), mbList(set.live), kibOf(sum(set.read)), set.lagPoints)
	return set, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func cpuList(cpu []time.Duration) string {
	parts := make([]string, len(cpu))
	for i, c := range cpu {
		parts[i] = fmt.Sprintf("%.2f s", c.Seconds())
	}
	return strings.Join(parts, " + ")
}

func mibList(bytes []int64) string {
	parts := make([]string, len(bytes))
	for i, b := range bytes {
		parts[i] = fmt.Sprintf("%d MiB", b>>20)
	}
	return strings.Join(parts, ", ")
}

func mbList(mb []float64) string {
	parts := make([]string, len(mb))
	for i, m := range mb {
		parts[i] = fmt.Sprintf("%.0f MB", m)
	}
	return strings.Join(parts, ", ")
}

func maxOf[T int64 | float64](xs []T) T {
	var m T
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func kibOf(b int64) string { return kib(float64(b)) }

// printReplicaReport prints the sets against the first (one replica, as
// -replicas 1,2,4 runs it).
func printReplicaReport(out io.Writer, o options, w scaleload.Workload, sets []replicaSet) {
	fmt.Fprintf(out, "\n## scalebench: replicas sharing workload %s (%d pairs, %d groups, %d topics of %d partitions)\n\n", w, w.Pairs(), w.GroupCount(), w.Topics, w.PartitionsPerTopic)
	fmt.Fprintf(out, "collection_interval %s, sampling_interval %s, %d measured intervals after a %d-interval warm-up; CPU per interval of each replica (utime+stime), peak RSS (VmHWM) of each over its run, and what the brokers sent all of them per interval.\n\n", o.interval, o.sampling, o.scrapes, o.warmupMax)
	fmt.Fprintln(out, "| replicas | CPU of each | together | against one | peak RSS of each | largest against one | RSS at the end | largest against one | live heap (gctrace) | largest against one | read from the brokers | against one | of which OffsetFetch | ListOffsets | Fetch | lag points per round |")
	fmt.Fprintln(out, "|---:|---|---:|---:|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	base := sets[0]
	for _, s := range sets {
		fmt.Fprintf(out, "| %d | %s | %.2f s | %.2fx | %s | %.2fx | %s | %.2fx | %s | %.2fx | %s | %.2fx | %s | %s | %s | %.0f |\n",
			s.n, cpuList(s.cpu), s.totalCPU().Seconds(), s.totalCPU().Seconds()/max(base.totalCPU().Seconds(), 1e-9),
			mibList(s.peak), float64(maxOf(s.peak))/float64(max(maxOf(base.peak), 1)),
			mibList(s.rss), float64(maxOf(s.rss))/float64(max(maxOf(base.rss), 1)),
			mbList(s.live), maxOf(s.live)/max(maxOf(base.live), 1e-9),
			kibOf(sum(s.read)), float64(sum(s.read))/float64(max(sum(base.read), 1)),
			kibOf(s.read[kmsg.OffsetFetch]), kibOf(s.read[kmsg.ListOffsets]), kibOf(s.read[kmsg.Fetch]), s.lagPoints)
	}
}

// sum is every API's count.
func sum(c requestCounts) int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}
