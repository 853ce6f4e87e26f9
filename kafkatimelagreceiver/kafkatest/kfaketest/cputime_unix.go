//go:build unix

package kfaketest

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// CPUTime is the CPU time (user + system) the process has used so far.
func CPUTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
