//go:build !unit

package sharegroups_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

// seedShareGroup makes group a share group with state on topic's partition
// 0: a member that accepted one record and left.
func seedShareGroup(t *testing.T, k *kfaketest.Kafka, group, topic string, extra ...kgo.Opt) {
	t.Helper()
	k.Cluster.SetGroupConfigs(group, map[string]string{"share.auto.offset.reset": "earliest"})
	m := member(t, k.Addrs, group, topic, 1, extra...)
	for _, r := range poll(t, m) {
		r.Ack(kgo.AckAccept)
	}
	require.NoError(t, m.FlushAcks(ctxFor(t)))
	m.Close()
}

// A principal allowed to describe one share group and not another reads
// the one and gets, for the other, a GroupError wrapping an
// AuthorizationError: a denial the receiver reports once, not a failed
// scrape.
func TestDeniedShareGroupIsAnAuthorizationErrorOfItsOwn(t *testing.T) {
	admin := kgo.SASL(plain.Auth{User: "admin", Pass: "admin"}.AsMechanism())
	describe := func(resource kmsg.ACLResourceType, name string) kfake.ACL {
		return kfake.ACL{Resource: resource, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true}
	}
	k := kfaketest.New(t, 1, []kgo.Opt{admin},
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.User("PLAIN", "monitor", "monitor",
			describe(kmsg.ACLResourceTypeGroup, "allowed"),
			describe(kmsg.ACLResourceTypeTopic, "jobs"),
			describe(kmsg.ACLResourceTypeCluster, "kafka-cluster")),
		kfake.SeedTopics(1, "jobs"))
	produce(k, "jobs", 1, 3, time.Now().Add(-time.Minute))
	seedShareGroup(t, k, "allowed", "jobs", admin)
	seedShareGroup(t, k, "denied", "jobs", admin)

	s := settingsFor(k.Addrs)
	s.SASL = &clientsettings.SASL{Mechanism: kafka.SASLPlain, Username: "monitor", Password: "monitor", HandshakeVersion: 1}
	c := newClient(t, s)
	groups := []string{"allowed", "denied"}

	described, err := c.DescribeShareGroups(ctxFor(t), groups)
	requireDenied(t, err, "denied")
	require.Contains(t, described, "allowed")
	require.NotContains(t, described, "denied")

	offsets, err := c.ShareGroupOffsets(ctxFor(t), groups)
	requireDenied(t, err, "denied")
	require.Len(t, offsets["allowed"].Partitions, 1)
	require.NotContains(t, offsets, "denied")
}

// requireDenied checks that err is exactly one GroupError naming group,
// wrapping an AuthorizationError.
func requireDenied(t *testing.T, err error, group string) {
	t.Helper()
	var errs kafka.Errors
	require.True(t, errors.As(err, &errs), "%v", err)
	require.Len(t, errs, 1)
	var groupErr *kafka.GroupError
	require.True(t, errors.As(errs[0], &groupErr), "%v", errs[0])
	require.Equal(t, group, groupErr.Group)
	var denied *kafka.AuthorizationError
	require.True(t, errors.As(errs[0], &denied), "%v", errs[0])
	d := kafka.NewDenials()
	require.NoError(t, d.Split(err), "a denial alone is not an error to fail a scrape for")
}

// A coordinator that fails its DescribeShareGroupOffsets costs the groups
// it coordinates, each named; the other coordinators' groups are read.
func TestFailingCoordinatorCostsOnlyItsGroups(t *testing.T) {
	k := kfaketest.New(t, 3, nil, kfake.SeedTopics(1, "jobs"))
	produce(k, "jobs", 1, 10, time.Now().Add(-time.Minute))
	var groups []string
	for i := range 6 {
		g := fmt.Sprintf("share-%d", i)
		groups = append(groups, g)
		seedShareGroup(t, k, g, "jobs")
	}
	coordinatorOf := map[string]int32{}
	for g, r := range k.Admin.FindGroupCoordinators(ctxFor(t), groups...) {
		require.NoError(t, r.Err)
		coordinatorOf[g] = r.NodeID
	}
	failing := coordinatorOf["share-0"]
	k.Cluster.ControlKey(kmsg.DescribeShareGroupOffsets.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		if k.Cluster.CurrentNode() != failing {
			return nil, nil, false
		}
		return nil, errors.New("broker failing"), true
	})

	c := newClient(t, settingsFor(k.Addrs))
	offsets, err := c.ShareGroupOffsets(ctxFor(t), groups)
	require.Error(t, err)
	var errs kafka.Errors
	require.True(t, errors.As(err, &errs), "%v", err)
	failed := map[string]bool{}
	for _, e := range errs {
		var groupErr *kafka.GroupError
		require.True(t, errors.As(e, &groupErr), "%v", e)
		failed[groupErr.Group] = true
	}
	for _, g := range groups {
		if coordinatorOf[g] == failing {
			require.True(t, failed[g], "%s is named", g)
			require.NotContains(t, offsets, g)
		} else {
			require.False(t, failed[g], g)
			require.Len(t, offsets[g].Partitions, 1, g)
		}
	}
}

// A coordinator that never answers: the call ends at its own deadline, with
// the group named, even when the caller's context has none.
func TestUnansweredCallEndsAtItsDeadline(t *testing.T) {
	k := kfaketest.New(t, 1, nil, kfake.SeedTopics(1, "jobs"))
	produce(k, "jobs", 1, 3, time.Now().Add(-time.Minute))
	seedShareGroup(t, k, "workers", "jobs")
	hole := kafkacount.NewBlackHole(k.Cluster, kmsg.DescribeShareGroupOffsets.Int16())
	hole.Set(true)
	defer hole.Set(false)

	s := settingsFor(k.Addrs)
	s.RequestTimeout = 200 * time.Millisecond
	c := newClient(t, s)
	offsets, err := c.ShareGroupOffsets(context.Background(), []string{"workers"})
	require.Empty(t, offsets)
	var groupErr *kafka.GroupError
	require.True(t, errors.As(err, &groupErr), "%v", err)
	require.Equal(t, "workers", groupErr.Group)
	require.Positive(t, hole.Swallowed())
	require.ErrorContains(t, err, "DescribeShareGroupOffsets to broker 0 (plaintext, no SASL): no answer within 600ms")
}
