package layering

import (
	"fmt"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The receiver's packages that may import a Kafka client, and the one
// that may import franz-go's client.
const (
	kafkaLayer  = receiver + "/internal/kafka"
	shareGroups = receiver + "/internal/kafka/sharegroups"
	// kafkaTest is the test support (kfake, request counting, the scale
	// workload), which drives kfake with franz-go.
	kafkaTest = receiver + "/kafkatest"
)

// TestOnlyTheKafkaLayerImportsAKafkaClient: of the receiver's production
// code, only packages under internal/kafka import sarama or franz-go, and
// of those only sharegroups imports franz-go (kgo for the share-group
// APIs sarama lacks). Test support under kafkatest drives kfake.
func TestOnlyTheKafkaLayerImportsAKafkaClient(t *testing.T) {
	m := modules(t)[1]
	for _, p := range list(t, m, "./...") {
		if under(p.ImportPath, kafkaTest) {
			continue
		}
		for _, imp := range p.Imports {
			switch {
			case !isKafkaClient(imp):
			case !under(p.ImportPath, kafkaLayer):
				t.Errorf("%s imports %s: only packages under internal/kafka speak Kafka", p.ImportPath, imp)
			case under(imp, "github.com/twmb/franz-go") && p.ImportPath != shareGroups:
				t.Errorf("%s imports %s: franz-go is sharegroups' alone (the receiver's requests go through sarama)", p.ImportPath, imp)
			}
		}
	}
}

// TestShareGroupsBuildsWithoutSarama: the share-group client, and its
// tests, build from the client-neutral settings without sarama or any
// package built on it.
func TestShareGroupsBuildsWithoutSarama(t *testing.T) {
	m := modules(t)[1]
	forbidden := []string{
		"github.com/IBM/sarama",
		kafkaLayer + "/saramacluster",
		kafkaLayer + "/saramaconn",
		kafkaLayer + "/saramaoffsets",
		kafkaLayer + "/saramatimes",
		kafkaLayer + "/saramaretention",
		kafkaLayer + "/saramaconfig",
		kafkaLayer + "/saslauth",
	}
	pkgs := list(t, m, "-deps", "-test", "./internal/kafka/sharegroups")
	checked := 0
	for _, p := range pkgs {
		if p.ImportPath != shareGroups && p.ForTest != shareGroups {
			continue
		}
		checked++
		for _, f := range forbidden {
			if slices.ContainsFunc(append(p.Deps, p.Imports...), func(dep string) bool { return under(dep, f) }) {
				t.Errorf("%s depends on %s", p.ImportPath, f)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("found %d sharegroups packages (the package and its tests) in go list's output", checked)
	}
}

// The sarama reads by job: each job package holds one job's reads on the
// connection core, and saramacluster composes them into a kafka.Cluster.
var (
	saramaCore = kafkaLayer + "/saramaconn"
	saramaJobs = []string{kafkaLayer + "/saramaoffsets", kafkaLayer + "/saramatimes", kafkaLayer + "/saramaretention"}
)

// TestSaramaJobsStandApart: no job package's production code depends on
// another job's package or on the facade, and the connection core on
// none of them, so that each package does one job (the connection; the
// offsets and groups; the time index and records; the retention configs
// and sizes), and a read's deadline comes from the core alone.
func TestSaramaJobsStandApart(t *testing.T) {
	m := modules(t)[1]
	facade := kafkaLayer + "/saramacluster"
	pkgs := list(t, m, append([]string{"-deps"}, append([]string{saramaCore, facade}, saramaJobs...)...)...)
	seen := map[string]pkg{}
	for _, p := range pkgs {
		seen[p.ImportPath] = p
	}
	for _, job := range saramaJobs {
		p, ok := seen[job]
		if !ok {
			t.Fatalf("%s not in go list's output", job)
		}
		if !slices.Contains(p.Deps, saramaCore) {
			t.Errorf("%s does not read through %s", job, saramaCore)
		}
		for _, other := range append(slices.Clone(saramaJobs), facade) {
			if other != job && slices.Contains(p.Deps, other) {
				t.Errorf("%s depends on %s: a job's reads stand on the core alone", job, other)
			}
		}
	}
	for _, dep := range append(slices.Clone(saramaJobs), facade) {
		if slices.Contains(seen[saramaCore].Deps, dep) {
			t.Errorf("%s depends on %s: the core knows no job", saramaCore, dep)
		}
	}
	for _, job := range saramaJobs {
		if !slices.Contains(seen[facade].Imports, job) {
			t.Errorf("%s does not compose %s", facade, job)
		}
	}
}

// kfake is the in-process Kafka the integration tests run against.
const kfake = "github.com/twmb/franz-go/pkg/kfake"

// TestUnitLayerNeedsNoKafkaAndNoWallClockWait: `make test-unit` runs each
// module's tests built with the tag unit, which leaves out the files
// marked `//go:build !unit` (those that need kfake or real time). What is
// left links no kfake, calls no time.Sleep, and its tests wait on no timer
// of the wall clock (time.After, time.Tick and their kin), so that it
// stays fast and its outcome never depends on the machine's speed.
func TestUnitLayerNeedsNoKafkaAndNoWallClockWait(t *testing.T) {
	testWaits := []string{"Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc"}
	for _, m := range modules(t) {
		testBinaries := 0
		for _, p := range list(t, m, "-tags", "unit", "-test", "./...") {
			if !inModule(p.ImportPath, m) {
				continue
			}
			if strings.HasSuffix(p.ImportPath, ".test") {
				testBinaries++
				if slices.Contains(p.Deps, kfake) {
					t.Errorf("%s links %s: mark the tests that need it `//go:build !unit`", p.ImportPath, kfake)
				}
				continue
			}
			if p.ForTest != "" {
				continue // a test variant: its files are the package's
			}
			for _, f := range p.GoFiles {
				for _, at := range wallClockWaits(t, filepath.Join(p.Dir, f), []string{"Sleep"}) {
					t.Errorf("%s in the unit layer: wait on a condition, move a clock, or mark the file `//go:build !unit`", at)
				}
			}
			for _, f := range append(slices.Clip(p.TestGoFiles), p.XTestGoFiles...) {
				for _, at := range wallClockWaits(t, filepath.Join(p.Dir, f), testWaits) {
					t.Errorf("%s in a unit-layer test: wait on a condition, move a clock, or mark the file `//go:build !unit`", at)
				}
			}
		}
		if testBinaries == 0 {
			t.Errorf("%s: no test binary in the unit layer", m.Path)
		}
	}
}

// TestEmitOnlyWrites: the writer imports neither the retention package nor
// the health tracker: margins and owners are computed before they reach
// it, which writes values.
func TestEmitOnlyWrites(t *testing.T) {
	m := modules(t)[1]
	emit := receiver + "/internal/emit"
	pkgs := list(t, m, "./internal/emit")
	if len(pkgs) != 1 || pkgs[0].ImportPath != emit {
		t.Fatalf("go list ./internal/emit: %v", pkgs)
	}
	for _, imp := range pkgs[0].Imports {
		if imp == receiver+"/internal/retention" || imp == receiver+"/internal/health" {
			t.Errorf("%s imports %s: the writer only writes what the computation found", emit, imp)
		}
	}
}

// TestReadInputHoldsValues: what a scrape's read hands to the computation
// (read.Input) reaches, through every field, pointer, slice and map, no
// state the reader keeps from scrape to scrape (the tables, the record
// cache, the retention cache, or a handle into them) and nothing that
// could reach it unseen (a func, a channel, an interface, a lock): what
// the computation finds depends on the read alone. It walks the types as
// the compiler sees them, not their names in the source.
func TestReadInputHoldsValues(t *testing.T) {
	m := modules(t)[1]
	tc := newTypeChecker(t, m, "./internal/read")
	input := tc.load(t, receiver+"/internal/read").Scope().Lookup("Input")
	if input == nil {
		t.Fatal("no type Input in internal/read")
	}
	for _, problem := range liveState(input.Type()) {
		t.Error(problem)
	}
}

// readerState are the types that hold, or name, what the reader keeps
// from scrape to scrape, by package and name.
var readerState = map[string][]string{
	receiver + "/internal/timetable":   {"Store", "Ref", "View", "Table"},
	receiver + "/internal/lag":         {"Tabled"},
	receiver + "/internal/recordcache": {"Cache", "Partition"},
	receiver + "/internal/retention":   {"Cache", "Tracker"},
}

// liveState lists where typ reaches reader state, or what could reach it.
func liveState(typ types.Type) []string {
	var problems []string
	seen := map[types.Type]bool{}
	var walk func(typ types.Type, path string)
	walk = func(typ types.Type, path string) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		if named, ok := typ.(*types.Named); ok {
			obj := named.Obj()
			if obj.Pkg() == nil { // error
				return
			}
			pkgPath := obj.Pkg().Path()
			switch {
			case slices.Contains(readerState[pkgPath], obj.Name()):
				problems = append(problems, fmt.Sprintf("%s is a %s.%s: the reader's state, not a value of the scrape", path, obj.Pkg().Name(), obj.Name()))
				return
			case pkgPath == "sync" || pkgPath == "sync/atomic":
				problems = append(problems, fmt.Sprintf("%s is a %s.%s: state shared under a lock, not a value", path, obj.Pkg().Name(), obj.Name()))
				return
			case pkgPath == "time":
				return // instants and durations
			}
		}
		switch u := typ.Underlying().(type) {
		case *types.Struct:
			for i := range u.NumFields() {
				walk(u.Field(i).Type(), path+"."+u.Field(i).Name())
			}
		case *types.Pointer:
			walk(u.Elem(), path)
		case *types.Slice:
			walk(u.Elem(), path+"[]")
		case *types.Array:
			walk(u.Elem(), path+"[]")
		case *types.Map:
			walk(u.Key(), path+"[key]")
			walk(u.Elem(), path+"[]")
		case *types.Signature:
			problems = append(problems, fmt.Sprintf("%s is a func: it can reach anything", path))
		case *types.Chan:
			problems = append(problems, fmt.Sprintf("%s is a channel: shared, not a value", path))
		case *types.Interface:
			problems = append(problems, fmt.Sprintf("%s is an interface (%s): it can hold anything", path, types.TypeString(typ, nil)))
		case *types.Basic:
			if u.Kind() == types.UnsafePointer {
				problems = append(problems, fmt.Sprintf("%s is an unsafe.Pointer", path))
			}
		}
	}
	walk(typ, "read.Input")
	return problems
}

// TestSimulationRunsTheShippedPipeline: the accuracy simulation's receiver
// row (internal/accuracy) samples through sampler.Sampler.Sample and
// reads and dates through read.Reader.Read, and calls none of the steps
// those run itself: the steps are every function of the receiver's
// internal packages (its Kafka layer aside, whose requests the simulation
// answers) that the read, dating and sampler packages call, found by
// type-checking them, so that a step added to the scrape is covered
// without being listed here. What the simulation measures is then what
// ships.
func TestSimulationRunsTheShippedPipeline(t *testing.T) {
	m := modules(t)[1]
	pipeline := []string{"read", "dating", "sampler"}
	tc := newTypeChecker(t, m, "./internal/read", "./internal/dating", "./internal/sampler", "./internal/accuracy")
	steps := map[string]token.Position{}
	for _, p := range pipeline {
		files, info := tc.check(t, receiver+"/internal/"+p)
		for name, at := range calledFuncs(tc.fset, files, info) {
			if strings.HasPrefix(name, receiver+"/internal/") && !strings.HasPrefix(name, receiver+"/internal/kafka.") && !strings.HasPrefix(name, receiver+"/internal/kafka/") {
				steps[shortName(name)] = at
			}
		}
	}
	// What the scrape runs, as a check that the steps were found at all.
	for _, step := range []string{"dating.Date", "sampler.Read", "lag.NewIndex", "lag.OutOfTable", "lag.Estimate", "lag.AppendTimes",
		"recordcache.Cache.PutAll", "recordcache.Cache.Retain", "recordcache.Cache.Forget", "lag.Index.ResolveTables", "timetable.Store.Track", "timetable.Store.Record"} {
		if _, ok := steps[step]; !ok {
			t.Errorf("the scrape's steps found by type-checking %v lack %s: the check finds nothing it should", pipeline, step)
		}
	}
	// The pipeline's own entries, which the simulation must call.
	entries := []string{"read.Reader.Read", "sampler.Sampler.Sample"}
	files, info := tc.check(t, receiver+"/internal/accuracy")
	called := calledFuncs(tc.fset, files, info)
	for name, at := range called {
		name = shortName(name)
		if _, isStep := steps[name]; isStep && !slices.Contains(entries, name) {
			t.Errorf("%s: the simulation runs a step of the scrape itself: %s (called from %s in the pipeline)", at, name, steps[name])
		}
	}
	for _, entry := range entries {
		if _, ok := called[receiver+"/internal/"+entry]; !ok {
			t.Errorf("the simulation never calls %s: its receiver row does not run the shipped pipeline", entry)
		}
	}
}
