//go:build image

// Package container checks the container image `make image` builds from the
// repository's Dockerfile, whichever of podman, buildah or docker built it:
// the image saved as a docker-archive tarball (IMAGE_ARCHIVE), its
// configuration (entrypoint, user, ports, OCI labels) and its files, with
// the binary run from them. Run it with `make image`, which sets
// IMAGE_ARCHIVE.
//
// The image is not run as a container: on the machines this project is
// built on (containers without cgroup delegation), crun fails before the
// entrypoint starts ("setrlimit RLIMIT_NOFILE: Operation not permitted").
// The files under chroot, as the image's user, are the check that works;
// Kubernetes runs the same files.
package container

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
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
	Labels       map[string]string   `json:"Labels"`
}

// archive is the image as `podman save`, `docker save` or `buildah push
// docker-archive:` write it: manifest.json naming the configuration and the
// layers, each a (possibly gzipped) tarball of files.
type archive struct {
	dir    string
	config imageConfig
	layers []string
}

func openArchive(t *testing.T) *archive {
	t.Helper()
	path := os.Getenv("IMAGE_ARCHIVE")
	if path == "" {
		t.Fatal("IMAGE_ARCHIVE is not set; run `make image`, which builds the image, saves it and sets it")
	}
	a := &archive{dir: t.TempDir()}
	untar(t, path, a.dir, nil)
	var manifest []struct {
		Config string   `json:"Config"`
		Layers []string `json:"Layers"`
	}
	data, err := os.ReadFile(filepath.Join(a.dir, "manifest.json"))
	if err != nil || json.Unmarshal(data, &manifest) != nil || len(manifest) != 1 {
		t.Fatalf("%s: no manifest.json of one image (%v)", path, err)
	}
	var cfg struct {
		Config imageConfig `json:"config"`
	}
	data, err = os.ReadFile(filepath.Join(a.dir, manifest[0].Config))
	if err != nil || json.Unmarshal(data, &cfg) != nil {
		t.Fatalf("%s: image configuration %s: %v", path, manifest[0].Config, err)
	}
	a.config = cfg.Config
	for _, l := range manifest[0].Layers {
		a.layers = append(a.layers, filepath.Join(a.dir, l))
	}
	return a
}

func TestImageConfig(t *testing.T) {
	cfg := openArchive(t).config
	t.Logf("image config: entrypoint %q, cmd %q, user %q, ports %v, labels %v", cfg.Entrypoint, cfg.Cmd, cfg.User, slices.Sorted(maps.Keys(cfg.ExposedPorts)), cfg.Labels)
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
	for _, label := range []string{"source", "version", "revision", "licenses"} {
		if v := cfg.Labels["org.opencontainers.image."+label]; v == "" || strings.Contains(v, "$") {
			t.Errorf("label org.opencontainers.image.%s = %q", label, v)
		}
	}
	if want := os.Getenv("IMAGE_VERSION"); want != "" && cfg.Labels["org.opencontainers.image.version"] != want {
		t.Errorf("label org.opencontainers.image.version = %q, want %s", cfg.Labels["org.opencontainers.image.version"], want)
	}
}

// TestImageFilesystem exports the image's files and runs the binary from
// them as the image's user: `components` lists the receiver and the health
// check, and `validate` accepts the default configuration at the default
// path.
func TestImageFilesystem(t *testing.T) {
	a := openArchive(t)
	root := filepath.Join(t.TempDir(), "rootfs")
	var files []string
	for _, layer := range a.layers {
		untar(t, layer, root, &files)
	}
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

// untar unpacks a tarball, gzipped or not, under root; with files set, it
// is a layer of the image, which holds only files and directories, and the
// regular files' paths are appended to it.
func untar(t *testing.T, path, root string, files *[]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	if magic, _ := r.(*bufio.Reader).Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
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
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777|0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				t.Fatal(err)
			}
			if err := out.Close(); err != nil {
				t.Fatal(err)
			}
			if files != nil {
				*files = append(*files, name)
			}
		case tar.TypeSymlink:
			if files != nil {
				t.Errorf("unexpected symlink %s in the image: a scratch image holds only files and directories", name)
				continue
			}
			// docker-archive links a layer stored twice to its first copy.
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(h.Linkname, target); err != nil {
				t.Fatal(err)
			}
		default:
			if files != nil {
				t.Errorf("unexpected %s in the image (type %c): a scratch image holds only files and directories", name, h.Typeflag)
			}
		}
	}
}
