package membership

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// The leader's count rides in front of the inner strategy's assignment
// data and is taken off before the inner strategy sees it; data without
// the marker (another release's leader) carries no count.
func TestAssignmentsCarryTheLeadersCount(t *testing.T) {
	leader := newCountedAssignments(sarama.NewBalanceStrategyCooperativeSticky(), "coord", nil)
	members := map[string]sarama.ConsumerGroupMemberMetadata{"m1": {Topics: []string{"coord"}}}
	_, err := leader.Plan(members, map[string][]int32{"coord": {0, 1, 2, 3, 4, 5, 6, 7}})
	require.NoError(t, err)
	data, err := leader.AssignmentData("m1", map[string][]int32{"coord": {0, 1}}, 5)
	require.NoError(t, err)

	member := newCountedAssignments(sarama.NewBalanceStrategyCooperativeSticky(), "coord", nil)
	_, ok := member.countFor(5)
	require.False(t, ok, "no assignment received yet")
	member.OnAssignment(&sarama.ConsumerGroupMemberAssignment{UserData: data}, 5)
	count, ok := member.countFor(5)
	require.True(t, ok)
	require.Equal(t, int32(8), count)
	_, ok = member.countFor(6)
	require.False(t, ok, "a count is for its generation only")

	member.OnAssignment(&sarama.ConsumerGroupMemberAssignment{UserData: []byte("sticky data")}, 6)
	_, ok = member.countFor(6)
	require.False(t, ok, "foreign user data is no count")
	_, rest, ok := decodeCount(append(append([]byte{}, data...), "inner"...))
	require.True(t, ok)
	require.Equal(t, []byte("inner"), rest)
}
