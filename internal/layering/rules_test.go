package layering

import (
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

// kfake is the in-process Kafka the integration tests run against.
const kfake = "github.com/twmb/franz-go/pkg/kfake"

// TestUnitLayerNeedsNoKafkaAndNoSleep: `make test-unit` runs each
// module's tests built with the tag unit, which leaves out the files
// marked `//go:build !unit` (those that need kfake or real time). What is
// left links no kfake and calls no time.Sleep, so that it stays fast and
// its outcome never depends on the machine's speed.
func TestUnitLayerNeedsNoKafkaAndNoSleep(t *testing.T) {
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
			for _, files := range [][]string{p.GoFiles, p.TestGoFiles, p.XTestGoFiles} {
				for _, f := range files {
					for _, at := range timeSleeps(t, filepath.Join(p.Dir, f)) {
						t.Errorf("%s: time.Sleep in the unit layer: wait on a condition, move a clock, or mark the file `//go:build !unit`", at)
					}
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
// (read.Input) holds no pointer to the state the reader keeps from scrape
// to scrape (the tables, the records read, the retention cache), so that
// what the computation finds depends on the read alone.
func TestReadInputHoldsValues(t *testing.T) {
	m := modules(t)[1]
	dir := filepath.Join(m.Dir, "internal", "read")
	fields := structFieldTypes(t, dir, "Input")
	if len(fields) == 0 {
		t.Fatal("no struct Input in internal/read")
	}
	for name, typ := range fields {
		for _, mutable := range []string{"timetable.Store", "lag.RecordTimes", "retention.Cache", "lag.Tables"} {
			if strings.Contains(typ, mutable) {
				t.Errorf("read.Input.%s is a %s: the reader's state, not a value of the scrape", name, typ)
			}
		}
	}
}
