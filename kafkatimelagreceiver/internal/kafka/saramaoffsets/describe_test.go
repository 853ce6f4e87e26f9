package saramaoffsets

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

func TestClassicDescription(t *testing.T) {
	assignment := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{
		{Topic: "b", Partitions: []int32{1, 0}},
		{Topic: "a", Partitions: []int32{3}},
	}}
	instance := "inst-1"
	gd := &sarama.GroupDescription{
		GroupId:      "g",
		State:        "Stable",
		ProtocolType: "consumer",
		Protocol:     "cooperative-sticky",
		Members: map[string]*sarama.GroupMemberDescription{
			"m-2": {MemberId: "m-2", ClientId: "c2", ClientHost: "/10.0.0.2", GroupInstanceId: &instance, MemberAssignment: assignment.AppendTo(nil)},
			"m-1": {MemberId: "m-1", ClientId: "c1", ClientHost: "host/10.0.0.1"},
		},
	}
	d, err := classicDescription(gd)
	require.NoError(t, err)
	require.Equal(t, kafka.GroupDescription{
		State: kafka.GroupStateStable, Protocol: "cooperative-sticky", Epoch: -1,
		Members: []kafka.GroupMember{
			{MemberID: "m-1", ClientID: "c1", Host: "host/10.0.0.1", AssignmentKnown: true},
			{MemberID: "m-2", ClientID: "c2", Host: "10.0.0.2", InstanceID: "inst-1", AssignmentKnown: true,
				Assignment: []kafka.TopicPartition{{Topic: "a", Partition: 3}, {Topic: "b", Partition: 0}, {Topic: "b", Partition: 1}}},
		},
	}, d)

	// Outside Stable the coordinator sends no assignment: it is unknown, not empty.
	gd.State, gd.Protocol = "PreparingRebalance", ""
	d, err = classicDescription(gd)
	require.NoError(t, err)
	require.Equal(t, kafka.GroupStatePreparingRebalance, d.State)
	require.False(t, d.Members[1].AssignmentKnown)

	// A garbled assignment is an error, the rest of the group still counts.
	gd.State = "Stable"
	gd.Members["m-2"].MemberAssignment = []byte{0, 1, 0}
	d, err = classicDescription(gd)
	require.ErrorContains(t, err, `member "m-2"`)
	require.Len(t, d.Members, 2)
	require.False(t, d.Members[1].AssignmentKnown)
}

func TestNextGenDescription(t *testing.T) {
	instance := "inst"
	d := nextGenDescription(sarama.ConsumerGroupDescription{
		GroupID: "g", GroupState: "Reconciling", GroupEpoch: 4,
		Members: []sarama.ConsumerGroupMemberDescription{{
			MemberID: "m", ClientID: "c", ClientHost: "/10.0.0.3", InstanceID: &instance,
			Assignment: sarama.ConsumerGroupAssignment{TopicPartitions: []sarama.ConsumerGroupTopicPartitions{
				{TopicName: "t", Partitions: []int32{2, 0}},
			}},
		}},
	})
	require.Equal(t, kafka.GroupDescription{
		State: kafka.GroupStateCompletingRebalance, Protocol: "consumer", Epoch: 4,
		Members: []kafka.GroupMember{{
			MemberID: "m", ClientID: "c", Host: "10.0.0.3", InstanceID: "inst", AssignmentKnown: true,
			Assignment: []kafka.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 2}},
		}},
	}, d)
}
