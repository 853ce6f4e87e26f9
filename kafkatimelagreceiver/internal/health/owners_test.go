package health

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

func TestPartitionOwners(t *testing.T) {
	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: "t", Partition: p} }
	unknown := testMember("c", "")
	unknown.Assignment = []kafka.TopicPartition{tp(9)} // not told: ignored
	d := classicGroup(kafka.GroupStateStable, testMember("b", "static-b", 1, 3), testMember("a", "", 0, 2), unknown)
	require.Equal(t, []PartitionOwner{
		{TopicPartition: tp(0), ClientID: "client-a", Host: "10.0.0.1"},
		{TopicPartition: tp(1), ClientID: "client-b", Host: "10.0.0.1", InstanceID: "static-b"},
		{TopicPartition: tp(2), ClientID: "client-a", Host: "10.0.0.1"},
		{TopicPartition: tp(3), ClientID: "client-b", Host: "10.0.0.1", InstanceID: "static-b"},
	}, PartitionOwners(*d))
	require.Empty(t, PartitionOwners(*classicGroup(kafka.GroupStatePreparingRebalance, testMember("a", ""))))
}
