package kafkatimelagreceiver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// owner is one kafka.consumer_group.partition_owner point's attributes.
type owner struct {
	group, topic           string
	partition              int64
	member, host, instance string
}

func ownersOf(t *testing.T, md pmetric.Metrics) map[owner]bool {
	t.Helper()
	out := map[owner]bool{}
	eachMetric(md, func(m pmetric.Metric) {
		if m.Name() != "kafka.consumer_group.partition_owner" {
			return
		}
		dps := m.Gauge().DataPoints()
		for i := range dps.Len() {
			dp := dps.At(i)
			require.Equal(t, int64(1), dp.IntValue())
			a := dp.Attributes()
			get := func(k string) string { v, _ := a.Get(k); return v.Str() }
			p, _ := a.Get("partition")
			o := owner{get("group"), get("topic"), p.Int(), get("member"), get("host"), get("group_instance_id")}
			require.False(t, out[o], "one point per owner: %+v", o)
			out[o] = true
		}
	})
	return out
}

// coordinatorOwners is what the coordinator says each member of the groups
// holds: DescribeGroups for the classic group, ConsumerGroupDescribe for the
// KIP-848 one.
func (k *testKafka) coordinatorOwners(t *testing.T, classic, nextGen string) map[owner]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[owner]bool{}
	groups, err := k.Admin.DescribeGroups(ctx, classic)
	require.NoError(t, err)
	for _, m := range groups[classic].Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, tp := range c.Topics {
			for _, p := range tp.Partitions {
				out[owner{classic, tp.Topic, int64(p), m.ClientID, strings.TrimPrefix(m.ClientHost, "/"), deref(m.InstanceID)}] = true
			}
		}
	}
	// The raw response, since the broker may name a topic by id only.
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{nextGen}
	resp, err := req.RequestWith(ctx, k.Client)
	require.NoError(t, err)
	for _, g := range resp.Groups {
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				topic := tp.Topic
				if topic == "" {
					topic = k.topicName(t, tp.TopicID)
				}
				for _, p := range tp.Partitions {
					out[owner{nextGen, topic, int64(p), m.ClientID, strings.TrimPrefix(m.ClientHost, "/"), deref(m.InstanceID)}] = true
				}
			}
		}
	}
	return out
}

// topicName is the name of the topic with the id.
func (k *testKafka) topicName(t *testing.T, id [16]byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := k.Admin.ListTopics(ctx)
	require.NoError(t, err)
	for name, d := range topics {
		if d.ID == id {
			return name
		}
	}
	t.Fatalf("no topic with id %x", id)
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestPartitionOwnersMatchTheCoordinator: through a rebalance (a second
// member joining), the partition_owner points of a classic and of a KIP-848
// group are what their coordinator says each member holds, one point per
// assigned partition, topics by name.
func TestPartitionOwnersMatchTheCoordinator(t *testing.T) {
	k := newTestKafka(t, 1, kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "200"}))
	k.CreateTopic("work", 4)
	const classic, nextGen = "classic", "next-gen"
	cfg := k.healthConfig(3)
	cfg.Metrics.KafkaConsumerGroupPartitionOwner.Enabled = true
	s := startScraper(t, cfg)

	matches := func(members int) {
		t.Helper()
		var got, want map[owner]bool
		require.Eventually(t, func() bool {
			md, err := s.scrape(context.Background())
			if err != nil {
				t.Logf("scrape: %v", err)
				return false
			}
			got = ownersOf(t, md)
			want = k.coordinatorOwners(t, classic, nextGen)
			perMember := map[string]int{}
			for o := range got {
				perMember[o.group+"/"+o.member]++
			}
			balanced := len(perMember) == 2*members
			for _, n := range perMember {
				balanced = balanced && n == 4/members
			}
			return balanced && len(got) == 8 && equalOwners(got, want)
		}, 60*time.Second, 100*time.Millisecond, "owners %v, coordinator %v", got, want)
		for o := range got {
			require.Equal(t, "work", o.topic, "topics by name")
			require.NotEmpty(t, o.host)
		}
	}
	k.joinGroup(classic, "work", "member-a")
	k.joinGroup(nextGen, "work", "member-a", kgo.ServerSideBalancer())
	matches(1)
	k.joinGroup(classic, "work", "member-b")
	k.joinGroup(nextGen, "work", "member-b", kgo.ServerSideBalancer())
	matches(2)
}

func equalOwners(a, b map[owner]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for o := range a {
		if !b[o] {
			return false
		}
	}
	return true
}
