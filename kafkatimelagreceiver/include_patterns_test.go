//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// TestIncludePatternMatchingNothingIsLogged: a groups or topics include
// regex that matches nothing (a typo) is logged once, naming the key and
// the regex, not at every scrape; when it matches again that is said, and
// when it stops again it is logged again.
func TestIncludePatternMatchingNothingIsLogged(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("orders", 1)
	k.Commit("billing", "orders", map[int32]int64{0: 0})

	cfg := k.testConfig()
	cfg.Groups.Include = []string{"^ordrs$", "^billing"}
	cfg.Topics.Include = []string{"^orders", "^paymnts$"}
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zapcore.InfoLevel)
	settings := receivertest.NewNopSettings(metadata.Type)
	settings.Logger = zap.New(core)
	s, err := newTimeLagScraper(cfg, settings, nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	scrape := func() {
		t.Helper()
		_, err := s.scrape(context.Background())
		require.NoError(t, err)
	}
	said := func(snippet string) []observer.LoggedEntry {
		return logs.FilterMessageSnippet(snippet).All()
	}

	scrape()
	scrape()
	typo := said("groups::include::0 matches no consumer group")
	require.Len(t, typo, 1, "logged once, not at every scrape")
	require.Equal(t, zapcore.WarnLevel, typo[0].Level)
	require.Equal(t, "^ordrs$", typo[0].ContextMap()["pattern"])
	require.Len(t, said("topics::include::1 matches no topic"), 1)
	require.Empty(t, said("groups::include::1"), "^billing matches")
	require.Empty(t, said("topics::include::0"), "^orders matches")

	k.Commit("ordrs", "orders", map[int32]int64{0: 0})
	scrape()
	require.Len(t, said("groups::include::0 matches a consumer group of the cluster again"), 1)

	ctx, cancel := context.WithTimeout(context.Background(), faultDeadline)
	defer cancel()
	_, err = k.Admin.DeleteGroup(ctx, "ordrs")
	require.NoError(t, err)
	scrape()
	scrape()
	require.Len(t, said("groups::include::0 matches no consumer group"), 2, "stopping again is logged again, once")
}
