// Package groupview holds what a scrape found of a consumer group's health,
// as values for the writer to write: statuses, member assignments and
// partition owners. The health tracker (package health) judges them; the
// writer (package emit) only writes them.
package groupview

import "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"

// Status is a partition's or group's status, in increasing severity: a
// group's is the worst of its partitions', so the order is what max needs.
type Status int

const (
	// StatusUnknown is a partition's that nothing judges yet: no end offset
	// was read for it, now or in its window. It is below every status, so
	// that a group's worst is that of the partitions that were judged; it
	// is never written.
	StatusUnknown Status = iota - 1
	StatusOK
	StatusWarn
	StatusStall
	StatusStop
	StatusRewind
)

// Statuses lists every status, in order: kafka.consumer_group.status has one
// point per status.
var Statuses = []Status{StatusOK, StatusWarn, StatusStall, StatusStop, StatusRewind}

// String is the value of the metrics' status attribute.
func (s Status) String() string {
	switch s {
	case StatusWarn:
		return "WARN"
	case StatusStall:
		return "STALL"
	case StatusStop:
		return "STOP"
	case StatusRewind:
		return "REWIND"
	default:
		return "OK"
	}
}

// GroupHealth is one group's health after a scrape.
type GroupHealth struct {
	Group string
	// Described is false when the group could not be described in this
	// scrape: its state, members and assignment are then not known.
	Described   bool
	Description kafka.GroupDescription
	// Protocol is the last protocol the coordinator told: a classic group's
	// coordinator tells it only while the group is Stable.
	Protocol   string
	Rebalances int64
	// RebalancesSince is when Rebalances started counting (unix
	// nanoseconds): 0 for a group counted since the tracker's start, later
	// for a group first seen after the tracker's first scrape, or seen
	// again after it was forgotten, whose count started over.
	RebalancesSince int64
	// StatusKnown is false when the group's committed offsets could not be
	// read in this scrape (ObserveUnread): nothing is known of where it is;
	// and when an end offset of one of its partitions, or every one, was
	// not read (Unjudged).
	StatusKnown bool
	Status      Status // the worst of its partitions', when known
	// Unjudged: its commits were read, but not the end offset of every
	// partition it committed on (or it committed on none), so the group
	// was not judged.
	Unjudged bool
	// Assigned is the assignment by member of a described group whose
	// state is known, when the tracker sums them (SumAssignments).
	Assigned []MemberAssignment
	// Partitions is each partition's status, in the order of the lags
	// passed in. It is a buffer of the tracker's, valid until the next
	// ObserveGroup call, so that a scrape of many pairs allocates nothing
	// per group.
	Partitions []Status
	// Owners are who holds each partition of a described group, when the
	// scrape writes them (kafka.consumer_group.partition_owner).
	Owners []PartitionOwner
}

// MemberAssignment is the partitions assigned to the members sharing a
// client id, host and group.instance.id: the attributes of
// kafka.consumer_group.assigned_partitions, whose points must be unique.
type MemberAssignment struct {
	ClientID, Host, InstanceID string
	Partitions                 int64
}

// PartitionOwner is one partition of a group's assignment and the member
// holding it, by the attributes of kafka.consumer_group.partition_owner.
type PartitionOwner struct {
	kafka.TopicPartition
	ClientID, Host, InstanceID string
}
