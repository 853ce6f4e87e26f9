// Package k8sdecode decodes Kubernetes manifests strictly into their API
// types (k8s.io/api and the Prometheus Operator's), so that the tests of
// the shipped manifests and of the Helm chart's rendered output fail on an
// unknown, misspelt or duplicate field.
package k8sdecode

import (
	"bytes"
	"fmt"
	"regexp"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// Decoder decodes YAML documents of the core, apps, policy and
// monitoring.coreos.com/v1 kinds and refuses unknown or duplicate fields.
type Decoder struct {
	decoder runtime.Decoder
}

// NewDecoder returns a strict decoder of the kinds the repository ships.
func NewDecoder() (*Decoder, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("register API types: %w", err)
		}
	}
	return &Decoder{decoder: json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})}, nil
}

// Decode decodes one document.
func (d *Decoder) Decode(doc []byte) (runtime.Object, error) {
	obj, _, err := d.decoder.Decode(doc, nil, nil)
	return obj, err
}

var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Documents splits a multi-document YAML stream, leaving out empty
// documents (and those holding only comments, as helm template writes
// before each source).
func Documents(data []byte) [][]byte {
	var docs [][]byte
	for _, doc := range separator.Split(string(data), -1) {
		if hasContent([]byte(doc)) {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}

func hasContent(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return true
		}
	}
	return false
}
