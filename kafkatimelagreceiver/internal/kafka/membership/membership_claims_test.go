//go:build !unit

package membership

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

// failPartitionReads answers every ListOffsets and Fetch of topic with
// KAFKA_STORAGE_ERROR (a broker whose log directory failed), which sarama
// does not retry, and counts them.
func failPartitionReads(k *kfaketest.Kafka, topic string) (reads *atomic.Int32) {
	reads = new(atomic.Int32)
	k.Cluster.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		lo := req.(*kmsg.ListOffsetsRequest)
		if len(lo.Topics) == 0 || lo.Topics[0].Topic != topic {
			return nil, nil, false
		}
		reads.Add(1)
		resp := lo.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range lo.Topics {
			t := kmsg.NewListOffsetsResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewListOffsetsResponseTopicPartition()
				p.Partition = rp.Partition
				p.ErrorCode = kerr.KafkaStorageError.Code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil, true
	})
	k.Cluster.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		for _, ft := range req.(*kmsg.FetchRequest).Topics {
			if ft.Topic == topic {
				reads.Add(1)
			}
		}
		return nil, nil, false
	})
	return reads
}

// TestMembershipNeedsNoPartitionReads: a member holds coordination
// partitions and reads nothing from them, so a broker that cannot serve
// them (a failed log directory, a leader election) costs the group
// nothing: one session, one generation, no ListOffsets or Fetch of the
// coordination topic.
func TestMembershipNeedsNoPartitionReads(t *testing.T) {
	k := newShortSessionKafka(t)
	ms := testMembershipSettings(6)
	reads := failPartitionReads(k, ms.Topic)
	m := startMembership(t, k, ms)
	requireHeldPartitionsEventually(t, 6, m)

	generations := map[int32]bool{}
	left := 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		a := m.Assignment()
		if !a.Joined {
			left++
			continue
		}
		generations[a.Generation] = true
	}
	t.Logf("%d generations, %d polls not joined, %d reads of the coordination topic", len(generations), left, reads.Load())
	require.Zero(t, reads.Load(), "ListOffsets and Fetch of the coordination topic")
	require.Len(t, generations, 1, "one generation throughout: %v", generations)
	require.Zero(t, left, "the member never left the group")
}
