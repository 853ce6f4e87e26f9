package kafka

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The receiver speaks Kafka with sarama, except for the share-group
// requests sarama does not know, which one package sends with franz-go; no
// other package imports a Kafka client. Test helpers (kafkatest) drive
// kfake with franz-go.
func TestKafkaClientImporters(t *testing.T) {
	importers := map[string]map[string]bool{"sarama": {}, "franz-go": {}}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, imp := range f.Imports {
			switch p := strings.Trim(imp.Path.Value, `"`); {
			case strings.HasPrefix(p, "github.com/IBM/sarama"):
				importers["sarama"][filepath.ToSlash(dir)] = true
			case strings.HasPrefix(p, "github.com/twmb/franz-go"):
				importers["franz-go"][filepath.ToSlash(dir)] = true
			}
		}
		return nil
	})
	require.NoError(t, err)
	sarama := sorted(importers["sarama"])
	require.NotEmpty(t, sarama)
	for _, dir := range sarama {
		require.True(t, strings.HasPrefix(dir, "internal/kafka/") && dir != "internal/kafka/sharegroups", "%s imports sarama", dir)
	}
	var franz []string
	for _, dir := range sorted(importers["franz-go"]) {
		if !strings.HasPrefix(dir, "kafkatest/") {
			franz = append(franz, dir)
		}
	}
	require.Equal(t, []string{"internal/kafka/sharegroups"}, franz)
	t.Logf("sarama importers: %v; franz-go importers: %v", sarama, sorted(importers["franz-go"]))
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
