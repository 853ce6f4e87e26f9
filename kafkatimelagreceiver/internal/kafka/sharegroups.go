package kafka

import (
	"context"
	"errors"
	"time"
)

// ShareGroups is what the receiver asks of Kafka about share groups
// (KIP-932): groups whose members read the same partitions cooperatively and
// acknowledge records one by one, like a queue. They are not consumer groups:
// ListGroups lists them only by type, and DescribeGroups and OffsetFetch do
// not describe them.
//
// It keeps the Cluster contract: one request per broker or coordinator per
// call, what could be read returned together with per-item errors
// (GroupError, TopicError, wrapping AuthorizationError when an ACL refused),
// ctx and a deadline of its own on every network call.
//
// A cluster that cannot serve share groups (brokers without the APIs, a
// protocol_version older than they need, or a client setting the share-group
// client cannot honour) makes every method return an error wrapping
// ErrShareGroupsUnsupported and nothing else. Finding that out costs one
// request, not one per call: the receiver says so once and carries on with
// consumer groups.
type ShareGroups interface {
	// ShareGroups lists the ids of every share group the brokers know,
	// sorted.
	ShareGroups(ctx context.Context) ([]string, error)
	// DescribeShareGroups reads the state and members of the groups, keyed
	// by group; groups that could not be described are absent. A group that
	// no longer exists is Dead, without members.
	DescribeShareGroups(ctx context.Context, groups []string) (map[string]ShareGroupDescription, error)
	// ShareGroupOffsets reads where each group stands on the partitions it
	// has state for, keyed by group: one request per coordinator for all its
	// groups. Partitions whose start offset is not initialized yet are
	// absent; so are groups whose read failed, and partitions whose state
	// the coordinator could not give (a PartitionError each).
	ShareGroupOffsets(ctx context.Context, groups []string) (map[string]ShareGroupOffsets, error)
	// Close ends every connection; later calls fail.
	Close() error
}

// ErrShareGroupsUnsupported is wrapped by the error of every ShareGroups
// call on a cluster, or with a configuration, that cannot read share groups;
// the error's message says why.
var ErrShareGroupsUnsupported = errors.New("share groups (KIP-932) cannot be read")

// ShareGroupStates lists the states of a share group, in the order of the
// kafka.share_group.state points. Share groups have no rebalance: the
// coordinator assigns partitions to members as they come and go.
// ParseGroupState reads them.
var ShareGroupStates = []GroupState{GroupStateStable, GroupStateEmpty, GroupStateDead, GroupStateUnknown}

// ShareGroupDescription is what the coordinator says about a share group.
type ShareGroupDescription struct {
	State GroupState
	// Epoch is the group epoch, which the coordinator bumps at every change
	// of membership or subscription.
	Epoch   int32
	Members []ShareGroupMember
}

// ShareGroupMember is one member of a share group. Several members may be
// assigned the same partition.
type ShareGroupMember struct {
	MemberID string
	ClientID string
	Host     string
	RackID   string
	// Assignment is the member's partitions, sorted.
	Assignment []TopicPartition
}

// ShareOffset is where a share group stands on one partition.
type ShareOffset struct {
	TopicPartition
	// StartOffset is the share-partition start offset (SPSO): every record
	// before it is finished (acknowledged, rejected or archived); the record
	// at it is the oldest the group has not finished.
	StartOffset int64
	LeaderEpoch int32
	// Lag is the broker's count of records from StartOffset to the end
	// offset not finished yet (KIP-1226), or -1 when the broker does not
	// give it (DescribeShareGroupOffsets v0).
	Lag int64
	// TopicID is the id of the topic the state is of, as the coordinator
	// gave it (zero: not given): a topic deleted and created again under
	// the same name is another log, and the state of the old one says
	// nothing of it.
	TopicID TopicID
}

// ShareGroupOffsets are one share group's offsets, sorted by (topic,
// partition). Sent and Received bracket the request: the offsets were true
// at some instant between them.
type ShareGroupOffsets struct {
	Partitions []ShareOffset
	Sent       time.Time
	Received   time.Time
}
