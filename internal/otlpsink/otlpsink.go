// Package otlpsink decodes OTLP/HTTP metric exports for the endpoints that
// stand in for a backend in the end-to-end tests and the scale program.
package otlpsink

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// Handler serves POST /v1/metrics as an OTLP backend does: it undoes the
// exporter's compression (gzip, zstd or none), decodes the request and hands
// its metrics, with the size of the body as sent, to consume before
// answering (the exporter waits for the answer). A request it cannot read is
// answered 400 and passed to onError, when not nil.
func Handler(consume func(md pmetric.Metrics, sentBytes int), onError func(error)) http.HandlerFunc {
	fail := func(w http.ResponseWriter, err error) {
		if onError != nil {
			onError(err)
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/metrics" {
			http.Error(w, "only POST /v1/metrics is served", http.StatusNotFound)
			return
		}
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			fail(w, fmt.Errorf("read body: %w", err))
			return
		}
		body, err := decompress(r.Header.Get("Content-Encoding"), raw)
		if err != nil {
			fail(w, err)
			return
		}
		req := pmetricotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			fail(w, fmt.Errorf("decode ExportMetricsServiceRequest: %w", err))
			return
		}
		consume(req.Metrics(), len(raw))
		resp, err := pmetricotlp.NewExportResponse().MarshalProto()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}
}

// EachGaugePoint calls fn with every data point of every gauge of md, and
// the name of its metric.
func EachGaugePoint(md pmetric.Metrics, fn func(metric string, dp pmetric.NumberDataPoint)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				if m.Type() != pmetric.MetricTypeGauge {
					continue
				}
				dps := m.Gauge().DataPoints()
				for d := range dps.Len() {
					fn(m.Name(), dps.At(d))
				}
			}
		}
	}
}

func decompress(encoding string, raw []byte) ([]byte, error) {
	switch encoding {
	case "", "identity":
		return raw, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		body, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		return body, nil
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("zstd body: %w", err)
		}
		defer zr.Close()
		body, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("zstd body: %w", err)
		}
		return body, nil
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q (gzip, zstd and none are)", encoding)
	}
}
