package membership

import (
	"context"

	"github.com/IBM/sarama"
	"go.uber.org/zap"
)

// setSession and clearSession follow the consumer group's session, which
// Assignment reads.
func (m *Member) setSession(sess sarama.ConsumerGroupSession) {
	m.mu.Lock()
	m.session, m.lastErr = sess, nil
	m.mu.Unlock()
	m.logger.Info("coordination: joined the replicas' group",
		zap.String("group", m.settings.GroupID), zap.String("member", sess.MemberID()), zap.Int32("generation", sess.GenerationID()))
}

func (m *Member) clearSession(sess sarama.ConsumerGroupSession) {
	m.mu.Lock()
	if m.session == sess {
		m.session = nil
	}
	m.mu.Unlock()
}

// claimHandler tracks the session; the claims themselves need no work.
type claimHandler struct {
	m     *Member
	group sarama.ConsumerGroup
}

func (h *claimHandler) Setup(sess sarama.ConsumerGroupSession) error {
	h.m.setSession(sess)
	return nil
}

// Cleanup ends the session; a heartbeat that failed (after sarama's
// retries) is its cause.
func (h *claimHandler) Cleanup(sess sarama.ConsumerGroupSession) error {
	h.m.clearSession(sess)
	h.m.refused(context.Cause(sess.Context()))
	return nil
}

// ConsumeClaim is not called for the coordination topic (see holdOnly); if
// it were, it would hold the partition until it is revoked or the session
// ends, paused so that it sends no fetches.
func (h *claimHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	h.group.Pause(map[string][]int32{claim.Topic(): {claim.Partition()}})
	for {
		select {
		case _, ok := <-claim.Messages():
			if !ok {
				return nil
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

// holdOnly is the membership's client as its consumer group sees it: the
// coordination topic's partitions are never readable, so a claim only
// waits, until it is revoked or the session ends, and never consumes. A
// claim that consumed would read the partition's end offsets and fetch
// from its leader, and any failure there (a failed log directory, a leader
// election outlasting the retries) ends the whole session: the member
// rejoins, the group rebalances, and every replica's groups flicker. The
// member needs only the assignment.
type holdOnly struct {
	sarama.Client
	topic string
}

// PartitionNotReadable is what sarama's consumer group session waits on
// before it consumes a claim.
func (c holdOnly) PartitionNotReadable(topic string, partition int32) bool {
	return topic == c.topic || c.Client.PartitionNotReadable(topic, partition)
}
