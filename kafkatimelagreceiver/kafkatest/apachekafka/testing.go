package apachekafka

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// New starts a cluster for the test (fetching Kafka the first time) and
// stops it at the test's cleanup. A failed test keeps the cluster's
// directory, and prints its path and the last lines of every node's log.
func New(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	ctx := context.Background()
	lib, err := Lib(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "apachekafka-")
	if err != nil {
		tb.Fatal(err)
	}
	if opts.Logf == nil {
		opts.Logf = tb.Logf
	}
	c, err := Start(ctx, lib, dir, opts)
	if err != nil {
		tb.Cleanup(func() { keepLogs(tb, dir) })
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Close()
		if tb.Failed() {
			keepLogs(tb, dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return c
}

// keepLogs prints where a failed test's cluster lies and the tail of each
// log in it.
func keepLogs(tb testing.TB, dir string) {
	tb.Logf("apachekafka: the cluster's configs, data and logs are kept in %s", dir)
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "server.log"))
	for _, path := range logs {
		tb.Logf("apachekafka: last lines of %s:\n%s", path, tail(path, 40))
	}
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
