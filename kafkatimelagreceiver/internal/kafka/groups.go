package kafka

// GroupState is a consumer group's state in the classic protocol's words.
// The order is the order of the kafka.consumer_group.state points.
type GroupState int

const (
	GroupStateStable GroupState = iota
	GroupStatePreparingRebalance
	GroupStateCompletingRebalance
	GroupStateEmpty
	GroupStateDead
	GroupStateUnknown
)

// GroupStates lists every state, in order.
var GroupStates = []GroupState{
	GroupStateStable, GroupStatePreparingRebalance, GroupStateCompletingRebalance,
	GroupStateEmpty, GroupStateDead, GroupStateUnknown,
}

// ParseGroupState reads the state a coordinator reports. KIP-848 groups have
// states of their own; they are folded into the classic ones so that
// kafka.consumer_group.state keeps one fixed set of series: Assigning (the
// coordinator is computing a new target assignment) is the rebalance being
// prepared, Reconciling (members are revoking and taking partitions to reach
// it) is the rebalance completing.
func ParseGroupState(s string) GroupState {
	switch s {
	case "Stable":
		return GroupStateStable
	case "PreparingRebalance", "Assigning":
		return GroupStatePreparingRebalance
	// AwaitingSync is what Kafka before 1.1 called CompletingRebalance.
	case "CompletingRebalance", "AwaitingSync", "Reconciling":
		return GroupStateCompletingRebalance
	case "Empty":
		return GroupStateEmpty
	case "Dead":
		return GroupStateDead
	default:
		return GroupStateUnknown
	}
}

func (s GroupState) String() string {
	switch s {
	case GroupStateStable:
		return "Stable"
	case GroupStatePreparingRebalance:
		return "PreparingRebalance"
	case GroupStateCompletingRebalance:
		return "CompletingRebalance"
	case GroupStateEmpty:
		return "Empty"
	case GroupStateDead:
		return "Dead"
	default:
		return "Unknown"
	}
}

// Rebalancing tells whether the group is between two assignments.
func (s GroupState) Rebalancing() bool {
	return s == GroupStatePreparingRebalance || s == GroupStateCompletingRebalance
}

// Settled states are those in which the membership and assignment the
// coordinator reports are the group's current ones.
func (s GroupState) Settled() bool {
	return s == GroupStateStable || s == GroupStateEmpty || s == GroupStateDead
}

// GroupDescription is what the coordinator says about a group.
type GroupDescription struct {
	// State is GroupStateUnknown when the group could not be described:
	// then the members are unknown too, not absent.
	State GroupState
	// Protocol is the assignor the members agreed on (range, roundrobin,
	// sticky, cooperative-sticky, ...), or NextGenProtocol for a KIP-848
	// group. A classic group's coordinator tells it only while Stable.
	Protocol string
	// Epoch is a KIP-848 group's epoch, which the coordinator bumps at every
	// change of membership or subscription; -1 for classic groups, whose
	// generation the admin API does not report.
	Epoch   int32
	Members []GroupMember
}

// NextGenProtocol is the protocol of KIP-848 groups, whose assignment is
// computed by the coordinator rather than a client assignor.
const NextGenProtocol = "consumer"

// GroupMember is one member of a group.
type GroupMember struct {
	MemberID   string
	ClientID   string
	Host       string
	InstanceID string // group.instance.id; empty for a dynamic member
	// Assignment is the member's partitions, sorted. A classic group's
	// coordinator returns them only while Stable: AssignmentKnown says
	// whether it did.
	Assignment      []TopicPartition
	AssignmentKnown bool
}
