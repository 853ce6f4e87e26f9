package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// While one group's coordinator fails every read, every scrape is partial,
// and a partial scrape cannot tell a partition no group commits on any more
// from one only that group commits on. Tables used to be kept until a
// complete scrape, which never came: with groups and topics churning
// meanwhile, the tables, the saved state and the sampler's work grew
// without bound. A table is now kept for unwantedTableLifetime after the
// last scrape that wanted it, however partial the scrapes.
func TestTablesOfChurnedGroupsDroppedWhileCoordinatorDown(t *testing.T) {
	requireNoLeakedGoroutines(t)
	const rounds = 6
	k := newTestKafka(t, 1)
	stuck := kafka.TopicPartition{Topic: "stuck", Partition: 0}
	k.CreateTopic(stuck.Topic, 1)
	for i := range rounds {
		k.CreateTopic(fmt.Sprintf("churn-%d", i), 1)
	}
	k.Produce(stuck.Topic, 0, time.Now())
	k.Commit("stuck-group", stuck.Topic, map[int32]int64{0: 0})

	s := startScraper(t, faultConfig(k))
	clock := time.Unix(1_700_000_000, 0)
	s.reader.Now = func() time.Time { return clock }
	ctx := context.Background()
	_, err := s.scrape(ctx)
	require.NoError(t, err)
	require.Equal(t, []kafka.TopicPartition{stuck}, s.tables.Partitions())

	// From now on the stuck group's coordinator fails every read of it.
	k.Cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: "stuck-group", Err: kerr.CoordinatorNotAvailable, Count: -1})
	churn := func(i int) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: fmt.Sprintf("churn-%d", i), Partition: 0}
	}
	for i := range rounds {
		// Every half hour a group commits on a topic of its own, is
		// scraped once, and is deleted.
		clock = clock.Add(30 * time.Minute)
		group := fmt.Sprintf("churn-group-%d", i)
		k.Commit(group, churn(i).Topic, map[int32]int64{0: 0})
		_, err := s.scrape(ctx)
		require.Error(t, err, "round %d", i)
		require.True(t, scrapererror.IsPartialScrapeError(err), "round %d: %v", i, err)

		want := []kafka.TopicPartition{churn(i)}
		if i > 0 {
			want = append([]kafka.TopicPartition{churn(i - 1)}, want...)
		} else {
			want = append(want, stuck) // half an hour of outage: its history is kept
		}
		require.Equal(t, want, s.tables.Partitions(), "round %d: only tables wanted within the last hour", i)

		resp, err := k.Admin.DeleteGroup(ctx, group)
		require.NoError(t, err)
		require.NoError(t, resp.Err)
	}
}
