package kafkatimelagreceiver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConnIdleTimeoutReopensConnections: a connection that carried nothing
// for conn_idle_timeout is reopened before the next request, so a broker,
// load balancer or NAT that dropped it meanwhile costs nothing. Each new
// connection starts with an ApiVersions request.
func TestConnIdleTimeoutReopensConnections(t *testing.T) {
	k := newTestKafka(t, 2)
	secFixture(k)

	steady := startScraper(t, k.testConfig()) // conn_idle_timeout 9m
	requireBillingLag(t, steady)
	opened := k.Requests(int16(kmsg.ApiVersions))
	requireBillingLag(t, steady)
	require.Equal(t, opened, k.Requests(int16(kmsg.ApiVersions)), "busy connections are kept")

	const idle = 50 * time.Millisecond
	cfg := k.testConfig()
	cfg.ConnIdleTimeout = idle
	s := startScraper(t, cfg)
	requireBillingLag(t, s)
	opened = k.Requests(int16(kmsg.ApiVersions))
	time.Sleep(2 * idle)
	requireBillingLag(t, s)
	require.Greater(t, k.Requests(int16(kmsg.ApiVersions)), opened, "idle connections are reopened")
}

// TestRackIDReadsFromPreferredReplica: with rack_id set, record reads carry
// the rack, and a leader that points them at a replica in that rack
// (KIP-392; kfake has no replica selector, so the test answers for the
// leader) has them read there.
func TestRackIDReadsFromPreferredReplica(t *testing.T) {
	k := newTestKafka(t, 2)
	secFixture(k)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := k.Admin.ListTopics(ctx, "orders")
	require.NoError(t, err)
	leader := topics["orders"].Partitions[0].Leader
	replica := 1 - leader
	k.Cluster.SetFollowers("orders", 0, []int32{replica})

	var (
		mu      sync.Mutex
		fetches = map[int32][]string{} // node -> racks of the Fetch requests it got
	)
	k.Cluster.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		fetch := req.(*kmsg.FetchRequest)
		node := k.Cluster.CurrentNode()
		mu.Lock()
		fetches[node] = append(fetches[node], fetch.Rack)
		mu.Unlock()
		if node != leader || fetch.Rack != "rack-b" {
			return nil, nil, false
		}
		resp := fetch.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range fetch.Topics {
			topic := kmsg.NewFetchResponseTopic()
			topic.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition = rp.Partition
				p.HighWatermark = 2
				p.PreferredReadReplica = replica
				p.RecordBatches = []byte{} // as Kafka sends it: empty, not null
				topic.Partitions = append(topic.Partitions, p)
			}
			resp.Topics = append(resp.Topics, topic)
		}
		return resp, nil, true
	})

	cfg := k.testConfig()
	cfg.RackID = "rack-b"
	require.NoError(t, cfg.Validate())
	requireBillingLag(t, startScraper(t, cfg))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"rack-b"}, fetches[leader], "the leader is asked once, with the rack")
	require.Equal(t, []string{"rack-b"}, fetches[replica], "and the record is read from the replica it names")
}
