// Package collectorcheck validates a collector configuration the way the
// shipped ones are checked: the built collector's `validate` command (every
// component's own validation, with the environment the config reads), and
// pipelinecheck's rule that nothing holding data back stands between the
// receiver and an exporter with wait_for_result.
package collectorcheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/pipelinecheck"
)

// Validate writes config into dir and runs `bin validate` on it with env
// (NAME=value entries, added to PATH and HOME). Every ${env:NAME} the config
// reads must be in env.
func Validate(bin, dir, config string, env []string) error {
	set := map[string]bool{}
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		set[name] = true
	}
	for rest := config; ; {
		_, after, ok := strings.Cut(rest, "${env:")
		if !ok {
			break
		}
		name, tail, _ := strings.Cut(after, "}")
		name, _, _ = strings.Cut(name, ":-")
		if !set[name] {
			return fmt.Errorf("the config reads ${env:%s}, which its environment does not set", name)
		}
		rest = tail
	}
	var conf map[string]any
	if err := yaml.Unmarshal([]byte(config), &conf); err != nil {
		return fmt.Errorf("decode the config: %w", err)
	}
	if err := pipelinecheck.Check(conf); err != nil {
		return err
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(bin, "validate", "--config="+path)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s validate: %w\n%s", filepath.Base(bin), err, out)
	}
	return nil
}
