package read_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// noConsumerGroups is a cluster with no consumer group: any call but the
// listing and the (empty) commit read panics on the nil Cluster.
type noConsumerGroups struct{ kafka.Cluster }

func (noConsumerGroups) ConsumerGroups(context.Context) ([]string, error) { return nil, nil }

func (noConsumerGroups) CommittedOffsets(context.Context, []string) (map[string]kafka.Commits, error) {
	return map[string]kafka.Commits{}, nil
}

// unservedShares is a share-group client whose cluster cannot read share
// groups, for reason; it counts the calls.
type unservedShares struct {
	reason string
	calls  int
}

func (u *unservedShares) err() error {
	u.calls++
	return fmt.Errorf("%w: %s", kafka.ErrShareGroupsUnsupported, u.reason)
}

func (u *unservedShares) ShareGroups(context.Context) ([]string, error) { return nil, u.err() }
func (u *unservedShares) DescribeShareGroups(context.Context, []string) (map[string]kafka.ShareGroupDescription, error) {
	return nil, u.err()
}
func (u *unservedShares) ShareGroupOffsets(context.Context, []string) (map[string]kafka.ShareGroupOffsets, error) {
	return nil, u.err()
}
func (u *unservedShares) Close() error { return nil }

// Share groups the client cannot read are said once in the log, again only
// when the reason changes, and never fail a scrape.
func TestUnreadableShareGroupsAreSaidOnce(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	r := newReader(t, noConsumerGroups{}, nil)
	r.Logger = zap.New(core)
	client := &unservedShares{reason: "protocol_version 4.0.0 is older than 4.1.0"}
	r.Shares.Client = client
	r.Shares.Describe = true
	r.Shares.Listed = func() []string { return []string{"workers"} }
	scrape := func() {
		var errs scrapererror.ScrapeErrors
		in, err := r.Read(context.Background(), nil, kafka.NewDenials(), &errs)
		require.NoError(t, err)
		require.NoError(t, errs.Combine())
		require.Empty(t, in.Shares)
	}
	for range 3 {
		scrape()
	}
	require.Equal(t, 1, logs.Len())
	require.Contains(t, logs.All()[0].ContextMap()["reason"], "protocol_version 4.0.0")
	require.Equal(t, 3, client.calls, "one call per scrape, nothing described")

	client.reason = "auth::kerberos is configured"
	scrape()
	require.Equal(t, 2, logs.Len(), "a new reason is said")

	r.Shares.Listed = func() []string { return nil }
	scrape()
	require.Equal(t, 4, client.calls, "no share group listed: nothing asked")
}
