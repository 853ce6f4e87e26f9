package membership

import (
	"slices"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// loadsOf sums what each member holds of loads.
func loadsOf(plan map[string][]int32, members []string, loads []int64) []int64 {
	out := make([]int64, len(members))
	for i, m := range members {
		for _, p := range plan[m] {
			out[i] += loads[p]
		}
	}
	return out
}

// TestBalanceEvensLoadsThenCounts: every partition is dealt exactly once,
// the members' loads end as even as whole partitions allow, then their
// counts, and a partition stays with its holder unless moving it evens
// the loads out.
func TestBalanceEvensLoadsThenCounts(t *testing.T) {
	// Ten equal topics on twelve partitions: eight hold one, one two, three none.
	tenTopics := []int64{1, 0, 2, 1, 0, 1, 1, 0, 1, 1, 1, 1}
	for _, tc := range []struct {
		name      string
		members   []string
		owned     map[string][]int32
		loads     []int64
		wantLoads []int64
		wantCount []int
		// kept are partitions that must stay with their holder.
		kept map[string][]int32
	}{
		{
			name: "one member holds everything, a second joins", members: []string{"a", "b"},
			owned: map[string][]int32{"a": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
			loads: tenTopics, wantLoads: []int64{5, 5}, wantCount: []int{6, 6},
		},
		{
			name: "nobody holds anything", members: []string{"a", "b", "c", "d"},
			loads: tenTopics, wantLoads: []int64{3, 3, 2, 2}, wantCount: []int{3, 3, 3, 3},
		},
		{
			name: "nobody joins: nothing moves between holders", members: []string{"a", "b"},
			owned: map[string][]int32{"a": {0, 2, 3, 5, 6, 7}, "b": {1, 4, 8, 9, 10, 11}},
			loads: tenTopics, wantLoads: []int64{6, 4}, wantCount: []int{6, 6},
			kept: map[string][]int32{"a": {0, 2, 3, 5, 6, 7}, "b": {1, 4, 8, 9, 10, 11}},
		},
		{
			name: "a member leaves: its partitions go to the lightest, the others stay", members: []string{"a", "c"},
			owned: map[string][]int32{"a": {0, 2, 3, 4}, "b": {5, 6, 7, 8}, "c": {1, 9, 10, 11}},
			loads: tenTopics, wantLoads: []int64{5, 5}, wantCount: []int{6, 6},
			kept: map[string][]int32{"a": {0, 2, 3, 4}, "c": {1, 9, 10, 11}},
		},
		{
			name: "already even: nothing moves", members: []string{"a", "b"},
			owned: map[string][]int32{"a": {0, 1, 2, 3, 4, 5}, "b": {6, 7, 8, 9, 10, 11}},
			loads: tenTopics, wantLoads: []int64{5, 5}, wantCount: []int{6, 6},
			kept: map[string][]int32{"a": {0, 1, 2, 3, 4, 5}, "b": {6, 7, 8, 9, 10, 11}},
		},
		{
			name: "one topic outweighs the rest: it stays alone", members: []string{"a", "b"},
			owned: map[string][]int32{"a": {0, 1, 2, 3}},
			loads: []int64{100, 1, 1, 1}, wantLoads: []int64{100, 3}, wantCount: []int{1, 3},
		},
		{
			name: "a member gone, partitions out of range and claimed twice", members: []string{"a", "b"},
			owned: map[string][]int32{"a": {0, 1, 9}, "b": {1, 2}, "gone": {3}},
			loads: []int64{2, 2, 2, 2}, wantLoads: []int64{4, 4}, wantCount: []int{2, 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := balance(tc.members, tc.owned, tc.loads)
			var all []int32
			counts := make([]int, len(tc.members))
			for i, m := range tc.members {
				all = append(all, plan[m]...)
				counts[i] = len(plan[m])
			}
			slices.Sort(all)
			require.Len(t, all, len(tc.loads))
			require.Len(t, slices.Compact(all), len(tc.loads), "each partition dealt once")
			got := loadsOf(plan, tc.members, tc.loads)
			slices.Sort(got)
			want := slices.Clone(tc.wantLoads)
			slices.Sort(want)
			require.Equal(t, want, got, "loads held")
			slices.Sort(counts)
			wantCount := slices.Clone(tc.wantCount)
			slices.Sort(wantCount)
			require.Equal(t, wantCount, counts, "partitions held")
			for m, keep := range tc.kept {
				for _, p := range keep {
					require.Contains(t, plan[m], p, "%s keeps partition %d", m, p)
				}
			}
			require.Equal(t, plan, balance(tc.members, tc.owned, tc.loads), "deterministic")
		})
	}
}

// TestBalancedPlanWithholdsWhatMovesUntilGivenUp: a partition moving from
// one member to another is in neither's plan until its holder gives it
// up, then the next plan deals it to the member the loads call for.
func TestBalancedPlanWithholdsWhatMovesUntilGivenUp(t *testing.T) {
	loads := []int64{1, 0, 2, 1, 0, 1, 1, 0, 1, 1, 1, 1}
	all := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	members := map[string]sarama.ConsumerGroupMemberMetadata{
		"a": {Topics: []string{"coord"}, GenerationID: 1, OwnedPartitions: []*sarama.OwnedPartition{{Topic: "coord", Partitions: all}}},
		"b": {Topics: []string{"coord"}, GenerationID: -1},
	}
	first := balancedPlan(members, "coord", loads)
	require.Empty(t, first["b"]["coord"], "b gets nothing a still holds")
	require.Contains(t, first, "b", "every member has a plan, empty or not")
	kept := first["a"]["coord"]
	require.NotEmpty(t, kept)
	require.Less(t, len(kept), len(all))

	members["a"] = sarama.ConsumerGroupMemberMetadata{Topics: []string{"coord"}, GenerationID: 2, OwnedPartitions: []*sarama.OwnedPartition{{Topic: "coord", Partitions: kept}}}
	second := balancedPlan(members, "coord", loads)
	require.Equal(t, kept, second["a"]["coord"], "a keeps what it kept")
	got := loadsOf(map[string][]int32{"a": second["a"]["coord"], "b": second["b"]["coord"]}, []string{"a", "b"}, loads)
	require.Equal(t, []int64{5, 5}, got)
	require.Len(t, append(slices.Clone(second["a"]["coord"]), second["b"]["coord"]...), len(all))
}
