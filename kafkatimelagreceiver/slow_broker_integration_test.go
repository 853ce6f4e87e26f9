package kafkatimelagreceiver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/scraper/scrapererror"
)

// TestSilentBrokerDoesNotStallScrapeOrSampler: a broker that accepts
// ListOffsets and never answers costs a scrape one request deadline (from
// `timeout`), not the pipeline: the scrape returns a partial error with the
// committed offsets it did read, the sampler's cycle returns too, and both
// recover when the broker answers again. Nothing here measures speed: the
// test only needs the calls to return at all.
func TestSilentBrokerDoesNotStallScrapeOrSampler(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("quiet", 1)
	k.Produce("quiet", 0, time.Now(), time.Now())
	k.Commit("waiting", "quiet", map[int32]int64{0: 1})

	var silent atomic.Bool
	k.Cluster.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		// Handled with neither response nor error: the broker keeps the
		// connection open and says nothing.
		return nil, nil, silent.Load()
	})

	cfg := k.testConfig()
	cfg.Timeout = time.Second
	s := startScraper(t, cfg)
	_, err := s.scrape(context.Background()) // connect and learn the leader first
	require.NoError(t, err)

	silent.Store(true)
	md, err := s.scrape(context.Background())
	require.Error(t, err)
	require.True(t, scrapererror.IsPartialScrapeError(err), "what was read is still reported: %v", err)
	require.Contains(t, pointsOf(md, "kafka.consumer_group.offset"), pointKey{"waiting", "quiet", 0})
	require.Empty(t, pointsOf(md, "kafka.consumer_group.lag"), "no end offset, no lag: nothing is invented")
	require.Error(t, s.sampler.Sample(context.Background(), false))

	silent.Store(false)
	require.Eventually(t, func() bool {
		md, err := s.scrape(context.Background())
		if err != nil {
			t.Log(err)
		}
		return err == nil && pointsOf(md, "kafka.consumer_group.lag")[pointKey{"waiting", "quiet", 0}].intValue == 1
	}, 30*time.Second, 100*time.Millisecond)
	require.NoError(t, s.sampler.Sample(context.Background(), false))
}
