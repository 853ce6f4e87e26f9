//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/demo"
)

// healthReport is the part of healthcheckv2's verbose answer the test reads:
// the overall verdict and each pipeline's components.
type healthReport struct {
	code       int
	Healthy    bool                       `json:"healthy"`
	Status     string                     `json:"status"`
	Components map[string]json.RawMessage `json:"components"`
}

// receiverStatus digs the receiver's own status out of the verbose report.
func (h healthReport) receiverStatus() (status, errMsg string) {
	var pipeline struct {
		Components map[string]struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"components"`
	}
	if err := json.Unmarshal(h.Components["pipeline:metrics"], &pipeline); err != nil {
		return "", ""
	}
	r := pipeline.Components["receiver:kafka_time_lag"]
	return r.Status, r.Error
}

func getHealth(port int) (healthReport, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/?verbose", port))
	if err != nil {
		return healthReport{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return healthReport{}, err
	}
	h := healthReport{code: resp.StatusCode}
	if err := json.Unmarshal(body, &h); err != nil {
		return healthReport{}, fmt.Errorf("health answer %q: %w", body, err)
	}
	return h, nil
}

// TestHealthFollowsKafka: the collector's health check serves the
// receiver's component status. It turns unhealthy (HTTP 500, the receiver
// in StatusRecoverableError) when the demo cluster stops, and healthy again
// (200, StatusOK) when the cluster is back on the same ports.
func TestHealthFollowsKafka(t *testing.T) {
	bin := os.Getenv("OTELCOL_BIN")
	if bin == "" {
		t.Fatal("OTELCOL_BIN is not set; run `make e2e`, which builds the collector and sets it")
	}
	logs := &lockedBuffer{}
	opts := demo.Options{Logger: log.New(logs, "kafkademo: ", log.Lmicroseconds), OrdersRate: 100, StatusEvery: -1}
	cluster, err := demo.Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("start demo cluster: %v", err)
	}
	t.Cleanup(func() {
		cluster.Close()
		if t.Failed() {
			t.Logf("demo events:\n%s", logs)
		}
	})
	sink := startOTLPSink(t)
	healthPort := freePort(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(collectorConfig(cluster.Addrs(), sink.URL, healthPort, storageOptions{})), 0o600); err != nil {
		t.Fatalf("write collector config: %v", err)
	}
	col := startCollector(t, bin, filepath.Join(dir, "collector.log"), cfgPath)
	waitHealthy(t, col, healthPort)

	waitFor := func(what string, want func(healthReport) bool) healthReport {
		t.Helper()
		var last healthReport
		var lastErr error
		started := time.Now()
		if !poll(func() bool {
			last, lastErr = getHealth(healthPort)
			return lastErr == nil && want(last)
		}) {
			t.Fatalf("health never became %s (last: %+v, %v)\n%s", what, last, lastErr, col.logTail())
		}
		status, msg := last.receiverStatus()
		t.Logf("health %s after %.1fs: HTTP %d, collector %s, receiver %s %q", what, time.Since(started).Seconds(), last.code, last.Status, status, msg)
		return last
	}
	waitFor("healthy with data", func(h healthReport) bool {
		status, _ := h.receiverStatus()
		return h.code == http.StatusOK && h.Healthy && status == "StatusOK" && sink.snapshot().count(metricLag, demo.GroupOrdersFast) > 0
	})

	var ports []int
	for _, addr := range cluster.Addrs() {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, port)
	}
	cluster.Close()
	t.Logf("demo cluster stopped")
	down := waitFor("unhealthy", func(h healthReport) bool {
		status, _ := h.receiverStatus()
		return h.code == http.StatusInternalServerError && !h.Healthy && status == "StatusRecoverableError"
	})
	if _, msg := down.receiverStatus(); msg == "" {
		t.Errorf("the receiver's status carries no error")
	}

	opts.Ports = ports
	back, err := demo.Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("restart demo cluster on ports %v: %v", ports, err)
	}
	t.Cleanup(back.Close)
	t.Logf("demo cluster back on %v", back.Addrs())
	waitFor("healthy again", func(h healthReport) bool {
		status, _ := h.receiverStatus()
		return h.code == http.StatusOK && h.Healthy && status == "StatusOK"
	})
}
