package kafka

// Membership is this replica's seat among the replicas that share the
// monitored groups (coordination.group_id). Kafka's group protocol does the
// membership: the replicas are the members of one consumer group on a small
// coordination topic, each holds some of its partitions, and a monitored
// group belongs to the replica holding the partition its id hashes to
// (internal/ownership). Failure detection and handover are the coordinator's
// session timeout and rebalance.
//
// The contract every implementation keeps:
//   - Joining, rejoining and heartbeats happen in a goroutine of the
//     implementation's own, started when it is built and stopped by Close.
//   - Assignment never waits on the network.
//   - Close leaves the group, so that the others take over at once rather
//     than after the session timeout, and returns once every goroutine and
//     connection is gone.
type Membership interface {
	// Assignment returns what this replica holds now.
	Assignment() Assignment
	// Leave gives this replica's share up without stopping: it leaves the
	// group, so that the others take its groups over at once, and stays
	// out (Assignment not joined, with reason as its Err) until Rejoin.
	// It does not wait on the network.
	Leave(reason error)
	// Rejoin takes part again after Leave.
	Rejoin()
	// Weigh gives the monitored topics' loads, which the replica deals the
	// coordination partitions out by when it leads a rebalance; a replica
	// first joins once it has them (within a bound), an empty map saying
	// there is nothing to weigh. It keeps the map; nil is not known yet.
	Weigh(topicLoads map[string]int64)
	// Close leaves the group and stops.
	Close() error
}

// Assignment is what a replica holds at one instant.
type Assignment struct {
	// Joined is whether the replica is a member with a current assignment,
	// which may be empty (more replicas than coordination partitions).
	Joined bool
	// Partitions are the coordination partitions held, sorted.
	Partitions []int32
	// PartitionCount is the coordination topic's partition count, which
	// every replica hashes group ids onto.
	PartitionCount int32
	// MemberID and Generation are the coordinator's names for this member
	// and the group's current assignment round.
	MemberID   string
	Generation int32
	// Err is why the replica is not joined: the last failure to join or
	// stay joined. It is nil while joined, and while a first join is still
	// under way.
	Err error
}
