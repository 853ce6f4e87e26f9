package container

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The image is built from the repository's Dockerfile by `make image` and
// the release workflow, not by `make test`: the build stage pulls the Go
// toolchain image from Docker Hub, which CI machines (network: the Go
// module proxy and Debian's archive only) cannot reach, and they have no
// container engine running either (no Docker daemon; podman cannot run
// containers without cgroup delegation). These tests check the Dockerfile
// instead, as a linter would, against the files it relies on: pinned base
// images, the toolchain go.mod pins, the OCI labels, the paths it copies,
// a non-root user, exec-form entrypoint, the ports of the default
// configuration, and a .dockerignore that keeps the build output out.

const root = "../.."

// instruction is one Dockerfile instruction: its keyword (upper case),
// flags (--platform=..., --from=...) and arguments, continuation lines
// joined.
type instruction struct {
	cmd   string
	flags map[string]string
	args  string
}

func parseDockerfile(t *testing.T, data string) []instruction {
	t.Helper()
	var out []instruction
	var line strings.Builder
	for raw := range strings.SplitSeq(data, "\n") {
		trimmed := strings.TrimSpace(raw)
		if line.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if line.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if rest, ok := strings.CutSuffix(trimmed, `\`); ok {
			line.WriteString(rest + " ")
			continue
		}
		line.WriteString(trimmed)
		cmd, args, _ := strings.Cut(line.String(), " ")
		in := instruction{cmd: strings.ToUpper(cmd), flags: map[string]string{}}
		args = strings.TrimSpace(args)
		for strings.HasPrefix(args, "--") {
			flag, rest, _ := strings.Cut(args, " ")
			name, value, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			in.flags[name] = value
			args = strings.TrimSpace(rest)
		}
		in.args = args
		out = append(out, in)
		line.Reset()
	}
	require.Zero(t, line.Len(), "the Dockerfile ends inside a continued line")
	return out
}

// stage is a FROM and the instructions up to the next one.
type stage struct {
	from         instruction
	name         string
	instructions []instruction
}

func dockerfile(t *testing.T) (globalArgs map[string]string, stages []stage) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err, "a Dockerfile at the repository's root")
	globalArgs = map[string]string{}
	for _, in := range parseDockerfile(t, string(data)) {
		switch {
		case in.cmd == "FROM":
			image, name, _ := strings.Cut(in.args, " AS ")
			in.args = image
			stages = append(stages, stage{from: in, name: strings.TrimSpace(name)})
		case len(stages) == 0:
			require.Equal(t, "ARG", in.cmd, "only ARG before the first FROM")
			name, value, _ := strings.Cut(in.args, "=")
			globalArgs[name] = value
		default:
			s := &stages[len(stages)-1]
			s.instructions = append(s.instructions, in)
		}
	}
	return globalArgs, stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instructions {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// args are the stage's ARG defaults.
func (s stage) args() map[string]string {
	out := map[string]string{}
	for _, in := range s.all("ARG") {
		name, value, _ := strings.Cut(in.args, "=")
		out[name] = value
	}
	return out
}

// goToolchain is the toolchain line of a go.mod (go1.26.8 -> 1.26.8).
func goToolchain(t *testing.T, gomod string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, gomod))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^toolchain go([0-9]+\.[0-9]+\.[0-9]+)$`).FindStringSubmatch(string(data))
	require.NotNil(t, m, "%s pins its toolchain (a toolchain goX.Y.Z line)", gomod)
	return m[1]
}

func TestDockerfileStagesAndBaseImages(t *testing.T) {
	globals, stages := dockerfile(t)
	require.Len(t, stages, 2, "a build stage and the image")
	build, image := stages[0], stages[1]

	require.Equal(t, "build", build.name)
	require.Equal(t, "$BUILDPLATFORM", build.from.flags["platform"], "the build runs on the build machine's platform and cross-compiles: no emulation")
	require.Equal(t, "docker.io/library/golang:${GO_VERSION}-bookworm", build.from.args, "the Go toolchain image, fully qualified (podman resolves no short names)")
	require.Equal(t, goToolchain(t, "go.mod"), globals["GO_VERSION"], "the Go release of go.mod's toolchain line")
	require.Regexp(t, `^[0-9]+\.[0-9]+\.[0-9]+$`, globals["GO_VERSION"], "a patch release, not a moving tag")

	require.Equal(t, "scratch", image.from.args, "the image holds the static binary and nothing else")
	require.Empty(t, image.all("RUN"), "scratch has no shell to run anything")

	runs := strings.Join(func() []string {
		var r []string
		for _, in := range build.all("RUN") {
			r = append(r, in.args)
		}
		return r
	}(), "\n")
	require.Contains(t, runs, "go build -o /usr/local/bin/ocb go.opentelemetry.io/collector/cmd/builder", "ocb from go.mod's tool line, built for the build machine")
	require.Contains(t, runs, "CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH ocb --config builder-config.yaml", "a static build for the target platform")
	require.Subset(t, keys(build.args()), []string{"TARGETOS", "TARGETARCH"})
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

var labelPair = regexp.MustCompile(`([a-z0-9.]+)="([^"]*)"`)

// TestDockerfileDownloadsModulesBeforeTheSources: the build stage copies
// both modules' go.mod and go.sum and downloads the modules before it
// copies the tree, so that a change to a source file reuses the layer of
// modules instead of downloading them all again.
func TestDockerfileDownloadsModulesBeforeTheSources(t *testing.T) {
	_, stages := dockerfile(t)
	build := stages[0]
	copyAll := slices.IndexFunc(build.instructions, func(in instruction) bool { return in.cmd == "COPY" && in.args == ". ." })
	require.GreaterOrEqual(t, copyAll, 0, "the build stage copies the tree (COPY . .)")
	copied := map[string]bool{}
	downloaded := false
	for _, in := range build.instructions[:copyAll] {
		switch in.cmd {
		case "COPY":
			fields := strings.Fields(in.args)
			dest := fields[len(fields)-1]
			for _, src := range fields[:len(fields)-1] {
				if strings.HasSuffix(dest, "/") && dest != "./" {
					require.Equal(t, dest, filepath.Dir(src)+"/", "%s is copied to its own directory", src)
				}
				copied[src] = true
			}
		case "RUN":
			if strings.Contains(in.args, "go mod download") {
				downloaded = true
			}
		}
	}
	for _, gomod := range []string{"go.mod", "go.sum", "kafkatimelagreceiver/go.mod", "kafkatimelagreceiver/go.sum"} {
		require.True(t, copied[gomod], "%s is copied before the tree", gomod)
	}
	require.True(t, downloaded, "the modules are downloaded (go mod download) before the tree is copied")
	for _, in := range build.instructions[copyAll+1:] {
		require.NotContains(t, in.args, "go mod download", "after the tree: every source change downloads again")
	}
}

func TestDockerfileLabels(t *testing.T) {
	_, stages := dockerfile(t)
	image := stages[len(stages)-1]
	labels := map[string]string{}
	for _, in := range image.all("LABEL") {
		for _, m := range labelPair.FindAllStringSubmatch(in.args, -1) {
			labels[m[1]] = m[2]
		}
	}
	var chart struct {
		Home    string   `json:"home"`
		Sources []string `json:"sources"`
		License string   `json:"license"`
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy/helm/otelcol-kafkatimelag/Chart.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &chart))
	// GHCR links a package to the repository its source label names, and
	// the package then takes the repository's visibility settings.
	require.Equal(t, chart.Home, labels["org.opencontainers.image.source"])
	require.Contains(t, chart.Sources, labels["org.opencontainers.image.source"])
	require.Equal(t, chart.License, labels["org.opencontainers.image.licenses"])
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	require.NoError(t, err)
	require.Contains(t, string(license), "Apache License\n                           Version 2.0")
	require.Equal(t, "${VERSION}", labels["org.opencontainers.image.version"])
	require.Equal(t, "${REVISION}", labels["org.opencontainers.image.revision"])
	require.NotEmpty(t, labels["org.opencontainers.image.title"])
	require.NotEmpty(t, labels["org.opencontainers.image.description"])

	builder, err := os.ReadFile(filepath.Join(root, "builder-config.yaml"))
	require.NoError(t, err)
	version := regexp.MustCompile(`(?m)^  version: (\S+)$`).FindSubmatch(builder)
	require.NotNil(t, version)
	require.Equal(t, string(version[1]), image.args()["VERSION"], "VERSION defaults to the distribution's version")
}

func TestDockerfileFilesUserAndPorts(t *testing.T) {
	_, stages := dockerfile(t)
	image := stages[len(stages)-1]
	copies := map[string]string{} // destination -> source
	for _, in := range image.all("COPY") {
		f := strings.Fields(in.args)
		require.Len(t, f, 2, "COPY %s", in.args)
		if from := in.flags["from"]; from != "" {
			require.Equal(t, "build", from)
		} else {
			_, err := os.Stat(filepath.Join(root, f[0]))
			require.NoError(t, err, "COPY %s: the file is in the repository", f[0])
		}
		copies[f[1]] = f[0]
	}
	require.Equal(t, "/src/_build/otelcol-kafkatimelag", copies["/otelcol-kafkatimelag"], "the binary ocb writes (builder-config.yaml: output_path _build, name otelcol-kafkatimelag)")
	require.Equal(t, "/etc/ssl/certs/ca-certificates.crt", copies["/etc/ssl/certs/ca-certificates.crt"], "the CA bundle for TLS")
	require.Equal(t, "deploy/container/config.yaml", copies["/etc/otelcol-kafkatimelag/config.yaml"])

	users := image.all("USER")
	require.Len(t, users, 1)
	uid, gid, ok := strings.Cut(users[0].args, ":")
	for _, id := range []string{uid, gid} {
		n, err := strconv.Atoi(id)
		require.True(t, ok && err == nil && n > 0, "USER %s: a numeric non-root uid:gid (scratch has no /etc/passwd)", users[0].args)
	}

	var entrypoint, cmd []string
	for _, in := range image.all("ENTRYPOINT") {
		require.NoError(t, json.Unmarshal([]byte(in.args), &entrypoint), "ENTRYPOINT in exec form (there is no shell)")
	}
	for _, in := range image.all("CMD") {
		require.NoError(t, json.Unmarshal([]byte(in.args), &cmd), "CMD in exec form")
	}
	require.Equal(t, []string{"/otelcol-kafkatimelag"}, entrypoint)
	require.Equal(t, []string{"--config=/etc/otelcol-kafkatimelag/config.yaml"}, cmd)

	// The ports the default configuration listens on are exposed.
	config, err := os.ReadFile("config.yaml")
	require.NoError(t, err)
	var exposed []string
	for _, in := range image.all("EXPOSE") {
		exposed = append(exposed, strings.Fields(in.args)...)
	}
	for _, port := range []string{"13133", "8889", "8888"} {
		require.Contains(t, string(config), port, "the default configuration listens on %s", port)
		require.True(t, slices.Contains(exposed, port), "EXPOSE %s", port)
	}
}

func TestDockerignoreKeepsBuildOutputOut(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	for _, want := range []string{"_build/", ".git/"} {
		require.Contains(t, lines, want, "a stale _build would be copied into the build stage; .git is not needed")
	}
	for _, l := range lines {
		require.NotContains(t, []string{"deploy/", "deploy/container/", "kafkatimelagreceiver/", "*.go", "go.mod"}, l, "the build needs it")
	}
}
