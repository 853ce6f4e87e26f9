//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/collectorcheck"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/docblocks"
)

// A YAML block of the user docs says what it is in its fence:
//
//	```yaml config=full        a whole collector configuration
//	```yaml config=fragment    part of one (receivers, exporters, service...):
//	                           merged over a minimal configuration
//	```yaml config=receiver    keys of receivers.kafka_time_lag
//	```yaml not-config=<what>  something else (prometheus, ocb, helm-values,
//	                           kubernetes, rules): checked elsewhere or not a
//	                           collector's
//
// TestDocumentedConfigsValidate validates every collector block with the
// built collector, wrapped as its fence says, and fails on a YAML block
// that says nothing.
var docFiles = []string{"README.md", "docs/*.md", "kafkatimelagreceiver/README.md"}

// docBase is what a fragment or receiver block is merged over: one
// receiver, one exporter, one pipeline.
const docBase = `
receivers:
  kafka_time_lag:
    brokers: [kafka-1:9092]
exporters:
  debug: {}
service:
  pipelines:
    metrics:
      receivers: [kafka_time_lag]
      exporters: [debug]
`

func TestDocumentedConfigsValidate(t *testing.T) {
	bin := os.Getenv("OTELCOL_BIN")
	if bin == "" {
		t.Fatal("OTELCOL_BIN is not set; run `make e2e`, which builds the collector and sets it")
	}
	var patterns []string
	for _, f := range docFiles {
		patterns = append(patterns, filepath.Join(repoRoot, f))
	}
	all, err := docblocks.Read(patterns...)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docblocks.Block
	for _, b := range all {
		if b.Lang == "yaml" {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) < 10 {
		t.Fatalf("found %d YAML blocks in %v: the docs moved?", len(blocks), docFiles)
	}
	validated := 0
	for _, b := range blocks {
		rel, _ := filepath.Rel(repoRoot, b.File)
		name := fmt.Sprintf("%s:%d", rel, b.Line)
		kind, isConfig := b.Attrs["config"]
		if _, other := b.Attrs["not-config"]; other {
			continue
		}
		if !isConfig {
			t.Errorf("%s: a yaml block without config=full|fragment|receiver or not-config=<what> in its fence", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			config, err := docConfig(kind, b.Body)
			if err != nil {
				t.Fatalf("%s (config=%s): %v\n%s", name, kind, err, b.Body)
			}
			dir := t.TempDir()
			if config, err = withFiles(config, dir); err != nil {
				t.Fatal(err)
			}
			out, err := yaml.Marshal(config)
			if err != nil {
				t.Fatal(err)
			}
			if err := collectorcheck.Validate(bin, dir, string(out), docEnv(string(out))); err != nil {
				t.Errorf("%s (config=%s) does not validate: %v\nas validated:\n%s", name, kind, err, out)
			}
		})
		validated++
	}
	t.Logf("%d collector blocks validated of %d YAML blocks", validated, len(blocks))
}

func docConfig(kind, body string) (map[string]any, error) {
	var block map[string]any
	if err := yaml.Unmarshal([]byte(body), &block); err != nil {
		return nil, err
	}
	if kind == "full" {
		return block, nil
	}
	var base map[string]any
	if err := yaml.Unmarshal([]byte(docBase), &base); err != nil {
		return nil, err
	}
	switch kind {
	case "fragment":
		return merge(base, block), nil
	case "receiver":
		return merge(base, map[string]any{"receivers": map[string]any{"kafka_time_lag": block}}), nil
	}
	return nil, fmt.Errorf("config=%s: want full, fragment or receiver", kind)
}

// merge returns over merged onto base: maps key by key, anything else
// replaced.
func merge(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range over {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				out[k] = merge(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// withFiles points every file a block names (TLS, Kerberos) at a real one:
// a certificate and key that validate can load, and readable stand-ins for
// a keytab and krb5.conf.
func withFiles(config map[string]any, dir string) (map[string]any, error) {
	cert, key, err := collectorcheck.Certificate()
	if err != nil {
		return nil, err
	}
	contents := map[string][]byte{
		"ca_file": cert, "cert_file": cert, "key_file": key,
		"keytab_file": []byte("keytab"), "config_file": []byte("[libdefaults]\n default_realm = EXAMPLE.COM\n"),
	}
	var walkErr error
	var walk func(m map[string]any)
	walk = func(m map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			switch v := m[k].(type) {
			case map[string]any:
				walk(v)
			case string:
				if content, ok := contents[k]; ok && !strings.HasPrefix(v, "${") {
					path := filepath.Join(dir, k+filepath.Ext(v))
					if err := os.WriteFile(path, content, 0o600); err != nil {
						walkErr = err
					}
					m[k] = path
				}
			}
		}
	}
	walk(config)
	return config, walkErr
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)`)

// docEnv sets every variable a block reads to a plausible value.
func docEnv(config string) []string {
	var env []string
	for _, m := range envRef.FindAllStringSubmatch(config, -1) {
		value := "placeholder"
		switch name := m[1]; {
		case strings.Contains(name, "BROKERS"):
			value = "kafka-1:9092,kafka-2:9092"
		case strings.Contains(name, "ENDPOINT"):
			value = "http://otel-gateway:4318"
		case name == "MY_POD_IP":
			value = "127.0.0.1"
		}
		env = append(env, m[1]+"="+value)
	}
	return env
}
