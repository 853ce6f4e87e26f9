//go:build helm

package helm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/k8sdecode"
)

// TestValuesSchemaRefusesTypos: a misspelt key, a value of the wrong type
// or a missing broker list fails both helm lint and helm template, and the
// message names the key, instead of rendering a release that ignores it.
func TestValuesSchemaRefusesTypos(t *testing.T) {
	helm := tool(t, "HELM_BIN")
	dir := t.TempDir()
	valuesFile := func(name, body string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		return path
	}
	for _, c := range []struct {
		name string
		args []string
		// what the error must name
		want string
	}{
		{"cluster alias in lower case", []string{"--set", "kafka.clusteralias=prod"}, "clusteralias"},
		{"pod monitor in lower case", []string{"--set", "podmonitor.enabled=true"}, "podmonitor"},
		{"misspelt key in a values file", []string{"-f", valuesFile("tls.yaml", "kafka:\n  brokers: [k:9093]\n  clusterAlias: prod\n  tls:\n    enable: true\n")}, "enable"},
		{"nested key misspelt", []string{"--set", "export.otlp.endpiont=http://gw:4318"}, "endpiont"},
		{"string for a number", []string{"--set", "replicaCount=three"}, "replicaCount"},
		{"unknown export mode", []string{"--set", "export.mode=push"}, "mode"},
		{"unknown migration tool", []string{"--set", "prometheusRule.migration={kafka-exporter}"}, "migration"},
		{"no brokers", []string{"-f", valuesFile("no-brokers.yaml", "kafka:\n  brokers: []\n")}, "brokers"},
		{"broker without a port", []string{"--set", "kafka.brokers={kafka}"}, "brokers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, cmd := range [][]string{
				append([]string{"lint", "--strict", chart}, c.args...),
				append([]string{"template", "lag", chart, "--kube-version", kubeVersion}, c.args...),
			} {
				out, err := exec.Command(helm, cmd...).CombinedOutput()
				require.Error(t, err, "helm %s accepted it:\n%s", strings.Join(cmd, " "), out)
				require.Contains(t, string(out), "values don't meet the specifications of the schema", "helm %s", strings.Join(cmd, " "))
				require.Contains(t, string(out), c.want, "helm %s names the key", strings.Join(cmd, " "))
			}
		})
	}
}

// TestEveryValueIsTyped: each key of values.yaml, at every level, has a
// property in values.schema.json with a type or an enum, and every object
// the schema describes key by key refuses other keys.
func TestEveryValueIsTyped(t *testing.T) {
	var values map[string]any
	data, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &values))
	var schema map[string]any
	data, err = os.ReadFile(filepath.Join(chart, "values.schema.json"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &schema))

	var walk func(path string, values map[string]any, schema map[string]any)
	walk = func(path string, values map[string]any, schema map[string]any) {
		require.Equal(t, false, schema["additionalProperties"], "%s refuses unknown keys", path)
		properties, _ := schema["properties"].(map[string]any)
		for key, value := range values {
			property, ok := properties[key].(map[string]any)
			require.True(t, ok, "%s%s has no property in values.schema.json", path, key)
			_, typed := property["type"]
			_, enum := property["enum"]
			require.True(t, typed || enum, "%s%s has no type", path, key)
			if nested, ok := value.(map[string]any); ok {
				if _, described := property["properties"]; described {
					walk(path+key+".", nested, property)
				}
			}
		}
	}
	walk("", values, schema)
}

// TestClusterAliasDefaultsToTheReleaseName: every alert and the dashboard
// group by kafka_cluster_alias, so without kafka.clusterAlias the series
// carry the release's name, and the install notes say so.
func TestClusterAliasDefaultsToTheReleaseName(t *testing.T) {
	helm := tool(t, "HELM_BIN")
	decoder, err := k8sdecode.NewDecoder()
	require.NoError(t, err)
	for _, c := range []struct {
		args  []string
		alias string
		note  string
	}{
		{nil, "lag", `kafka.clusterAlias is not set: every series carries kafka_cluster_alias="lag"`},
		{[]string{"--set", "kafka.clusterAlias=prod"}, "prod", `Every series carries kafka_cluster_alias="prod"`},
	} {
		rendered := run(t, helm, append([]string{"template", "lag", chart, "--kube-version", kubeVersion}, c.args...)...)
		var objects []runtime.Object
		for _, doc := range k8sdecode.Documents(rendered) {
			obj, err := decoder.Decode(doc)
			require.NoError(t, err)
			objects = append(objects, obj)
		}
		var config struct {
			Receivers struct {
				KafkaTimeLag struct {
					ClusterAlias string `json:"cluster_alias"`
				} `json:"kafka_time_lag"`
			} `json:"receivers"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(collectorConfigMap(t, objects).Data["config.yaml"]), &config))
		require.Equal(t, c.alias, config.Receivers.KafkaTimeLag.ClusterAlias)

		require.Contains(t, strings.Join(strings.Fields(renderNotes(t, helm, c.args...)), " "), c.note, "the install notes")
	}
}

// renderNotes renders NOTES.txt, which helm template leaves out and helm
// install prints only after reaching a cluster: a copy of the chart holds
// it as a named template, which a ConfigMap of the copy renders.
func renderNotes(t *testing.T, helm string, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), chart)
	require.NoError(t, os.CopyFS(dir, os.DirFS(chart)))
	notes, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "templates", "NOTES.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "templates", "_notes.tpl"),
		[]byte(`{{- define "test.notes" -}}`+"\n"+string(notes)+"\n"+`{{- end -}}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "templates", "notes.yaml"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: {{ include \"test.notes\" . | toJson }}\n"), 0o600))
	out := run(t, helm, append([]string{"template", "lag", dir, "--show-only", "templates/notes.yaml"}, args...)...)
	var cm struct {
		Data map[string]string `json:"data"`
	}
	require.NoError(t, yaml.Unmarshal(out, &cm), "%s", out)
	return cm.Data["notes"]
}

// TestMigrationRules renders the migration recording rules for each tool
// alone and for all of them: the PrometheusRule holds exactly the shipped
// groups asked for, and they pass the shipped promtool tests of their
// records.
func TestMigrationRules(t *testing.T) {
	helm := tool(t, "HELM_BIN")
	decoder, err := k8sdecode.NewDecoder()
	require.NoError(t, err)
	for _, tools := range [][]string{
		{"kafka_exporter"}, {"kafka_lag_exporter"}, {"kminion"}, {"burrow"},
		{"kafka_exporter", "kafka_lag_exporter", "kminion", "burrow"},
	} {
		t.Run(strings.Join(tools, ","), func(t *testing.T) {
			rendered := run(t, helm, "template", "lag", chart, "--kube-version", kubeVersion,
				"--set", "prometheusRule.migration={"+strings.Join(tools, ",")+"}")
			var objects []runtime.Object
			for _, doc := range k8sdecode.Documents(rendered) {
				obj, err := decoder.Decode(doc)
				require.NoError(t, err, "%s", doc)
				objects = append(objects, obj)
			}
			alerting, migration := prometheusRules(t, objects)
			require.Nil(t, alerting, "the alerting rules stay off unless prometheusRule.enabled")
			checkMigrationRules(t, migration, tools)
		})
	}
}

// prometheusRules returns the PrometheusRule of the alerting rules and
// that of the migration rules (name suffix -migration), each nil when not
// rendered.
func prometheusRules(t *testing.T, objects []runtime.Object) (alerting, migration *monitoringv1.PrometheusRule) {
	t.Helper()
	for _, obj := range objects {
		rule, ok := obj.(*monitoringv1.PrometheusRule)
		if !ok {
			continue
		}
		p := &alerting
		if strings.HasSuffix(rule.Name, "-migration") {
			p = &migration
		}
		if *p != nil {
			t.Fatalf("two PrometheusRules of the same rules: %s and %s", (*p).Name, rule.Name)
		}
		*p = rule
	}
	return alerting, migration
}

// migrationTools is prometheusRule.migration of a values file ("": the
// defaults).
func migrationTools(t *testing.T, values string) []string {
	t.Helper()
	if values == "" {
		return nil
	}
	data, err := os.ReadFile(values)
	require.NoError(t, err)
	var v struct {
		PrometheusRule struct {
			Migration []string `json:"migration"`
		} `json:"prometheusRule"`
	}
	require.NoError(t, yaml.Unmarshal(data, &v))
	return v.PrometheusRule.Migration
}

// checkMigrationRules: the rendered groups are the shipped file's groups of
// the tools asked for, in that order, and pass the promtool tests of their
// records (every record has one).
func checkMigrationRules(t *testing.T, rule *monitoringv1.PrometheusRule, tools []string) {
	t.Helper()
	if len(tools) == 0 {
		require.Nil(t, rule, "migration rules rendered without prometheusRule.migration")
		return
	}
	require.NotNil(t, rule, "no PrometheusRule of the migration rules for %v", tools)

	var shipped monitoringv1.PrometheusRuleSpec
	data, err := os.ReadFile(migrationRules)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, &shipped))
	var want []monitoringv1.RuleGroup
	records := map[string]bool{}
	for _, tool := range tools {
		name := "kafka-timelag-as-" + strings.ReplaceAll(tool, "_", "-")
		found := false
		for _, g := range shipped.Groups {
			if g.Name == name {
				want = append(want, g)
				for _, r := range g.Rules {
					records[r.Record] = true
				}
				found = true
			}
		}
		require.True(t, found, "%s has no group %s", migrationRules, name)
	}
	require.Equal(t, unfolded(want), unfolded(rule.Spec.Groups), "the PrometheusRule holds the shipped groups of %v", tools)

	// The shipped tests of the rendered records, against the rendered file.
	var tests map[string]any
	data, err = os.ReadFile(migrationTest)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &tests))
	require.Equal(t, []any{"migration-rules.yml"}, tests["rule_files"])
	tested := map[string]bool{}
	for _, tc := range tests["tests"].([]any) {
		tc := tc.(map[string]any)
		var kept []any
		for _, e := range tc["promql_expr_test"].([]any) {
			expr := e.(map[string]any)["expr"].(string)
			if records[expr] {
				kept = append(kept, e)
				tested[expr] = true
			}
		}
		tc["promql_expr_test"] = kept
	}
	require.Equal(t, records, tested, "every rendered record has a promtool test in %s", migrationTest)

	out, err := yaml.Marshal(tests)
	require.NoError(t, err)
	promtoolTest(t, rule, "migration-rules.yml", out)
}

// unfolded is a copy of groups with every expression and annotation on one
// line: YAML folding differs between the shipped file and the render.
func unfolded(groups []monitoringv1.RuleGroup) []monitoringv1.RuleGroup {
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	out := make([]monitoringv1.RuleGroup, len(groups))
	for gi := range groups {
		g := groups[gi].DeepCopy()
		for ri := range g.Rules {
			r := &g.Rules[ri]
			r.Expr = intstr.FromString(fold(r.Expr.String()))
			for k, a := range r.Annotations {
				r.Annotations[k] = fold(a)
			}
		}
		out[gi] = *g
	}
	return out
}
