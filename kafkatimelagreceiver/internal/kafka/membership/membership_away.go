package membership

import (
	"context"
	"errors"

	"github.com/IBM/sarama"
	"go.uber.org/zap"
)

// Leave gives this replica's share up without stopping: the session in
// flight ends, the loop leaves the group (so that the others take over at
// once, not after the session timeout) and stays out, with reason as
// Assignment's Err, until Rejoin. It does no network I/O itself.
func (m *Member) Leave(reason error) {
	if reason == nil {
		return
	}
	m.mu.Lock()
	if m.away != nil {
		m.mu.Unlock()
		return
	}
	m.away = reason
	end := m.endSession
	m.mu.Unlock()
	if end != nil {
		end()
	}
}

// Rejoin takes part again after Leave.
func (m *Member) Rejoin() {
	m.mu.Lock()
	was := m.away
	m.away = nil
	m.mu.Unlock()
	if was == nil {
		return
	}
	select {
	case m.rejoin <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// stayAway, while the replica stands down, leaves the group, closes the
// connections and waits for Rejoin; it returns ctx's error when Close ends
// the wait, nil when the replica may take part.
func (m *Member) stayAway(ctx context.Context) error {
	left := false
	for {
		m.mu.Lock()
		away := m.away
		var group sarama.ConsumerGroup
		var client sarama.Client
		if away != nil && !left && !m.closing {
			group, client = m.group, m.client
			m.group, m.client = nil, nil
		}
		m.mu.Unlock()
		if away == nil {
			return nil
		}
		if !left {
			left = true
			m.leaveGroup(group, client, away)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.rejoin: // checked again above: a stale wake-up only loops
		}
	}
}

// leaveGroup sends LeaveGroup (sarama's Close of the group) and closes the
// client, so that nothing of this member stays with the coordinator.
func (m *Member) leaveGroup(group sarama.ConsumerGroup, client sarama.Client, reason error) {
	var errs []error
	if group != nil {
		errs = append(errs, group.Close())
	}
	if client != nil {
		if err := client.Close(); !errors.Is(err, sarama.ErrClosedClient) {
			errs = append(errs, err)
		}
	}
	m.logger.Warn("coordination: left the replicas' group, so that the others take over this replica's groups; it rejoins once it reads again",
		zap.String("group", m.settings.GroupID), zap.NamedError("reason", reason), zap.NamedError("leave_error", errors.Join(errs...)))
}
