//go:build !unit

package saramaoffsets

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// TestCoordinatorOfManyGroupsAnswersInChunks: one coordinator holds 250
// groups. Their committed offsets are asked in batched OffsetFetch requests
// of at most maxGroupsPerOffsetFetch groups each, so that no response grows
// with every group of the coordinator (past the client's response size
// limit, one response would fail them all, every scrape); every group is
// still read.
func TestCoordinatorOfManyGroupsAnswersInChunks(t *testing.T) {
	const groups = 250
	require.Greater(t, groups, 2*maxGroupsPerOffsetFetch, "the test needs more than two chunks")
	k, c, names := coordinatorOfGroups(t, groups)
	listed, err := c.ConsumerGroups(context.Background())
	require.NoError(t, err)
	require.Equal(t, names, listed)

	before := k.Requests(int16(kmsg.OffsetFetch))
	committed, err := c.CommittedOffsets(context.Background(), listed)
	require.NoError(t, err)
	sent := k.Requests(int16(kmsg.OffsetFetch)) - before
	require.Equal(t, int64((groups+maxGroupsPerOffsetFetch-1)/maxGroupsPerOffsetFetch), sent, "OffsetFetch requests for %d groups", groups)
	require.Len(t, committed, groups)
	for i, g := range names {
		require.Equal(t, kafka.Commits{{TopicPartition: kafka.TopicPartition{Topic: "orders", Partition: 0}, Offset: int64(i)}}, committed[g], g)
	}
}

// coordinatorOfGroups is a one-broker cluster (so one coordinator) whose n
// groups group-000, group-001, ... each committed offset i on orders/0, and
// the offset reads on it.
func coordinatorOfGroups(t *testing.T, n int) (*kfaketest.Kafka, *testReads, []string) {
	t.Helper()
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("orders", 1)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("group-%03d", i)
		k.Commit(names[i], "orders", map[int32]int64{0: int64(i)})
	}
	c, err := open(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return k, c, names
}

// TestUndecodableBatchedOffsetFetchIsAskedGroupByGroup: the coordinator's
// answer to a batched OffsetFetch cannot be decoded (as one over sarama's
// response size limit cannot). Its groups are asked again one per request
// in the same call, and the connection, closed because its stream may be
// out of step, serves the next call's batch.
func TestUndecodableBatchedOffsetFetchIsAskedGroupByGroup(t *testing.T) {
	const groups = 5
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("orders", 1)
	var names []string
	for i := range groups {
		names = append(names, fmt.Sprintf("group-%d", i))
		k.Commit(names[i], "orders", map[int32]int64{0: int64(i)})
	}
	settings := saramatest.Settings(k.Addrs)
	core, logs := observer.New(zap.DebugLevel)
	settings.Logger = zap.New(core)
	c, err := open(settings)
	require.NoError(t, err)
	defer c.Close()
	listed, err := c.ConsumerGroups(context.Background())
	require.NoError(t, err)

	var garbled atomic.Int64
	k.Cluster.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if len(req.(*kmsg.OffsetFetchRequest).Groups) < 2 {
			return nil, nil, false
		}
		// A v7 body (not flexible) where v8 (flexible) is expected: the
		// client reads it one byte off.
		resp := req.(*kmsg.OffsetFetchRequest).ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.Version = 7
		garbled.Add(1)
		return resp, nil, true
	})
	before := k.Requests(int16(kmsg.OffsetFetch))
	committed, err := c.CommittedOffsets(context.Background(), listed)
	require.NoError(t, err)
	require.Len(t, committed, groups)
	require.Equal(t, int64(1), garbled.Load(), "one batch, garbled")
	require.Equal(t, int64(groups), k.Requests(int16(kmsg.OffsetFetch))-before, "then one request per group")
	require.Equal(t, 1, logs.FilterMessageSnippet("could not be decoded; asking its groups one by one").Len())

	before = k.Requests(int16(kmsg.OffsetFetch))
	committed, err = c.CommittedOffsets(context.Background(), listed)
	require.NoError(t, err)
	require.Len(t, committed, groups)
	require.Equal(t, int64(1), k.Requests(int16(kmsg.OffsetFetch))-before, "batched again")
}

// TestCommittedOffsetsOnSomePartitions: a group's commits are read on the
// partitions asked only, in the batched request (v8) and in one request per
// group (before Kafka 3.0); a group asked with no partitions is read whole,
// and a partition without a commit is left out.
func TestCommittedOffsetsOnSomePartitions(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("orders", 2)
	k.CreateTopic("payments", 2)
	k.Commit("apart", "orders", map[int32]int64{0: 1, 1: 2})
	k.Commit("apart", "payments", map[int32]int64{0: 3, 1: 4})
	k.Commit("whole", "orders", map[int32]int64{0: 5})
	k.Commit("whole", "payments", map[int32]int64{1: 6})
	tp := func(topic string, p int32) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: topic, Partition: p}
	}
	for _, version := range []string{"", "2.8.0"} {
		t.Run("version "+version, func(t *testing.T) {
			settings := saramatest.Settings(k.Addrs)
			if version != "" {
				settings.ProtocolVersion = version
			}
			c, err := open(settings)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			committed, err := c.CommittedOffsetsOn(context.Background(), map[string][]kafka.TopicPartition{
				"apart": {tp("payments", 1), tp("orders", 0)},
				"whole": nil,
			})
			require.NoError(t, err)
			require.Equal(t, map[string]kafka.Commits{
				"apart": {{TopicPartition: tp("orders", 0), Offset: 1}, {TopicPartition: tp("payments", 1), Offset: 4}},
				"whole": {{TopicPartition: tp("orders", 0), Offset: 5}, {TopicPartition: tp("payments", 1), Offset: 6}},
			}, committed)
			committed, err = c.CommittedOffsetsOn(context.Background(), map[string][]kafka.TopicPartition{"whole": {tp("orders", 1)}})
			require.NoError(t, err)
			require.Empty(t, committed["whole"], "no commit on orders/1")
		})
	}
}
