package health

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

func TestAssignedPartitions(t *testing.T) {
	d := kafka.GroupDescription{State: kafka.GroupStateStable, Epoch: -1, Members: []kafka.GroupMember{
		{MemberID: "1", ClientID: "app", Host: "h1", Assignment: []kafka.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}, AssignmentKnown: true},
		{MemberID: "2", ClientID: "app", Host: "h1", Assignment: []kafka.TopicPartition{{Topic: "t", Partition: 2}}, AssignmentKnown: true},
		{MemberID: "3", ClientID: "app", Host: "h2", InstanceID: "i-3", AssignmentKnown: true},
		{MemberID: "4", ClientID: "other", Host: "h1"},
	}}
	require.Equal(t, []MemberAssignment{
		{ClientID: "app", Host: "h1", Partitions: 3},
		{ClientID: "app", Host: "h2", InstanceID: "i-3", Partitions: 0},
	}, AssignedPartitions(d))
}
