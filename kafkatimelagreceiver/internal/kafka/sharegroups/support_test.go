//go:build !unit

package sharegroups_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

// A cluster without share groups (kfake speaking Kafka 3.9's APIs): the
// first call asks once and says so; the calls after it send nothing and
// say the same, with no other error.
func TestClusterWithoutShareGroupsIsFoundOutOnce(t *testing.T) {
	k := kfaketest.New(t, 3, nil, kfake.MaxVersions(kversion.V3_9_0()), kfake.SeedTopics(1, "jobs"))
	k.Commit("classic-consumers", "jobs", map[int32]int64{0: 0})
	c := newClient(t, settingsFor(k.Addrs))

	before := k.Counts.Snapshot()
	_, err := c.ShareGroups(ctxFor(t))
	first := k.Counts.Snapshot().Since(before)
	require.ErrorIs(t, err, kafka.ErrShareGroupsUnsupported)
	require.ErrorContains(t, err, "ShareGroupDescribe", "3.9 has ListGroups v5, not the share-group APIs")
	t.Logf("finding out: %s", first)
	require.Equal(t, int64(2), first.Of(kmsg.ApiVersions), "the connection's and the question: %s", first)
	require.Equal(t, int64(2), first.Total(), "nothing else: %s", first)

	before = k.Counts.Snapshot()
	for range 5 {
		_, err = c.ShareGroups(ctxFor(t))
		require.ErrorIs(t, err, kafka.ErrShareGroupsUnsupported)
		_, several := err.(kafka.Errors)
		require.False(t, several, "one error saying why, nothing per broker or group: %v", err)
		_, err = c.DescribeShareGroups(ctxFor(t), []string{"classic-consumers"})
		require.ErrorIs(t, err, kafka.ErrShareGroupsUnsupported)
		_, err = c.ShareGroupOffsets(ctxFor(t), []string{"classic-consumers"})
		require.ErrorIs(t, err, kafka.ErrShareGroupsUnsupported)
	}
	require.Zero(t, k.Counts.Snapshot().Since(before).Total(), "the calls after the first send nothing")
}

// A broker that answers DescribeShareGroupOffsets v0 gives no lag: -1.
func TestLagUnknownBeforeKIP1226(t *testing.T) {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.DescribeShareGroupOffsets.Int16(), 0)
	k := kfaketest.New(t, 1, nil, kfake.MaxVersions(versions), kfake.SeedTopics(1, "jobs"))
	k.Cluster.SetGroupConfigs("workers", map[string]string{"share.auto.offset.reset": "earliest"})
	produce(k, "jobs", 1, 6, time.Now().Add(-time.Minute))
	m := member(t, k.Addrs, "workers", "jobs", 2)
	for _, r := range poll(t, m) {
		r.Ack(kgo.AckAccept)
	}
	require.NoError(t, m.FlushAcks(ctxFor(t)))

	c := newClient(t, settingsFor(k.Addrs))
	offsets, err := c.ShareGroupOffsets(ctxFor(t), []string{"workers"})
	require.NoError(t, err)
	require.Len(t, offsets["workers"].Partitions, 1)
	got := offsets["workers"].Partitions[0]
	require.Equal(t, int64(2), got.StartOffset)
	require.Equal(t, int64(-1), got.Lag)
}

// PLAIN and SCRAM reach a share group through a cluster that requires
// SASL; a refused password (kfake drops the connection, as some brokers
// and proxies do) is an error that says SASL was attempted, as whom.
func TestSASLReachesShareGroups(t *testing.T) {
	for _, tc := range []struct {
		mechanism string
		client    kgo.Opt
	}{
		{kafka.SASLPlain, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())},
		{kafka.SASLSCRAMSHA256, kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism())},
		{kafka.SASLSCRAMSHA512, kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			k := kfaketest.New(t, 1, []kgo.Opt{tc.client},
				kfake.EnableSASL(), kfake.Superuser(tc.mechanism, "admin", "admin-secret"), kfake.SeedTopics(1, "jobs"))
			k.Cluster.SetGroupConfigs("workers", map[string]string{"share.auto.offset.reset": "earliest"})
			produce(k, "jobs", 1, 4, time.Now().Add(-time.Minute))
			m := member(t, k.Addrs, "workers", "jobs", 1, tc.client)
			for _, r := range poll(t, m) {
				r.Ack(kgo.AckAccept)
			}
			require.NoError(t, m.FlushAcks(ctxFor(t)))

			s := settingsFor(k.Addrs)
			s.SASL = &clientsettings.SASL{Mechanism: tc.mechanism, Username: "admin", Password: "admin-secret", HandshakeVersion: 1}
			c := newClient(t, s)
			listed, err := c.ShareGroups(ctxFor(t))
			require.NoError(t, err)
			require.Equal(t, []string{"workers"}, listed)
			offsets, err := c.ShareGroupOffsets(ctxFor(t), listed)
			require.NoError(t, err)
			require.Equal(t, []kafka.ShareOffset{{
				TopicPartition: kafka.TopicPartition{Topic: "jobs", Partition: 0}, StartOffset: 1, LeaderEpoch: 0, Lag: 3, TopicID: topicID(t, k, "jobs"),
			}}, offsets["workers"].Partitions)

			s.SASL.Password = "wrong"
			wrong := newClient(t, s)
			_, err = wrong.ShareGroups(ctxFor(t))
			require.ErrorContains(t, err, fmt.Sprintf("plaintext, SASL %s as \"admin\"", tc.mechanism))
			require.NotContains(t, err.Error(), "wrong")
		})
	}
}
