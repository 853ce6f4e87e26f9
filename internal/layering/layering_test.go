package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath   string
	Dir          string
	ForTest      string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

// module is one Go module of the repository, as `go list` sees it.
type module struct {
	// Path is the module's import path, Dir its directory.
	Path, Dir string
}

// modules are the repository's modules whose code the rules hold.
func modules(t *testing.T) []module {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no source path")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	return []module{
		{Path: "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag", Dir: root},
		{Path: receiver, Dir: filepath.Join(root, "kafkatimelagreceiver")},
	}
}

// receiver is the receiver module's path.
const receiver = "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver"

// list runs `go list -json` with args in the module's directory; with
// -test it lists the test variants too.
func list(t *testing.T, m module, args ...string) []pkg {
	t.Helper()
	return listAs[pkg](t, m, args...)
}

// listAs is list, decoding what go list says into P.
func listAs[P any](t *testing.T, m module, args ...string) []P {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = m.Dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v in %s: %v\n%s", args, m.Dir, err, stderr.String())
	}
	var pkgs []P
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p P
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		pkgs = append(pkgs, p)
	}
}

// inModule tells whether the import path is the module's or under it.
func inModule(path string, m module) bool {
	return path == m.Path || strings.HasPrefix(path, m.Path+"/")
}

// under tells whether the import path is dir of the module, or under it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// isKafkaClient tells whether the import path is a Kafka client library's.
func isKafkaClient(path string) bool {
	return under(path, "github.com/IBM/sarama") || under(path, "github.com/twmb/franz-go")
}

// wallClockWaits returns where the Go file refers to one of the time
// package's functions named in waits.
func wallClockWaits(t *testing.T, path string, waits []string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var timeName string
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	if timeName == "" || timeName == "_" {
		return nil
	}
	var at []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && slices.Contains(waits, sel.Sel.Name) {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName {
				at = append(at, fset.Position(sel.Pos()).String()+": time."+sel.Sel.Name)
			}
		}
		return true
	})
	return at
}
