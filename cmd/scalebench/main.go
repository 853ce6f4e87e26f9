// Command scalebench measures the otelcol-kafkatimelag collector at scale
// (issue #5). For each workload it serves an in-process Kafka (kfake, 3
// brokers) holding GROUPS x PARTITIONS (group, partition) pairs, runs the
// REAL collector binary against it as a subprocess, exporting through
// otlp_http to a sink in this program, and measures the collector process:
//
//   - CPU time (utime + stime from /proc/<pid>/stat) between consecutive
//     scrapes, each scrape told by the first export carrying its points: one
//     collection interval of the whole process (scrape, export, the samples
//     in between);
//   - peak RSS (VmHWM from /proc/<pid>/status) over the whole run, start and
//     first scrapes included;
//   - Kafka requests per interval by API key, counted by kfake's Control
//     observer.
//
// It then runs the naive path (one ListOffsets per partition per group, one
// OffsetFetch per group) in a child process on the same cluster and prints
// the ratio. The results are a Markdown table on stdout; BENCHMARKS.md has
// the figures and the commands. Run it with `make bench`, or:
//
//	go run ./cmd/scalebench -collector _build/otelcol-kafkatimelag
//
// With -busy every partition is written continuously (busy.go), and with
// -churn too every group commits on every partition each -churn-every
// (churn.go): the busy shape of 1,000,000 pairs is
//
//	-workloads 100x10000 -collection-interval 15s -sampling-interval 5s \
//	  -busy -busy-every 15s -churn -churn-every 15s
//
// With -prometheus it measures a Prometheus path instead (prometheus.go):
// the collector sending to a real Prometheus by OTLP, remote write or
// scrape, the CPU and peak RSS of both processes, ending with the one line
// `make bench-prometheus` prints.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// requestCounts are requests served, by API key.
type requestCounts = kafkacount.Counts

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	fs := flag.NewFlagSet("scalebench", flag.ContinueOnError)
	fs.StringVar(&o.collector, "collector", "_build/otelcol-kafkatimelag", "path of the collector binary (make build)")
	workloads := fs.String("workloads", "50x2000,30x3000", "comma-separated workloads: GROUPSxPARTITIONS, one topic every group commits on every partition of, or GROUPSxTOPICSxPARTITIONS, each topic with GROUPS groups of its own")
	fs.IntVar(&o.brokers, "brokers", 3, "brokers of the in-process Kafka")
	fs.DurationVar(&o.interval, "collection-interval", 10*time.Second, "receiver collection_interval")
	fs.DurationVar(&o.sampling, "sampling-interval", 5*time.Second, "receiver sampling_interval")
	fs.IntVar(&o.scrapes, "scrapes", 6, "steady-state scrapes to measure after the warm-up")
	fs.IntVar(&o.warmupMax, "warmup-max", 20, "most warm-up scrapes (the record-timestamp cache fills at max_record_reads_per_scrape per scrape)")
	fs.BoolVar(&o.naive, "naive", true, "also measure the naive path on each workload")
	replicas := fs.String("replicas", "", "comma-separated replica counts, e.g. 1,2,4: run that many collectors sharing each workload through coordination.group_id, one count after the other on the same cluster, and report each one's CPU and peak memory and the brokers' bytes against the first count (replicas.go); no naive path")
	fs.IntVar(&o.naivePasses, "naive-passes", 2, "passes of the naive path")
	env := fs.String("collector-env", "", "comma-separated NAME=VALUE added to the collector's environment, e.g. GOMEMLIMIT=100MiB")
	fs.StringVar(&o.workDir, "dir", "", "directory for the configs and logs (default: a temporary one, removed unless -keep)")
	fs.BoolVar(&o.keep, "keep", false, "keep the configs and logs")
	extra := fs.String("extra-config", "", "comma-separated collector config files merged over the generated one (e.g. to add the pprof extension)")
	extraArgs := fs.String("collector-args", "", "comma-separated extra command-line arguments of the collector, e.g. --feature-gates=pdata.useProtoPooling")
	promArgs := o.prom.register(fs)
	o.busy.register(fs)
	o.churn.register(fs)
	registerTimestampSource(fs, &o.timestampSource)
	fs.BoolVar(&o.exporters, "compare-exporters", false, "also replay on the same cluster the requests kminion and klag send per scrape, and count their bytes (exporters.go)")
	fs.StringVar(&o.kminion, "kminion", "", "kminion binary (deploy/kminion/build-kminion.sh): run it on the same cluster beside the collector, lag only, scrape its /metrics every collection interval as Prometheus would, and report its CPU and memory beside the collector's (kminion.go)")
	fs.BoolVar(&o.accuracy, "accuracy", false, "with -busy: compare every exported time lag with the age of the record at the committed offset (turns kafka.consumer_group.offset on)")
	naiveWorker := fs.Bool("naive-worker", false, "internal: run the naive path as a child process")
	naiveBrokers := fs.String("naive-brokers", "", "internal: brokers of the naive worker")
	naiveWorkload := fs.String("naive-workload", "", "internal: workload of the naive worker")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if *naiveWorker {
		ws, err := scaleload.Parse(*naiveWorkload)
		if err != nil {
			return err
		}
		return runNaiveWorker(strings.Split(*naiveBrokers, ","), ws[0], o.naivePasses)
	}
	ws, err := scaleload.Parse(*workloads)
	if err != nil {
		return err
	}
	if *extraArgs != "" {
		o.extraArgs = strings.Split(*extraArgs, ",")
	}
	if *env != "" {
		o.env = strings.Split(*env, ",")
	}
	if *extra != "" {
		o.extraConfig = strings.Split(*extra, ",")
	}
	if *promArgs != "" {
		o.prom.args = strings.Split(*promArgs, ",")
	}
	if *replicas != "" {
		o.naive = false
	}
	for _, w := range ws {
		if o.naive && w.Topics > 1 {
			return fmt.Errorf("workload %s: the naive path reads one topic; add -naive=false", w)
		}
	}
	if o.accuracy && !o.busy.on {
		return errors.New("-accuracy needs -busy: the truth is what busy mode's writes appended")
	}
	if err := o.churn.check(o.busy.on); err != nil {
		return err
	}
	if err := o.busy.prepare(&o); err != nil {
		return err
	}
	if _, err := os.Stat(o.collector); err != nil {
		return fmt.Errorf("collector binary: %w (run `make build`)", err)
	}
	if o.kminion != "" {
		if o.prom.binary != "" || *replicas != "" {
			return errors.New("-kminion runs beside one collector: not with -prometheus or -replicas")
		}
		if _, err := os.Stat(o.kminion); err != nil {
			return fmt.Errorf("-kminion: %w (deploy/kminion/build-kminion.sh builds it)", err)
		}
		if o.kminion, err = filepath.Abs(o.kminion); err != nil {
			return err
		}
	}
	if o.collector, err = filepath.Abs(o.collector); err != nil {
		return err
	}
	if o.workDir == "" {
		if o.workDir, err = os.MkdirTemp("", "scalebench-"); err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(o.workDir)
		}
	} else if err := os.MkdirAll(o.workDir, 0o755); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.prom.binary != "" {
		return runPrometheusPaths(ctx, o, ws)
	}
	if *replicas != "" {
		counts, err := parseReplicas(*replicas)
		if err != nil {
			return err
		}
		for _, w := range ws {
			sets, err := runReplicaSets(ctx, o, w, counts)
			if err != nil {
				return fmt.Errorf("workload %s: %w", w, err)
			}
			printReplicaReport(os.Stdout, o, w, sets)
		}
		return nil
	}
	var results []*result
	var kminionErrs []error
	for _, w := range ws {
		logf("workload %s: %d groups, %d topics of %d partitions, %d pairs on %d brokers", w, w.GroupCount(), w.Topics, w.PartitionsPerTopic, w.Pairs(), o.brokers)
		r, err := runWorkload(ctx, o, w)
		if err != nil {
			return fmt.Errorf("workload %s: %w", w, err)
		}
		results = append(results, r)
		if r.kminion != nil && r.kminion.err != nil {
			kminionErrs = append(kminionErrs, fmt.Errorf("workload %s: %w", w, r.kminion.err))
		}
	}
	printReport(os.Stdout, o, results)
	return errors.Join(kminionErrs...)
}

func runWorkload(ctx context.Context, o options, w scaleload.Workload) (*result, error) {
	r := &result{w: w, brokers: o.brokers}
	k, err := scaleload.Start(o.brokers)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	loadStart := time.Now()
	loadCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	err = k.Load(loadCtx, w)
	if err == nil {
		r.coordinators, err = k.Coordinators(loadCtx, w)
	}
	cancel()
	if err != nil {
		return nil, fmt.Errorf("load the workload: %w", err)
	}
	r.loadTime = time.Since(loadStart)
	logf("loaded in %s: %d records, %d groups on %d coordinators", r.loadTime.Round(time.Millisecond), w.Partitions()*scaleload.RecordsPerPartition, w.GroupCount(), r.coordinators)
	var truth *accuracyCheck
	if o.accuracy {
		o.busy.appended = newAppendLog(o.busy.clockSkew)
		truth = newAccuracyCheck(o.busy.appended, o.sampling)
		path, err := writeAccuracyConfig(o.workDir)
		if err != nil {
			return nil, err
		}
		o.extraConfig = append(slices.Clone(o.extraConfig), path)
	}
	if o.busy.on {
		if err := prefill(ctx, k, w, o.busy); err != nil {
			return nil, err
		}
		defer startWriting(ctx, k, w, o)()
	}

	var (
		pid   atomic.Int64
		kpid  atomic.Int64 // kminion's, with -kminion
		mu    sync.Mutex
		marks []mark
	)
	notify := make(chan struct{}, 1024)
	snk, err := startSink(func(time.Time) {
		m := mark{at: time.Now(), requests: k.Requests(), traffic: readTraffic(k)}
		p := int(pid.Load())
		m.cpu, m.err = procCPU(p)
		if m.err == nil {
			_, m.rss, m.err = procMemory(p)
		}
		if kp := int(kpid.Load()); kp != 0 {
			m.kminion = readKminionMark(kp, k)
		}
		mu.Lock()
		marks = append(marks, m)
		mu.Unlock()
		notify <- struct{}{}
	})
	if err != nil {
		return nil, err
	}
	snk.check = truth
	defer snk.close()

	name := fmt.Sprintf("%s-%d", w, time.Now().UnixNano())
	cfgPath := filepath.Join(o.workDir, name+".yaml")
	if err := os.WriteFile(cfgPath, []byte(collectorConfig(k.Addrs, o, "", "otlp_http", "    endpoint: "+snk.url())), 0o600); err != nil {
		return nil, err
	}
	start := mark{requests: k.Requests(), traffic: readTraffic(k)}
	logPath := filepath.Join(o.workDir, name+".log")
	col, err := startCollector(o, cfgPath, logPath)
	if err != nil {
		return nil, err
	}
	pid.Store(int64(col.PID()))
	if o.busy.on {
		r.busy = &busyResult{started: time.Now(), log: logPath}
	}
	logf("collector pid %d started (config %s)", col.PID(), cfgPath)
	defer func() {
		if err := col.Stop(time.Minute); err != nil {
			logf("collector stop: %v", err)
		}
	}()
	var km *kminionRun
	kminionDone := make(<-chan struct{}) // never closed without kminion
	if o.kminion != "" {
		if km, err = startKminion(ctx, o.kminion, k.Addrs, o.workDir, name, o.interval); err != nil {
			return nil, err
		}
		kpid.Store(int64(km.proc.PID()))
		kminionDone = km.proc.Done()
		logf("kminion pid %d started (config %s)", km.proc.PID(), km.cfgPath)
		defer func() {
			if err := km.close(); err != nil {
				logf("kminion stop: %v", err)
			}
		}()
	}

	// first, then warm-up until a scrape reads no record, then o.scrapes more.
	deadline := time.After(time.Duration(o.warmupMax+o.scrapes+6)*o.interval + 5*time.Minute + o.busy.fill)
	firstDeadline := time.After(3*o.interval + 2*time.Minute)
	check := time.NewTicker(time.Second)
	defer check.Stop()
	steadyFrom := -1
	for {
		mu.Lock()
		n := len(marks)
		filled := !o.busy.on || steadyFrom >= 0 && time.Since(marks[steadyFrom].at) >= o.busy.fill
		mu.Unlock()
		if filled && steadyFrom >= 0 && n >= steadyFrom+o.scrapes {
			break
		}
		if filled && steadyFrom < 0 && n >= 1+o.warmupMax+o.scrapes {
			break // never settled; report what there is
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline:
			return nil, fmt.Errorf("timed out after %d scrapes; collector log:\n%s", n, col.LogTail(40))
		case <-col.Done():
			return nil, fmt.Errorf("collector exited: %v; log:\n%s", col.Err(), col.LogTail(40))
		case <-kminionDone:
			return nil, fmt.Errorf("kminion exited: %v; log:\n%s", km.proc.Err(), km.proc.LogTail(40))
		case <-firstDeadline:
			if n == 0 {
				return nil, fmt.Errorf("no scrape exported within %s; collector log:\n%s", 3*o.interval+2*time.Minute, col.LogTail(40))
			}
			continue
		case <-check.C:
			if err := snk.err(); err != nil {
				return nil, fmt.Errorf("sink: %w", err)
			}
			continue
		case <-notify:
		}
		mu.Lock()
		n = len(marks)
		if r.busy != nil && n == 1 {
			r.busy.first = readBusyMark(o.busy)
		}
		if steadyFrom < 0 && n >= 2 {
			last := between(marks[n-2], marks[n-1])
			if o.churn.settled(n, last.requests[kmsg.Fetch]) {
				steadyFrom = n - 1 // marks[n-2] -> marks[n-1] is the first steady interval
				if r.busy != nil {
					r.busy.settled = readBusyMark(o.busy)
				}
			}
		}
		mu.Unlock()
		logf("scrape %d exported (%s)", n, progress(marks, &mu))
	}
	hwm, rss, err := procMemory(col.PID())
	if err != nil {
		return nil, err
	}
	r.peakRSS, r.endRSS = hwm, rss
	if r.busy != nil {
		mu.Lock()
		err := r.busy.finish(o.busy, marks, steadyFrom)
		mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("busy mode: %w", err)
		}
	}
	mu.Lock()
	// marks[steadyFrom-1] -> marks[steadyFrom] is the first steady interval.
	steady := marks[max(steadyFrom-1, 0)].at
	mu.Unlock()
	if err := steadyScrapeErrors(logPath, steady, time.Now()); err != nil {
		return nil, err
	}

	mu.Lock()
	defer mu.Unlock()
	for _, m := range marks {
		if m.err != nil {
			return nil, fmt.Errorf("read /proc of the collector: %w", m.err)
		}
	}
	r.first = between(start, marks[0])
	r.settled = steadyFrom >= 0
	if !r.settled {
		steadyFrom = len(marks) - o.scrapes
	}
	for i := 1; i < len(marks); i++ {
		iv := between(marks[i-1], marks[i])
		switch {
		case i < steadyFrom:
			r.warmup = append(r.warmup, iv)
		case i < steadyFrom+o.scrapes:
			r.steady = append(r.steady, iv)
			r.maxRSS = max(r.maxRSS, marks[i].rss)
		}
	}
	seen, err := snk.seen()
	if err != nil {
		return nil, err
	}
	if truth != nil {
		var measured []time.Time
		for _, s := range seen[min(steadyFrom, len(seen)):min(steadyFrom+o.scrapes, len(seen))] {
			measured = append(measured, s.at)
		}
		summary := truth.summary(measured, w.Pairs())
		r.accuracy = &summary
	}
	if len(seen) > steadyFrom {
		s := seen[steadyFrom]
		r.points, r.lagPts, r.requests = s.points, s.lagPoints, s.requests
		r.exportKB = float64(s.bytes) / 1024
	}
	if r.lagPts != w.Pairs() {
		logf("warning: a steady scrape exported %d lag points, want %d", r.lagPts, w.Pairs())
	}
	if km != nil {
		if r.kminion, err = kminionFigures(km, marks, steadyFrom, o.scrapes, w.Pairs()); err != nil {
			return nil, err
		}
		// The scrapes whose exports began at the marks opening the steady
		// intervals: each was whole by the window's end.
		for _, s := range seen[min(max(steadyFrom-1, 0), len(seen)):min(steadyFrom+o.scrapes-1, len(seen))] {
			r.kminion.collectorLagPts = append(r.kminion.collectorLagPts, s.lagPoints)
		}
		if err := km.close(); err != nil {
			logf("kminion stop: %v", err)
		}
	}
	if err := col.Stop(time.Minute); err != nil {
		logf("collector stop: %v", err)
	}

	if o.exporters {
		if r.exporters, err = compareExporters(ctx, k, w); err != nil {
			return nil, err
		}
	}
	if o.naive {
		logf("naive path: %d passes of %d requests each", o.naivePasses, w.Groups*(1+w.Partitions()))
		r.naive, r.naiveErr = runNaive(ctx, k, w, o.naivePasses, filepath.Join(o.workDir, name+"-naive.log"))
		if r.naiveErr != nil {
			logf("naive path: %v", r.naiveErr)
		}
	}
	return r, nil
}
