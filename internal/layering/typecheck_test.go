package layering

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exportPkg is what `go list -export -json` says of a package: where the
// compiler wrote its export data.
type exportPkg struct {
	pkg
	Export string
}

// typeChecker imports a module's packages from the compiler's export data
// (`go list -export`), as the go command built them: types, not the text
// they are written in.
type typeChecker struct {
	fset    *token.FileSet
	exports map[string]string // import path -> export data file
	pkgs    map[string]exportPkg
	imp     types.Importer
}

// newTypeChecker builds the export data of patterns in m and everything
// they depend on.
func newTypeChecker(t *testing.T, m module, patterns ...string) *typeChecker {
	t.Helper()
	tc := &typeChecker{fset: token.NewFileSet(), exports: map[string]string{}, pkgs: map[string]exportPkg{}}
	for _, p := range listAs[exportPkg](t, m, append([]string{"-export", "-deps"}, patterns...)...) {
		tc.exports[p.ImportPath] = p.Export
		tc.pkgs[p.ImportPath] = p
		if inModule(p.ImportPath, m) {
			// go test caches a result by the files the test opened or
			// stat'ed, and go list's reads are not the test's own: a
			// change to the module's sources must run the test again.
			for _, name := range p.GoFiles {
				if _, err := os.Stat(filepath.Join(p.Dir, name)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	tc.imp = importer.ForCompiler(tc.fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := tc.exports[path]
		if !ok || file == "" {
			return nil, os.ErrNotExist
		}
		return os.Open(file)
	})
	return tc
}

// load imports the package at path from its export data.
func (tc *typeChecker) load(t *testing.T, path string) *types.Package {
	t.Helper()
	p, err := tc.imp.Import(path)
	if err != nil {
		t.Fatalf("import %s from its export data: %v", path, err)
	}
	return p
}

// check type-checks the non-test source files of the package at path,
// its imports from their export data, and returns its files and what the
// checker found of each identifier.
func (tc *typeChecker) check(t *testing.T, path string) ([]*ast.File, *types.Info) {
	t.Helper()
	p, ok := tc.pkgs[path]
	if !ok {
		t.Fatalf("%s is not among the packages listed", path)
	}
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(tc.fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: tc.imp}
	if _, err := conf.Check(path, tc.fset, files, info); err != nil {
		t.Fatalf("type-check %s: %v", path, err)
	}
	return files, info
}

// calledFuncs are the functions and methods the files call (or take as
// values), by funcName, with where each is first named.
func calledFuncs(fset *token.FileSet, files []*ast.File, info *types.Info) map[string]token.Position {
	out := map[string]token.Position{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			fn, ok := info.Uses[id].(*types.Func)
			if !ok {
				return true
			}
			if name := funcName(fn); out[name] == (token.Position{}) {
				out[name] = fset.Position(id.Pos())
			}
			return true
		})
	}
	return out
}

// funcName names fn by its package's path, its receiver's type and its
// own name: "path.Func" or "path.Type.Method".
func funcName(fn *types.Func) string {
	fn = fn.Origin()
	if fn.Pkg() == nil {
		return fn.Name()
	}
	sig := fn.Type().(*types.Signature)
	if recv := sig.Recv(); recv != nil {
		typ := recv.Type()
		if ptr, ok := typ.(*types.Pointer); ok {
			typ = ptr.Elem()
		}
		if named, ok := typ.(*types.Named); ok {
			return fn.Pkg().Path() + "." + named.Obj().Name() + "." + fn.Name()
		}
		return fn.Pkg().Path() + ".(" + types.TypeString(typ, nil) + ")." + fn.Name()
	}
	return fn.Pkg().Path() + "." + fn.Name()
}

// shortName is a funcName with the receiver module's path left out.
func shortName(name string) string {
	return strings.TrimPrefix(name, receiver+"/internal/")
}
