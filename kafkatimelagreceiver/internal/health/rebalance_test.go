package health

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// testMember builds a group member; instance may be empty, partitions nil
// means the assignment is unknown.
func testMember(id, instance string, partitions ...int32) kafka.GroupMember {
	m := kafka.GroupMember{MemberID: id, ClientID: "client-" + id, Host: "10.0.0.1", InstanceID: instance}
	if partitions != nil {
		m.AssignmentKnown = true
		for _, p := range partitions {
			m.Assignment = append(m.Assignment, kafka.TopicPartition{Topic: "t", Partition: p})
		}
	}
	return m
}

func classicGroup(state kafka.GroupState, members ...kafka.GroupMember) *kafka.GroupDescription {
	return &kafka.GroupDescription{State: state, Protocol: "range", Epoch: -1, Members: members}
}

func nextGenGroup(state kafka.GroupState, epoch int32, members ...kafka.GroupMember) *kafka.GroupDescription {
	return &kafka.GroupDescription{State: state, Protocol: kafka.NextGenProtocol, Epoch: epoch, Members: members}
}

func TestRebalanceCounting(t *testing.T) {
	a := testMember("a", "", 0, 1)
	aAll := testMember("a", "", 0, 1, 2, 3)
	b := testMember("b", "", 2, 3)
	aUnknown := testMember("a", "")
	bUnknown := testMember("b", "")
	const (
		stable       = kafka.GroupStateStable
		preparing    = kafka.GroupStatePreparingRebalance
		completing   = kafka.GroupStateCompletingRebalance
		empty        = kafka.GroupStateEmpty
		unknownState = kafka.GroupStateUnknown
	)
	tests := []struct {
		name  string
		scans []*kafka.GroupDescription // nil: not described in that scrape
		want  int64
	}{
		{"first sight of a stable group", []*kafka.GroupDescription{classicGroup(stable, a)}, 0},
		{"first sight of a rebalance", []*kafka.GroupDescription{classicGroup(preparing, aUnknown)}, 1},
		{"nothing changes", []*kafka.GroupDescription{classicGroup(stable, aAll), classicGroup(stable, aAll), classicGroup(stable, aAll)}, 0},
		{"join seen only settled", []*kafka.GroupDescription{classicGroup(stable, aAll), classicGroup(stable, a, b)}, 1},
		{
			"join seen in progress over several scrapes",
			[]*kafka.GroupDescription{
				classicGroup(stable, aAll),
				classicGroup(preparing, aUnknown),
				classicGroup(preparing, aUnknown, bUnknown),
				classicGroup(completing, aUnknown, bUnknown),
				classicGroup(stable, a, b),
			},
			1,
		},
		{
			"join then leave",
			[]*kafka.GroupDescription{
				classicGroup(stable, aAll),
				classicGroup(preparing, aUnknown, bUnknown),
				classicGroup(stable, a, b),
				classicGroup(stable, a, b),
				classicGroup(stable, aAll),
			},
			2,
		},
		{"last member leaves", []*kafka.GroupDescription{classicGroup(stable, aAll), classicGroup(empty)}, 1},
		{"empty stays empty", []*kafka.GroupDescription{classicGroup(empty), classicGroup(empty)}, 0},
		{"first member joins an empty group", []*kafka.GroupDescription{classicGroup(empty), classicGroup(stable, aAll)}, 1},
		{"assignment moves, same members", []*kafka.GroupDescription{classicGroup(stable, a, b), classicGroup(stable, testMember("a", "", 0, 2), testMember("b", "", 1, 3))}, 1},
		{"dynamic member restarts with a new member id", []*kafka.GroupDescription{classicGroup(stable, aAll), classicGroup(stable, testMember("a2", "", 0, 1, 2, 3))}, 1},
		{
			"static member restarts with a new member id",
			[]*kafka.GroupDescription{
				classicGroup(stable, testMember("s-1", "inst", 0, 1), b),
				classicGroup(stable, testMember("s-2", "inst", 0, 1), b),
			},
			0,
		},
		{
			"a scrape without description changes nothing",
			[]*kafka.GroupDescription{classicGroup(stable, aAll), nil, classicGroup(stable, aAll)},
			0,
		},
		{
			"unknown state changes nothing",
			[]*kafka.GroupDescription{classicGroup(stable, aAll), {State: unknownState, Epoch: -1}, classicGroup(stable, aAll)},
			0,
		},
		{"KIP-848 epoch bumps count each", []*kafka.GroupDescription{nextGenGroup(stable, 3, a), nextGenGroup(stable, 3, a), nextGenGroup(stable, 5, a, b)}, 2},
		{"KIP-848 first sight counts nothing", []*kafka.GroupDescription{nextGenGroup(completing, 7, a)}, 0},
		{"KIP-848 epoch jump to the int32 limit (a hostile broker)", []*kafka.GroupDescription{nextGenGroup(stable, 1, a), nextGenGroup(stable, math.MaxInt32, a)}, maxEpochStep},
		{"KIP-848 group recreated", []*kafka.GroupDescription{nextGenGroup(stable, 9, a), nextGenGroup(stable, 1, a), nextGenGroup(stable, 2, a)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(3, 0)
			var got []GroupHealth
			for _, d := range tt.scans {
				in := healthInput{groups: []string{"g"}}
				if d != nil {
					in.described = map[string]kafka.GroupDescription{"g": *d}
				}
				got, _ = tr.observe(in)
			}
			require.Len(t, got, 1)
			require.Equal(t, tt.want, got[0].Rebalances)
		})
	}
}
