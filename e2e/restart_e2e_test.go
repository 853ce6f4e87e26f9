//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/demo"
)

// TestRestartWithFileStorage: the collector keeps its interpolation tables in
// file_storage. After a restart with record reads switched off (so that only
// the saved history can answer), the first export already has a time lag for
// every lagging partition of the busy group, and none for the group whose
// commit predates the history (nothing is invented).
func TestRestartWithFileStorage(t *testing.T) {
	bin := os.Getenv("OTELCOL_BIN")
	if bin == "" {
		t.Fatal("OTELCOL_BIN is not set; run `make e2e`, which builds the collector and sets it")
	}
	cluster := startDemo(t)
	sink := startOTLPSink(t)
	dir := t.TempDir()
	storageDir := filepath.Join(dir, "storage")
	if err := os.MkdirAll(storageDir, 0o700); err != nil {
		t.Fatal(err)
	}

	run := func(name string, recordReads int) *collector {
		healthPort := freePort(t)
		cfgPath := filepath.Join(dir, name+".yaml")
		cfg := collectorConfig(cluster.Addrs(), sink.URL, healthPort, storageOptions{dir: storageDir, recordReads: recordReads})
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatalf("write collector config: %v", err)
		}
		col := startCollector(t, bin, filepath.Join(dir, name+".log"), cfgPath)
		waitHealthy(t, col, healthPort)
		return col
	}

	first := run("first", 1000)
	// Let the first collector sample for a while: the orders-fast commits
	// (about 2 s behind) must fall inside its tables.
	if !poll(func() bool {
		s := sink.snapshot()
		return s.count(metricTimeLag, demo.GroupOrdersFast) == 6
	}) {
		t.Fatalf("first collector never reported orders-fast time lag\n%s", first.logTail())
	}
	time.Sleep(10 * time.Second)
	first.stop(t) // SIGTERM: the receiver saves its tables on shutdown
	if t.Failed() {
		return
	}

	sink.reset()
	second := run("second", 0)
	var batch series
	if !poll(func() bool {
		var ok bool
		batch, ok = sink.firstExport()
		return ok
	}) {
		t.Fatalf("restarted collector exported nothing\n%s", second.logTail())
	}
	lagging, withTimeLag := 0, 0
	batch.each(metricLag, demo.GroupOrdersFast, func(lag float64) {
		if lag > 0 {
			lagging++
		}
	})
	batch.each(metricTimeLag, demo.GroupOrdersFast, func(seconds float64) {
		withTimeLag++
		if seconds < 0 || seconds > 60 {
			t.Errorf("orders-fast time lag %.1fs after restart, want seconds", seconds)
		}
	})
	t.Logf("first export after restart: orders-fast %d lagging partitions, %d with time lag (max %.1fs); audit-batch time lag points: %d",
		lagging, withTimeLag, batch.max(metricTimeLag, demo.GroupOrdersFast), batch.count(metricTimeLag, demo.GroupAuditBatch))
	if lagging == 0 || withTimeLag < lagging {
		t.Fatalf("first export after restart: %d lagging orders-fast partitions but %d time lags\n%s", lagging, withTimeLag, second.logTail())
	}
	if n := batch.count(metricTimeLag, demo.GroupAuditBatch); n != 0 {
		t.Errorf("audit-batch has %d time lag points without record reads or history: invented", n)
	}
}
