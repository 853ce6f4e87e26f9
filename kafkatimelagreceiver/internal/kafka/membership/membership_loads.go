package membership

import (
	"context"
	"time"
)

// Weigh gives the monitored topics' loads (their work, in any unit the
// same for all) that this member deals the coordination partitions out by
// when it leads a rebalance. It keeps the map; the caller must not change
// it after.
func (m *Member) Weigh(topicLoads map[string]int64) {
	m.topicLoads.Store(&topicLoads)
	if topicLoads != nil {
		m.weighOnce.Do(func() { close(m.weighed) })
	}
}

// awaitLoads waits up to Settings.LoadsWait for the first Weigh; false
// when ctx ended first.
func (m *Member) awaitLoads(ctx context.Context) bool {
	if m.settings.LoadsWait <= 0 {
		return true
	}
	wait := time.NewTimer(m.settings.LoadsWait)
	defer wait.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-m.weighed:
	case <-wait.C:
	}
	return true
}

// partitionLoads are the loads of the count coordination partitions: each
// the sum of the topics' that hash to it; nil when none is known.
func (m *Member) partitionLoads(count int32) []int64 {
	topics := m.topicLoads.Load()
	if topics == nil || m.settings.PartitionOf == nil || count < 1 {
		return nil
	}
	loads := make([]int64, count)
	for topic, load := range *topics {
		loads[m.settings.PartitionOf(topic, count)] += max(load, 0)
	}
	return loads
}
