//go:build !unit

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSteadyScrapeErrors(t *testing.T) {
	log := filepath.Join(t.TempDir(), "collector.log")
	require.NoError(t, os.WriteFile(log, []byte(
		"2026-12-07T22:40:10.100Z\terror\tscraperhelper@v0.165.0/obs_metrics.go:61\tError scraping metrics\t{\"error\": \"warming up\"}\n"+
			"gc 12 @30.1s 2%: 0.1+2+0.1 ms clock, 150->160->90 MB, 180 MB goal, 2 P\n"+
			"2026-12-07T22:40:50.680Z\terror\tscraperhelper@v0.165.0/obs_metrics.go:61\tError scraping metrics\t{\"error\": \"fetch records scale-000/1595@7 from broker 1: no answer\"}\n"+
			"2026-12-07T22:41:06.163Z\tinfo\tservice@v0.165.0/service.go:1\tEverything is ready.\n"), 0o600))
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	err := steadyScrapeErrors(log, at("2026-12-07T22:40:30Z"), at("2026-12-07T22:41:30Z"))
	require.ErrorContains(t, err, "1 steady scrapes logged an error")
	require.ErrorContains(t, err, "no answer")
	require.NoError(t, steadyScrapeErrors(log, at("2026-12-07T22:40:51Z"), at("2026-12-07T22:41:30Z")), "an error before the steady scrapes")
	require.Error(t, steadyScrapeErrors(filepath.Join(t.TempDir(), "none.log"), time.Now(), time.Now()))
}
