// Package childproc runs a program as a child process whose output goes to a
// log file, and stops it as a service manager would (SIGTERM, then SIGKILL
// after a grace period). The scale program runs the collector with it, and
// internal/promserver runs Prometheus.
package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is a running child. Its owner stops it with Stop.
type Process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// Start runs name with args, its environment extended by env, its stdout
// and stderr written to a new file at logPath.
func Start(logPath string, env []string, name string, args ...string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create the log of %s: %w", name, err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process exited (nil for status 0); call it after Done.
func (p *Process) Err() error { return p.err }

// Stop sends SIGTERM and waits; it kills the process if it has not exited
// within grace. The error is the exit's, or says it was killed.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return p.err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %s of SIGTERM; killed", p.cmd.Path, grace)
	}
}

// LogTail is the last lines of the process's log.
func (p *Process) LogTail(lines int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
