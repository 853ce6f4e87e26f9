//go:build image

// Package container checks the container image `make image` builds: its
// configuration (entrypoint, user, ports) as podman reports it, and its
// filesystem, exported from a container created from it, with the binary
// run from there. Run it with `make image`, which sets IMAGE.
//
// The image is not run with `podman run`: on the machines this project is
// built on (containers without cgroup delegation), crun fails before the
// entrypoint starts ("setrlimit RLIMIT_NOFILE: Operation not permitted").
// The exported filesystem under chroot, as the image's user, is the check
// that works; Kubernetes runs the same files.
package container

import (
	"archive/tar"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	binaryPath = "/otelcol-kafkatimelag"
	configPath = "/etc/otelcol-kafkatimelag/config.yaml"
)

type imageConfig struct {
	User         string              `json:"User"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts"`
	Entrypoint   []string            `json:"Entrypoint"`
	Cmd          []string            `json:"Cmd"`
}

func imageName(t *testing.T) string {
	t.Helper()
	image := os.Getenv("IMAGE")
	if image == "" {
		t.Fatal("IMAGE is not set; run `make image`, which builds the image and sets it")
	}
	return image
}

func podman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("podman", args...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, exit.Stderr)
		}
		t.Fatalf("podman %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

func TestImageConfig(t *testing.T) {
	var inspected []struct {
		Config imageConfig `json:"Config"`
	}
	if err := json.Unmarshal([]byte(podman(t, "image", "inspect", imageName(t))), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman image inspect: %v (%d images)", err, len(inspected))
	}
	cfg := inspected[0].Config
	t.Logf("image config: entrypoint %q, cmd %q, user %q, ports %v", cfg.Entrypoint, cfg.Cmd, cfg.User, slices.Sorted(maps.Keys(cfg.ExposedPorts)))
	if !slices.Equal(cfg.Entrypoint, []string{binaryPath}) {
		t.Errorf("entrypoint %q, want [%s]", cfg.Entrypoint, binaryPath)
	}
	if !slices.Equal(cfg.Cmd, []string{"--config=" + configPath}) {
		t.Errorf("cmd %q, want the default config path %s", cfg.Cmd, configPath)
	}
	uid, gid, ok := strings.Cut(cfg.User, ":")
	if n, err := strconv.Atoi(uid); !ok || err != nil || n == 0 {
		t.Errorf("user %q: want a numeric non-root uid:gid", cfg.User)
	}
	if n, err := strconv.Atoi(gid); err != nil || n == 0 {
		t.Errorf("user %q: want a numeric non-root gid", cfg.User)
	}
	for _, port := range []string{"13133/tcp", "8889/tcp", "8888/tcp"} {
		if _, ok := cfg.ExposedPorts[port]; !ok {
			t.Errorf("port %s not exposed (health check 13133, metrics 8889, own metrics 8888)", port)
		}
	}
}

// TestImageFilesystem exports the image's files and runs the binary from
// them as the image's user: `components` lists the receiver and the health
// check, and `validate` accepts the default configuration at the default
// path.
func TestImageFilesystem(t *testing.T) {
	image := imageName(t)
	id := podman(t, "create", image)
	t.Cleanup(func() { _ = exec.Command("podman", "rm", id).Run() })
	dir := t.TempDir()
	archive := filepath.Join(dir, "rootfs.tar")
	podman(t, "export", "-o", archive, id)
	root := filepath.Join(dir, "rootfs")
	files := extract(t, archive, root)
	t.Logf("image files: %s", strings.Join(files, " "))
	for _, want := range []string{binaryPath, configPath, "/etc/ssl/certs/ca-certificates.crt"} {
		info, err := os.Stat(filepath.Join(root, want))
		if err != nil || info.Size() == 0 {
			t.Errorf("%s missing or empty in the image: %v", want, err)
		}
	}

	bin, err := elf.Open(filepath.Join(root, binaryPath))
	if err != nil {
		t.Fatalf("open %s: %v", binaryPath, err)
	}
	defer bin.Close()
	for _, p := range bin.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader: the scratch image has none (build with CGO_ENABLED=0)", binaryPath)
		}
	}

	components := runInImage(t, root, "components")
	for _, want := range []string{"kafka_time_lag", "healthcheckv2", "prometheus"} {
		if !strings.Contains(components, want) {
			t.Errorf("`components` does not list %s:\n%s", want, components)
		}
	}
	runInImage(t, root, "validate", "--config="+configPath)
}

// runInImage runs the image's binary in its filesystem: under chroot as
// uid:gid 10001 when this test is root, else straight from the exported
// files (the binary is static, so it needs nothing else).
func runInImage(t *testing.T, root string, args ...string) string {
	t.Helper()
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.Command("chroot", append([]string{"--userspec=10001:10001", root, binaryPath}, args...)...)
	} else {
		t.Logf("not root: running %s from the exported files without chroot", binaryPath)
		cmd = exec.Command(filepath.Join(root, binaryPath), args...)
	}
	cmd.Env = []string{"KAFKA_BROKERS=kafka-1:9092,kafka-2:9092"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in the image: %v\n%s", binaryPath, strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s in the image: ok (%d bytes of output)", binaryPath, strings.Join(args, " "), len(out))
	return string(out)
}

// extract unpacks a filesystem tarball and returns the regular files in it.
func extract(t *testing.T, archive, root string) []string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var files []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("read %s: %v", archive, err)
		}
		name := filepath.Clean("/" + h.Name)
		target := filepath.Join(root, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				t.Fatal(err)
			}
			if err := out.Close(); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
		default:
			t.Errorf("unexpected %s in the image (type %c): a scratch image holds only files and directories", name, h.Typeflag)
		}
	}
}
