//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// TestOldestProtocolVersionScrapesCleanly pins minProtocolVersion to what
// the receiver's requests need: at it a scrape reads everything, lag and
// time lag, without an error; at each older version Validate refuses, a
// scrape fails or (below 0.10.2) reports nothing at all without an error.
func TestOldestProtocolVersionScrapesCleanly(t *testing.T) {
	k := newTestKafka(t, 1)
	// LogAppendTime: the record's stamp dates it from the first scrape.
	k.CreateAppendTimeTopic("orders", 1)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	k.Produce("orders", 0, at, at.Add(time.Minute))
	k.Commit("billing", "orders", map[int32]int64{0: 1})
	want := pointKey{"billing", "orders", 0}

	cfg := k.testConfig()
	cfg.ProtocolVersion = minProtocolVersion
	md, err := startScraper(t, cfg).scrape(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(1), pointsOf(md, "kafka.consumer_group.lag")[want].intValue)
	require.Contains(t, pointsOf(md, "kafka.consumer_group.time_lag"), want)

	for _, old := range []string{"1.0.0", "0.11.0", "0.10.2", "0.10.1", "0.9.0", "0.8.2"} {
		cfg := k.testConfig()
		cfg.ProtocolVersion = old
		cfg.Timeout = 3 * time.Second
		require.ErrorContains(t, cfg.Validate(), "protocol_version: must be 1.1.0 or later")
		s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
		require.NoError(t, err)
		require.NoError(t, s.start(context.Background(), nil))
		md, err := s.scrape(context.Background())
		require.NoError(t, s.shutdown(context.Background()))
		_, hasTimeLag := pointsOf(md, "kafka.consumer_group.time_lag")[want]
		require.True(t, err != nil || !hasTimeLag, "%s: a scrape that reads everything would make %s too old a minimum", old, minProtocolVersion)
	}
}
