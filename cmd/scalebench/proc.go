package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/childproc"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux this runs on.
const clockTicks = 100

// procCPU is the CPU time (user + system) process pid has used so far, from
// /proc/<pid>/stat; it covers all its threads, including exited ones.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// procMemory reads VmHWM (peak resident set) and VmRSS from
// /proc/<pid>/status, in bytes.
func procMemory(pid int) (hwm, rss int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, want := range []struct {
			key string
			to  *int64
		}{{"VmHWM:", &hwm}, {"VmRSS:", &rss}} {
			if rest, ok := strings.CutPrefix(line, want.key); ok {
				f := strings.Fields(rest) // "123456 kB"
				if len(f) == 2 && f[1] == "kB" {
					kb, err := strconv.ParseInt(f[0], 10, 64)
					if err == nil {
						*want.to = kb << 10
					}
				}
			}
		}
	}
	if hwm == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
	}
	return hwm, rss, sc.Err()
}

// startCollector runs the collector with the configuration at cfgPath and
// the run's extra configurations and arguments, logging to logPath.
func startCollector(o options, cfgPath, logPath string) (*childproc.Process, error) {
	args := []string{"--config", cfgPath}
	for _, c := range o.extraConfig {
		args = append(args, "--config", c)
	}
	args = append(args, o.extraArgs...)
	return childproc.Start(logPath, o.env, o.collector, args...)
}
