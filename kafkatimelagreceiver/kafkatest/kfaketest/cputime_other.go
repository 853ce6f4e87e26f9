//go:build !unix

package kfaketest

import (
	"runtime"
	"testing"
	"time"
)

// CPUTime is the CPU time the process has used so far, which only unix
// systems tell (getrusage): elsewhere it skips the benchmark.
func CPUTime(tb testing.TB) time.Duration {
	tb.Skip("CPU time is read with getrusage, which " + runtime.GOOS + " has not")
	return 0
}
