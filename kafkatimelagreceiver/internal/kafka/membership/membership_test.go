//go:build !unit

package membership

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

// testSettings are the receiver's client defaults pointed at brokers (a
// test's kfake cluster).
func testSettings(brokers []string) clientsettings.Settings {
	return clientsettings.Settings{
		Brokers:         brokers,
		ClientID:        "otel-kafkatimelag",
		ProtocolVersion: "3.0.0",
		RequestTimeout:  10 * time.Second,
		DialTimeout:     10 * time.Second,
		Metadata:        clientsettings.Metadata{RefreshInterval: 10 * time.Minute},
	}
}

// testMembershipSettings keep sessions short so that tests do not wait on
// the coordinator; kfake must allow them (kfake.GroupMinSessionTimeout).
func testMembershipSettings(partitions int32) Settings {
	return Settings{
		GroupID:           "replicas",
		Topic:             "coordination",
		Partitions:        partitions,
		ReplicationFactor: -1,
		CreateTopic:       true,
		SessionTimeout:    time.Second,
		HeartbeatInterval: 100 * time.Millisecond,
	}
}

func newShortSessionKafka(t *testing.T) *kfaketest.Kafka {
	return kfaketest.New(t, 3, nil, kfake.GroupMinSessionTimeout(100*time.Millisecond))
}

func startMembership(t *testing.T, k *kfaketest.Kafka, ms Settings) *Member {
	t.Helper()
	m, err := New(testSettings(k.Addrs), ms)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close(), "closing again is harmless") })
	return m
}

// requireHeldPartitionsEventually waits until the members hold every
// partition of count between them, each exactly once, and returns what
// each holds.
func requireHeldPartitionsEventually(t *testing.T, count int32, members ...*Member) [][]int32 {
	t.Helper()
	var held [][]int32
	require.Eventually(t, func() bool {
		held = held[:0]
		var all []int32
		for _, m := range members {
			a := m.Assignment()
			if !a.Joined || a.PartitionCount != count {
				return false
			}
			held = append(held, a.Partitions)
			all = append(all, a.Partitions...)
		}
		slices.Sort(all)
		if len(all) != int(count) || len(slices.Compact(all)) != int(count) {
			return false
		}
		// Cooperative rebalancing takes two rounds (revoke, then assign):
		// settled is when the shares are even too.
		for _, h := range held {
			if len(h) < int(count)/len(members) {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "every coordination partition held exactly once, shares even")
	return held
}

// TestMembershipCreatesTopicAndJoins: the first replica creates the
// coordination topic with the configured partitions and holds them all.
func TestMembershipCreatesTopicAndJoins(t *testing.T) {
	k := newShortSessionKafka(t)
	m := startMembership(t, k, testMembershipSettings(6))
	held := requireHeldPartitionsEventually(t, 6, m)
	require.Equal(t, []int32{0, 1, 2, 3, 4, 5}, held[0])
	a := m.Assignment()
	require.NotEmpty(t, a.MemberID)
	require.NoError(t, a.Err)

	details, err := k.Admin.ListTopics(context.Background(), "coordination")
	require.NoError(t, err)
	require.Len(t, details["coordination"].Partitions, 6)
}

// TestMembershipUsesExistingTopic: a topic that exists is used as it is,
// with its own partition count, and nothing is created.
func TestMembershipUsesExistingTopic(t *testing.T) {
	k := newShortSessionKafka(t)
	k.CreateTopic("coordination", 4)
	ms := testMembershipSettings(60)
	ms.CreateTopic = false
	m := startMembership(t, k, ms)
	held := requireHeldPartitionsEventually(t, 4, m)
	require.Equal(t, []int32{0, 1, 2, 3}, held[0])
}

// TestMembershipWithoutTopicSaysWhy: with creation not allowed and no
// topic, the replica does not join and its assignment says what to do.
func TestMembershipWithoutTopicSaysWhy(t *testing.T) {
	k := newShortSessionKafka(t)
	ms := testMembershipSettings(8)
	ms.CreateTopic = false
	m := startMembership(t, k, ms)
	require.Eventually(t, func() bool { return m.Assignment().Err != nil }, 30*time.Second, 20*time.Millisecond)
	a := m.Assignment()
	require.False(t, a.Joined)
	require.ErrorContains(t, a.Err, `coordination topic "coordination" does not exist and coordination::create_topic is false: create it with 8 partitions`)
}

// TestMembershipSharesAndHandsOver: three replicas split the partitions;
// when one leaves, the other two take its partitions without giving up
// any of their own (cooperative rebalancing), and a replica that joins
// later takes a share from them.
func TestMembershipSharesAndHandsOver(t *testing.T) {
	k := newShortSessionKafka(t)
	const count = 12
	a := startMembership(t, k, testMembershipSettings(count))
	b := startMembership(t, k, testMembershipSettings(count))
	c := startMembership(t, k, testMembershipSettings(count))
	held := requireHeldPartitionsEventually(t, count, a, b, c)
	for i, h := range held {
		require.Len(t, h, count/3, "replica %d holds an even share", i)
	}
	keptA, keptC := held[0], held[2]

	// Watch a and c while b leaves: they must never drop what they held.
	stop := make(chan struct{})
	dropped := make(chan string, 1)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			for name, w := range map[string]struct {
				m    *Member
				kept []int32
			}{"a": {a, keptA}, "c": {c, keptC}} {
				now := w.m.Assignment().Partitions
				for _, p := range w.kept {
					if !slices.Contains(now, p) {
						select {
						case dropped <- name:
						default:
						}
					}
				}
			}
		}
	}()
	require.NoError(t, b.Close())
	after := requireHeldPartitionsEventually(t, count, a, c)
	close(stop)
	<-watching
	select {
	case name := <-dropped:
		t.Fatalf("replica %s let go of a partition it kept during the handover", name)
	default:
	}
	require.Len(t, after[0], count/2)
	require.Len(t, after[1], count/2)

	d := startMembership(t, k, testMembershipSettings(count))
	held = requireHeldPartitionsEventually(t, count, a, c, d)
	for i, h := range held {
		require.Len(t, h, count/3, "replica %d after d joined", i)
	}
}

// TestMembershipDealsPartitionsOutByLoad: with the monitored topics'
// loads known, a replica joining one that holds everything gets half the
// load, not half the partitions: ten topics on twelve coordination
// partitions (one holding two, three none) end five and five, through
// the cooperative handover (the joining replica gets nothing the other
// still holds).
func TestMembershipDealsPartitionsOutByLoad(t *testing.T) {
	k := newShortSessionKafka(t)
	const count = 12
	// The topics' partitions, named for them: t2 and t2b share one.
	onto := map[string]int32{"t0": 0, "t2": 2, "t2b": 2, "t3": 3, "t5": 5, "t6": 6, "t8": 8, "t9": 9, "t10": 10, "t11": 11}
	ms := testMembershipSettings(count)
	ms.PartitionOf = func(topic string, n int32) int32 {
		require.Equal(t, int32(count), n)
		return onto[topic]
	}
	topics := map[string]int64{}
	for topic := range onto {
		topics[topic] = 1000
	}
	a := startMembership(t, k, ms)
	a.Weigh(topics)
	requireHeldPartitionsEventually(t, count, a)
	b := startMembership(t, k, ms)
	b.Weigh(topics)
	held := requireHeldPartitionsEventually(t, count, a, b)
	for i, h := range held {
		var load int64
		for _, p := range h {
			for topic, on := range onto {
				if on == p {
					load += topics[topic]
				}
			}
		}
		require.Equal(t, int64(5000), load, "replica %d holds %v", i, h)
	}
}

// TestMembershipSessionExpiryHandsOver: a replica that stops without
// leaving (its LeaveGroup never reaches the coordinator, as after SIGKILL)
// keeps its partitions until its session expires; then the others hold
// them.
func TestMembershipSessionExpiryHandsOver(t *testing.T) {
	k := newShortSessionKafka(t)
	const count = 6
	a := startMembership(t, k, testMembershipSettings(count))
	b := startMembership(t, k, testMembershipSettings(count))
	requireHeldPartitionsEventually(t, count, a, b)

	victim := b.Assignment().MemberID
	swallowLeave(k.Cluster, victim)
	stopped := time.Now()
	require.NoError(t, b.Close())
	require.Len(t, a.Assignment().Partitions, count/2, "a holds only its own share until the coordinator gives up on b")
	requireHeldPartitionsEventually(t, count, a)
	took := time.Since(stopped)
	t.Logf("takeover %s after the replica stopped (session timeout %s)", took.Round(time.Millisecond), time.Second)
	require.GreaterOrEqual(t, took, 900*time.Millisecond, "the coordinator waited for b's session to expire")
}

// swallowLeave answers the member's LeaveGroup without passing it to the
// coordinator: the member is gone but the coordinator does not know.
func swallowLeave(c *kfake.Cluster, member string) {
	c.ControlKey(int16(kmsg.LeaveGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		leave := req.(*kmsg.LeaveGroupRequest)
		ids := []string{leave.MemberID}
		for _, m := range leave.Members {
			ids = append(ids, m.MemberID)
		}
		if !slices.Contains(ids, member) {
			return nil, nil, false
		}
		resp := leave.ResponseKind().(*kmsg.LeaveGroupResponse)
		for _, m := range leave.Members {
			r := kmsg.NewLeaveGroupResponseMember()
			r.MemberID = m.MemberID
			r.InstanceID = m.InstanceID
			resp.Members = append(resp.Members, r)
		}
		return resp, nil, true
	})
}

// TestMembershipCloseWhileUnreachable: a replica that never reached Kafka
// closes promptly and leaves nothing running.
func TestMembershipCloseWhileUnreachable(t *testing.T) {
	s := clientsettings.Settings{Brokers: []string{"127.0.0.1:1"}, ProtocolVersion: "3.0.0", RequestTimeout: time.Second, DialTimeout: time.Second}
	m, err := New(s, testMembershipSettings(4))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return m.Assignment().Err != nil }, 30*time.Second, 20*time.Millisecond)
	require.ErrorContains(t, m.Assignment().Err, "connect to brokers [127.0.0.1:1]")
	require.NoError(t, m.Close())
}

func TestMembershipNeedsCooperativeVersion(t *testing.T) {
	s := clientsettings.Settings{Brokers: []string{"127.0.0.1:1"}, ProtocolVersion: "2.3.0", RequestTimeout: time.Second, DialTimeout: time.Second}
	_, err := New(s, testMembershipSettings(4))
	require.ErrorContains(t, err, "coordination needs protocol_version 2.4.0 or later")
}

var _ kafka.Membership = (*Member)(nil)
