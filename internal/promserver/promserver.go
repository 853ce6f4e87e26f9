// Package promserver runs a real Prometheus server on a loopback port, with
// its own temporary storage, and reads it through its HTTP API. The
// end-to-end tests and the scale program (cmd/scalebench -prometheus) use it;
// Prometheus itself comes from Debian's package (2.x: scrape and remote
// write) or from deploy/prometheus/build-prometheus3.sh (3.x: OTLP too).
package promserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/childproc"
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
	// Env is added to its environment, e.g. GOGC=100.
	Env []string
	// Ready bounds the wait for /-/ready (default 2 minutes).
	Ready time.Duration
}

// Server is a running Prometheus: PID, Exited and LogTail come from its
// process.
type Server struct {
	// URL is its base URL, http://127.0.0.1:<port>.
	URL string

	*childproc.Process
	client *http.Client
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
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(o.Dir, "tsdb"),
		"--web.listen-address=" + addr,
	}, o.Args...)
	proc, err := childproc.Start(filepath.Join(o.Dir, "prometheus.log"), o.Env, o.Binary, args...)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + addr, Process: proc, client: &http.Client{Timeout: 30 * time.Second}}
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
		case <-s.Done():
			return fmt.Errorf("exited before it was ready: %v", s.Err())
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s", wait)
		case <-tick.C:
		}
	}
}

// Stop ends Prometheus (SIGTERM, killed after 30 seconds) and waits.
func (s *Server) Stop() error { return s.Process.Stop(30 * time.Second) }

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
