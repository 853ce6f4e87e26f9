//go:build !unit

package otlpsink

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

func TestHandlerDecodesEveryEncoding(t *testing.T) {
	md := pmetric.NewMetrics()
	dp := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetIntValue(7)
	raw, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	require.NoError(t, err)

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw)
	require.NoError(t, zw.Close())
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	zs := enc.EncodeAll(raw, nil)
	require.NoError(t, enc.Close())

	for encoding, body := range map[string][]byte{"": raw, "gzip": gz.Bytes(), "zstd": zs} {
		var got pmetric.Metrics
		sent := 0
		h := Handler(func(m pmetric.Metrics, n int) { got, sent = m, n }, func(err error) { t.Error(err) })
		req := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(body))
		req.Header.Set("Content-Encoding", encoding)
		rec := httptest.NewRecorder()
		h(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, encoding)
		require.Equal(t, 1, got.DataPointCount(), encoding)
		require.Equal(t, len(body), sent, encoding)
	}
}

func TestHandlerRejectsWhatItCannotRead(t *testing.T) {
	var reported []error
	h := Handler(func(pmetric.Metrics, int) { t.Fatal("nothing to consume") }, func(err error) { reported = append(reported, err) })
	for _, tc := range []struct{ encoding, body string }{{"br", "x"}, {"gzip", "not gzip"}, {"", "\xff\xff"}} {
		req := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader([]byte(tc.body)))
		req.Header.Set("Content-Encoding", tc.encoding)
		rec := httptest.NewRecorder()
		h(rec, req)
		require.Equal(t, http.StatusBadRequest, rec.Code, tc.encoding)
	}
	require.Len(t, reported, 3)
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/v1/metrics", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
}

func TestEachGaugePointSkipsOtherTypes(t *testing.T) {
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	g := ms.AppendEmpty()
	g.SetName("g")
	g.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1)
	g.Gauge().DataPoints().AppendEmpty().SetIntValue(2)
	sum := ms.AppendEmpty()
	sum.SetName("s")
	sum.SetEmptySum().DataPoints().AppendEmpty().SetIntValue(3)
	var seen []int64
	EachGaugePoint(md, func(metric string, dp pmetric.NumberDataPoint) {
		require.Equal(t, "g", metric)
		seen = append(seen, dp.IntValue())
	})
	require.Equal(t, []int64{1, 2}, seen)
}
