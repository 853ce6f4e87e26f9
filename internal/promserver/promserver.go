// Package promserver runs a real Prometheus server on a loopback port, with
// its own temporary storage, and reads it through its HTTP API. The
// end-to-end tests and the scale program (cmd/scalebench -prometheus) use it;
// Prometheus itself comes from Debian's package (2.x: scrape and remote
// write) or from deploy/prometheus/build-prometheus3.sh (3.x: OTLP too).
package promserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Binary is the Prometheus binary to run: $PROMETHEUS_BIN when set, else
// `prometheus` on PATH.
func Binary() (string, error) {
	if bin := os.Getenv("PROMETHEUS_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("PROMETHEUS_BIN=%s: %w", bin, err)
		}
		return bin, nil
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("no prometheus on PATH (run deploy/prometheus/install-prometheus.sh, or set PROMETHEUS_BIN): %w", err)
	}
	return bin, nil
}

// Options configures one server.
type Options struct {
	// Binary is the Prometheus binary (see Binary).
	Binary string
	// Config is the content of its configuration file.
	Config string
	// Dir holds the configuration file, the TSDB and the log. It must exist.
	Dir string
	// Args are extra command-line flags, e.g. --web.enable-otlp-receiver.
	Args []string
	// Ready bounds the wait for /-/ready (default 2 minutes).
	Ready time.Duration
}

// Server is a running Prometheus.
type Server struct {
	// URL is its base URL, http://127.0.0.1:<port>.
	URL string

	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
	client  *http.Client
}

// Start runs Prometheus on a free loopback port and waits until it answers
// /-/ready. The caller stops it with Stop.
func Start(ctx context.Context, o Options) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(o.Dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(o.Config), 0o600); err != nil {
		return nil, fmt.Errorf("write prometheus config: %w", err)
	}
	logPath := filepath.Join(o.Dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create prometheus log: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(o.Dir, "tsdb"),
		"--web.listen-address=" + addr,
	}, o.Args...)
	cmd := exec.Command(o.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	s := &Server{
		URL:     "http://" + addr,
		cmd:     cmd,
		logPath: logPath,
		done:    make(chan struct{}),
		client:  &http.Client{Timeout: 30 * time.Second},
	}
	go func() {
		s.waitErr = cmd.Wait()
		logFile.Close()
		close(s.done)
	}()
	wait := o.Ready
	if wait == 0 {
		wait = 2 * time.Minute
	}
	if err := s.waitReady(ctx, wait); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("prometheus %s %s: %w\n%s", o.Binary, strings.Join(args, " "), err, s.LogTail(30))
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			return err
		}
		if resp, err := s.client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("exited before it was ready: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s", wait)
		case <-tick.C:
		}
	}
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM and waits for the exit; it kills the process when it
// has not exited within 30 seconds.
func (s *Server) Stop() error {
	if s.Exited() {
		return s.exitErr()
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return s.exitErr()
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return errors.New("prometheus did not exit within 30s of SIGTERM; killed")
	}
}

// exitErr ignores the exit status of a process that SIGTERM ended.
func (s *Server) exitErr() error {
	var exit *exec.ExitError
	if errors.As(s.waitErr, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM {
		return nil
	}
	return s.waitErr
}

// LogTail is the last lines of the server's log.
func (s *Server) LogTail(lines int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(prometheus log unreadable: %v)", err)
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// FreePort returns a loopback port that was free a moment ago. Whoever binds
// it later may find it taken by another process in between; on a test
// machine that is rare enough.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
