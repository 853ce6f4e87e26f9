//go:build !unit

package childproc

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExitAndLog(t *testing.T) {
	p, err := Start(filepath.Join(t.TempDir(), "log"), []string{"GREETING=hello"}, "sh", "-c", `echo "$GREETING"; echo second; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("sh did not exit")
	}
	if !p.Exited() || p.Err() == nil || !strings.Contains(p.Err().Error(), "exit status 3") {
		t.Fatalf("exited %t, err %v; want exit status 3", p.Exited(), p.Err())
	}
	if got := p.LogTail(1); got != "second" {
		t.Fatalf("LogTail(1) = %q, want the last line", got)
	}
	if got := p.LogTail(10); got != "hello\nsecond" {
		t.Fatalf("LogTail(10) = %q, want both lines, the environment passed on", got)
	}
	if err := p.Stop(time.Second); err == nil {
		t.Fatal("Stop of an exited process must return its exit error")
	}
}

func TestStopSendsSIGTERM(t *testing.T) {
	// The shell traps SIGTERM and exits cleanly, as the collector does.
	p, err := Start(filepath.Join(t.TempDir(), "log"), nil, "sh", "-c", `trap 'echo stopping; exit 0' TERM; echo ready; while :; do sleep 0.1; done`)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); p.LogTail(1) != "ready"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("sh did not start")
		}
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := p.LogTail(1); got != "stopping" {
		t.Fatalf("log ends %q, want the TERM trap's line", got)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	p, err := Start(filepath.Join(t.TempDir(), "log"), nil, "sh", "-c", `trap '' TERM; echo ready; while :; do sleep 0.1; done`)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); p.LogTail(1) != "ready"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("sh did not start")
		}
	}
	err = p.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop = %v, want the kill reported", err)
	}
	if !p.Exited() {
		t.Fatal("not exited after Stop")
	}
}

func TestStartMissingBinary(t *testing.T) {
	if _, err := Start(filepath.Join(t.TempDir(), "log"), nil, "/nonexistent/binary"); err == nil {
		t.Fatal("Start of a missing binary must fail")
	}
}
