package membership

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync/atomic"

	"github.com/IBM/sarama"
)

// countedAssignments wraps the group's balance strategy so that every
// assignment carries the coordination topic's partition count the leader
// assigned from, and every member hashes the monitored groups over that
// count: one count per generation for all members, even when a member's own
// metadata is older or newer than the leader's (the topic grew, or was
// recreated with another count, and members joined before and after).
type countedAssignments struct {
	inner sarama.BalanceStrategy
	topic string
	// loads, when it gives any, are the coordination partitions' loads
	// the plan balances (balancedPlan) instead of the inner strategy's
	// partition counts.
	loads func(count int32) []int64
	// planned is the count of the leader's last plan, which the
	// assignments of the same SyncGroup then carry.
	planned atomic.Int32
	// received is the leader's count with the generation it came with, as
	// the last assignment this member received told it.
	received atomic.Pointer[generationCount]
}

type generationCount struct {
	generation int32
	count      int32
}

// countMagic starts the assignment user data, so that data another
// strategy wrote is not taken for a count.
var countMagic = []byte("kftl-count-v1:")

func newCountedAssignments(inner sarama.BalanceStrategy, topic string, loads func(count int32) []int64) *countedAssignments {
	return &countedAssignments{inner: inner, topic: topic, loads: loads}
}

// countFor returns the count the leader assigned generation from, if this
// member's assignment of that generation carried one.
func (c *countedAssignments) countFor(generation int32) (int32, bool) {
	r := c.received.Load()
	if r == nil || r.generation != generation {
		return 0, false
	}
	return r.count, true
}

func (c *countedAssignments) Name() string { return c.inner.Name() }

func (c *countedAssignments) Plan(members map[string]sarama.ConsumerGroupMemberMetadata, topics map[string][]int32) (sarama.BalanceStrategyPlan, error) {
	count := int32(len(topics[c.topic]))
	c.planned.Store(count)
	if c.loads != nil && len(topics) == 1 {
		if loads := c.loads(count); slices.ContainsFunc(loads, func(l int64) bool { return l > 0 }) {
			return balancedPlan(members, c.topic, loads), nil
		}
	}
	return c.inner.Plan(members, topics)
}

func (c *countedAssignments) AssignmentData(memberID string, topics map[string][]int32, generationID int32) ([]byte, error) {
	data, err := c.inner.AssignmentData(memberID, topics, generationID)
	if err != nil {
		return nil, err
	}
	// The inner strategy's data follows the count, so that it gets it back
	// unchanged in OnAssignment.
	out := append(bytes.Clone(countMagic), 0, 0, 0, 0)
	binary.BigEndian.PutUint32(out[len(countMagic):], uint32(c.planned.Load()))
	return append(out, data...), nil
}

// OnAssignment takes the leader's count off the assignment before the
// inner strategy sees it.
func (c *countedAssignments) OnAssignment(assignment *sarama.ConsumerGroupMemberAssignment, generationID int32) {
	count, rest, ok := decodeCount(assignment.UserData)
	if ok {
		c.received.Store(&generationCount{generation: generationID, count: count})
		inner := *assignment
		inner.UserData = rest
		assignment = &inner
	}
	if o, ok := c.inner.(sarama.OnAssignmentBalanceStrategy); ok {
		o.OnAssignment(assignment, generationID)
	}
}

// decodeCount splits assignment user data into the count and the inner
// strategy's data; ok is false when it carries no count.
func decodeCount(data []byte) (count int32, rest []byte, ok bool) {
	body, found := bytes.CutPrefix(data, countMagic)
	if !found || len(body) < 4 {
		return 0, data, false
	}
	count = int32(binary.BigEndian.Uint32(body))
	if count < 1 {
		return 0, data, false
	}
	rest = body[4:]
	if len(rest) == 0 {
		rest = nil
	}
	return count, rest, true
}

func (c *countedAssignments) SupportedProtocols() []sarama.RebalanceProtocol {
	if p, ok := c.inner.(sarama.RebalanceProtocolBalanceStrategy); ok {
		return p.SupportedProtocols()
	}
	return []sarama.RebalanceProtocol{sarama.RebalanceProtocolEager}
}

func (c *countedAssignments) SubscriptionUserData(topics []string) ([]byte, error) {
	if s, ok := c.inner.(sarama.SubscriptionUserDataBalanceStrategy); ok {
		return s.SubscriptionUserData(topics)
	}
	return nil, nil
}
