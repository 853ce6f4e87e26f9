package pipelinecheck_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/pipelinecheck"
)

func decode(t *testing.T, config string) map[string]any {
	t.Helper()
	var conf map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(config), &conf))
	return conf
}

const exporters = `
exporters:
  otlp_http:
    endpoint: http://gateway:4318
    sending_queue:
      wait_for_result: true
  otlp_http/async:
    endpoint: http://gateway:4318
  prometheus:
    endpoint: 0.0.0.0:8889
`

func TestBatchBeforeWaitForResultIsRefused(t *testing.T) {
	err := pipelinecheck.Check(decode(t, exporters+`
service:
  pipelines:
    metrics:
      receivers: [kafka_time_lag]
      processors: [memory_limiter, batch/big]
      exporters: [otlp_http]
`))
	require.ErrorContains(t, err, "pipeline metrics: processor batch/big stands between")
}

func TestSynchronousProcessorsAndOtherPipelinesPass(t *testing.T) {
	require.NoError(t, pipelinecheck.Check(decode(t, exporters+`
service:
  pipelines:
    metrics:
      receivers: [kafka_time_lag/prod]
      processors: [memory_limiter, resource/cluster]
      exporters: [otlp_http]
    metrics/async:
      receivers: [kafka_time_lag]
      processors: [batch]
      exporters: [otlp_http/async, prometheus]
    metrics/other:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlp_http]
`)))
}
