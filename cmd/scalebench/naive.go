package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// The naive path is what kafka_exporter-style exporters do on every scrape:
// one OffsetFetch per group and one ListOffsets per partition and again per
// group (sarama's client.GetOffset in a loop). It runs in a child process of
// its own (this binary with -naive-worker) so that its CPU time and memory
// are measured apart from kfake's, like the collector's. It only reads the
// offsets and sums the lags: it builds no metrics and exports nothing, so it
// is a lower bound of what such an exporter spends.

// naiveResult is what the worker prints as its last stdout line.
type naiveResult struct {
	CPUPerPass  []time.Duration `json:"cpu_per_pass"`
	WallPerPass []time.Duration `json:"wall_per_pass"`
	PeakRSS     int64           `json:"peak_rss"`
	LagSum      int64           `json:"lag_sum"`
}

// runNaiveWorker connects, learns every leader and coordinator, prints
// "ready", waits for a line on stdin, runs the passes and prints its result.
func runNaiveWorker(brokers []string, w scaleload.Workload, passes int) error {
	cfg := sarama.NewConfig()
	cfg.ClientID = "scalebench-naive"
	cfg.Version = sarama.V3_0_0_0
	cfg.Net.ReadTimeout = time.Minute
	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	for g := range w.Groups {
		if _, err := client.Coordinator(w.Group(g)); err != nil {
			return err
		}
	}
	for p := range w.PartitionsPerTopic {
		if _, err := client.Leader(w.Topic(0), p); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("wait for go: %w", err)
	}
	var res naiveResult
	for range passes {
		cpu0, wall0 := selfCPU(), time.Now()
		res.LagSum = 0
		for g := range w.Groups {
			group := w.Group(g)
			coordinator, err := client.Coordinator(group)
			if err != nil {
				return err
			}
			committed, err := coordinator.FetchOffset(&sarama.OffsetFetchRequest{Version: 7, ConsumerGroup: group})
			if err != nil {
				return fmt.Errorf("offset fetch %s: %w", group, err)
			}
			for p := range w.PartitionsPerTopic {
				end, err := client.GetOffset(w.Topic(0), p, sarama.OffsetNewest)
				if err != nil {
					return fmt.Errorf("get offset %s/%d: %w", w.Topic(0), p, err)
				}
				if b := committed.GetBlock(w.Topic(0), p); b != nil && b.Offset >= 0 {
					res.LagSum += max(0, end-b.Offset)
				}
			}
		}
		res.CPUPerPass = append(res.CPUPerPass, selfCPU()-cpu0)
		res.WallPerPass = append(res.WallPerPass, time.Since(wall0))
	}
	res.PeakRSS, _, _ = procMemory(os.Getpid())
	return json.NewEncoder(os.Stdout).Encode(res)
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// naiveMeasurement is the naive path's cost per pass (one scrape's worth).
type naiveMeasurement struct {
	passes   int
	cpu      time.Duration // mean per pass
	wall     time.Duration // mean per pass
	peakRSS  int64
	requests requestCounts // all passes
	lagSum   int64
}

// runNaive runs the worker against k and counts the requests of its passes.
func runNaive(ctx context.Context, k *scaleload.Cluster, w scaleload.Workload, passes int, logPath string) (*naiveMeasurement, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-naive-worker",
		"-naive-brokers", joinComma(k.Addrs), "-naive-workload", w.String(), "-naive-passes", fmt.Sprint(passes))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	if !lines.Scan() || lines.Text() != "ready" {
		_ = cmd.Wait()
		return nil, fmt.Errorf("naive worker did not get ready (see %s)", logPath)
	}
	before := k.Requests()
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		return nil, err
	}
	var res naiveResult
	var last string
	for lines.Scan() {
		last = lines.Text()
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("naive worker: %w (see %s)", err, logPath)
	}
	requests := k.Requests().Since(before)
	if err := json.Unmarshal([]byte(last), &res); err != nil {
		return nil, fmt.Errorf("naive worker result %q: %w", last, err)
	}
	if len(res.CPUPerPass) == 0 {
		return nil, errors.New("naive worker ran no pass")
	}
	m := &naiveMeasurement{passes: len(res.CPUPerPass), peakRSS: res.PeakRSS, requests: requests, lagSum: res.LagSum}
	for i := range res.CPUPerPass {
		m.cpu += res.CPUPerPass[i]
		m.wall += res.WallPerPass[i]
	}
	m.cpu /= time.Duration(m.passes)
	m.wall /= time.Duration(m.passes)
	return m, nil
}
