package health

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// membership is what the coordinator tells of a fixture's group at every
// scrape.
type membership int

const (
	membersPresent membership = iota // Stable, one member
	membersNone                      // Empty
	membersUnknown                   // never described
)

// rulePoint is one scrape's position of the group on the fixture's
// partition; a negative lag stands for an end offset that could not be read.
type rulePoint struct{ committed, lag int64 }

// TestRules proves Burrow's rules as the tracker applies them, in the style
// of Burrow's evaluator tests: each fixture is a partition's history, one
// point per scrape, on a window of 3 scrapes and a time-lag bound of 60 s;
// after the last scrape it names the rules that hold on the tracker's window
// and the status they give.
func TestRules(t *testing.T) {
	const window, maxTimeLag = 3, 60.0
	p := func(committed, lag int64) rulePoint { return rulePoint{committed, lag} }
	unread := func(committed int64) rulePoint { return rulePoint{committed, -1} }
	h := func(pts ...rulePoint) []rulePoint { return pts }
	tests := []struct {
		name    string
		history []rulePoint // oldest first
		members membership
		timeLag float64  // seconds, at every point; 0 when there is no estimate
		holds   []string // in the order the rules are applied
		want    Status
	}{
		{"one point, lagging", h(p(5, 3)), membersPresent, 0, nil, StatusOK},
		{"caught up, committed offset unchanged", h(p(5, 0), p(5, 0), p(5, 0)), membersPresent, 0, nil, StatusOK},
		{"no members, committed offset advancing", h(p(5, 3), p(6, 3), p(7, 3)), membersNone, 0, nil, StatusOK},
		{"stuck and lagging, members present", h(p(5, 3), p(5, 3), p(5, 4)), membersPresent, 0, []string{"stalled"}, StatusStall},
		{"stuck and lagging, members unknown", h(p(5, 3), p(5, 3), p(5, 4)), membersUnknown, 0, []string{"stalled"}, StatusStall},
		{"stuck and lagging, no members", h(p(5, 3), p(5, 3), p(5, 4)), membersNone, 0, []string{"stopped", "stalled"}, StatusStop},
		{"stuck on an incomplete window", h(p(5, 3), p(5, 3)), membersNone, 0, nil, StatusOK},
		{"stuck, caught up once in the window", h(p(5, 0), p(5, 3), p(5, 4)), membersNone, 0, nil, StatusOK},
		{"stuck before the window, advancing in it", h(p(5, 3), p(5, 3), p(5, 3), p(6, 3)), membersPresent, 0, nil, StatusOK},
		{"lag grows while stuck", h(p(5, 3), p(5, 4), p(5, 8)), membersPresent, 0, []string{"stalled"}, StatusStall},
		{"lag grows at every step while advancing", h(p(5, 3), p(6, 4), p(9, 8)), membersPresent, 0, []string{"lagGrowing"}, StatusWarn},
		{"lag grows, advancing in part of the window", h(p(5, 3), p(5, 4), p(6, 8)), membersPresent, 0, []string{"lagGrowing"}, StatusWarn},
		{"lag grows, then holds", h(p(5, 3), p(6, 4), p(9, 4)), membersPresent, 0, nil, StatusOK},
		{"lag grows on an incomplete window", h(p(5, 3), p(6, 4)), membersPresent, 0, nil, StatusOK},
		{"rewind on the second point", h(p(5, 3), p(2, 6)), membersPresent, 0, []string{"rewound"}, StatusRewind},
		{"rewind, then stuck with no members", h(p(5, 3), p(2, 6), p(2, 6)), membersNone, 0, []string{"rewound"}, StatusRewind},
		{"rewind leaves the window", h(p(5, 3), p(2, 6), p(3, 6), p(4, 6)), membersPresent, 0, nil, StatusOK},
		{"unread end offset leaves the window waiting", h(p(5, 3), p(5, 3), unread(5), p(5, 4)), membersNone, 0, []string{"stopped", "stalled"}, StatusStop},
		{"unread end offset last: the window still holds, the scrape judges nothing", h(p(5, 3), p(5, 3), p(5, 4), unread(5)), membersNone, 0, []string{"stopped", "stalled"}, StatusUnknown},
		{"time lag above the bound while the lag shrinks", h(p(5, 9), p(6, 4), p(9, 1)), membersPresent, 120, []string{"timeLagAboveBound"}, StatusWarn},
		{"time lag above the bound at the first point", h(p(5, 9)), membersPresent, 120, []string{"timeLagAboveBound"}, StatusWarn},
		{"time lag at the bound", h(p(5, 9)), membersPresent, 60, nil, StatusOK},
		{"time lag with the end offset never read judges nothing", h(unread(5)), membersPresent, 120, nil, StatusUnknown},
		{"time lag does not soften a stall", h(p(5, 3), p(5, 3), p(5, 3)), membersPresent, 120, []string{"stalled", "timeLagAboveBound"}, StatusStall},
		{"time lag does not soften a stop", h(p(5, 3), p(5, 3), p(5, 3)), membersNone, 120, []string{"stopped", "stalled", "timeLagAboveBound"}, StatusStop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(window, maxTimeLag)
			var gh GroupHealth
			var latest lag.PartitionLag
			for _, pt := range tt.history {
				latest = lag.PartitionLag{Group: "g", TopicPartition: kafka.TopicPartition{Topic: "t"}, Committed: pt.committed}
				if pt.lag >= 0 {
					latest.HasEnd, latest.End, latest.Lag = true, pt.committed+pt.lag, pt.lag
				}
				if tt.timeLag > 0 {
					latest.TimeLag, latest.HasTimeLag = tt.timeLag, true
				}
				var d kafka.GroupDescription
				switch tt.members {
				case membersPresent:
					d = *classicGroup(kafka.GroupStateStable, testMember("a", "", 0))
				case membersNone:
					d = *classicGroup(kafka.GroupStateEmpty)
				}
				tr.BeginScrape(0)
				gh = tr.ObserveGroup("g", d, tt.members != membersUnknown, []lag.PartitionLag{latest})
				tr.EndScrape()
			}

			pairs := tr.groups["g"].pairs
			_, tracked := pairs.At(0)
			w := *tracked
			noMembers := tt.members == membersNone
			var holds []string
			for _, r := range []struct {
				name  string
				holds bool
			}{
				{"rewound", rewound(w)},
				{"stopped", stopped(w, window, noMembers)},
				{"stalled", stalled(w, window)},
				{"lagGrowing", lagGrowing(w, window)},
				{"timeLagAboveBound", timeLagAboveBound(&latest, maxTimeLag)},
			} {
				if r.holds {
					holds = append(holds, r.name)
				}
			}
			require.Equal(t, tt.holds, holds, "the rules that hold")
			require.Equal(t, []Status{tt.want}, gh.Partitions)
			require.Equal(t, tt.want, gh.Status)
		})
	}
}

// partitionInput is a partition's window of points, as Burrow's rules
// define it, and what else its status is judged on.
type partitionInput struct {
	points         []lagPoint // the window, oldest first
	completeWindow int        // how many points make a complete window
	noMembers      bool       // the group is known to have no members
	timeLag        float64    // seconds, the latest
	hasTimeLag     bool
	maxTimeLag     float64 // seconds; 0 turns the check off
}

// status feeds the points to a lagWindow and judges it as the tracker does.
func (in partitionInput) status(t *testing.T) Status {
	t.Helper()
	require.LessOrEqual(t, len(in.points), max(in.completeWindow, 2), "the test's points are one window")
	var w lagWindow
	for _, p := range in.points {
		w.add(p, in.completeWindow)
	}
	latest := lag.PartitionLag{HasEnd: true, TimeLag: in.timeLag, HasTimeLag: in.hasTimeLag}
	return partitionStatus(w, in.completeWindow, in.noMembers, &latest, in.maxTimeLag)
}

func TestPartitionStatus(t *testing.T) {
	pts := func(pairs ...int64) []lagPoint { // committed, lag, committed, lag, ...
		var out []lagPoint
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, lagPoint{committed: pairs[i], lag: pairs[i+1]})
		}
		return out
	}
	tests := []struct {
		name string
		in   partitionInput
		want Status
	}{
		{"no history", partitionInput{completeWindow: 3}, StatusOK},
		{"incomplete window, stuck", partitionInput{points: pts(5, 3, 5, 3), completeWindow: 3, noMembers: true}, StatusOK},
		{"rewind needs two points only", partitionInput{points: pts(5, 3, 2, 6), completeWindow: 3}, StatusRewind},
		{"rewind beats stop", partitionInput{points: pts(5, 3, 2, 6, 2, 6), completeWindow: 3, noMembers: true}, StatusRewind},
		{"stuck and lagging, no members", partitionInput{points: pts(5, 3, 5, 3, 5, 4), completeWindow: 3, noMembers: true}, StatusStop},
		{"stuck and lagging, members", partitionInput{points: pts(5, 3, 5, 3, 5, 4), completeWindow: 3}, StatusStall},
		{"stuck, caught up once", partitionInput{points: pts(5, 0, 5, 3, 5, 4), completeWindow: 3, noMembers: true}, StatusOK},
		{"stuck but caught up", partitionInput{points: pts(5, 0, 5, 0, 5, 0), completeWindow: 3}, StatusOK},
		{"advancing, lag grows every step", partitionInput{points: pts(5, 3, 6, 4, 9, 8), completeWindow: 3}, StatusWarn},
		{"advancing, lag grows then holds", partitionInput{points: pts(5, 3, 6, 4, 9, 4), completeWindow: 3}, StatusOK},
		{"advancing, lag shrinks", partitionInput{points: pts(5, 9, 6, 4, 9, 1), completeWindow: 3}, StatusOK},
		{"advancing only in part of the window", partitionInput{points: pts(5, 3, 5, 4, 6, 8), completeWindow: 3}, StatusWarn},
		{
			"time lag over threshold while lag shrinks",
			partitionInput{points: pts(5, 9, 6, 4, 9, 1), completeWindow: 3, timeLag: 120, hasTimeLag: true, maxTimeLag: 60},
			StatusWarn,
		},
		{
			"time lag over threshold before the window is complete",
			partitionInput{points: pts(5, 9), completeWindow: 3, timeLag: 120, hasTimeLag: true, maxTimeLag: 60},
			StatusWarn,
		},
		{
			"time lag at threshold",
			partitionInput{points: pts(5, 9), completeWindow: 3, timeLag: 60, hasTimeLag: true, maxTimeLag: 60},
			StatusOK,
		},
		{
			"threshold off",
			partitionInput{points: pts(5, 9), completeWindow: 3, timeLag: 1e6, hasTimeLag: true},
			StatusOK,
		},
		{
			"no time lag estimate",
			partitionInput{points: pts(5, 9), completeWindow: 3, timeLag: 1e6, maxTimeLag: 60},
			StatusOK,
		},
		{
			"time lag does not soften a stall",
			partitionInput{points: pts(5, 3, 5, 3, 5, 3), completeWindow: 3, timeLag: 120, hasTimeLag: true, maxTimeLag: 60},
			StatusStall,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.in.status(t))
		})
	}
}

// TestMembersThatCannotBeListedNeverStop: STOP needs the coordinator to
// list the group's members and list none. A group stuck and lagging whose
// members cannot be listed at the last scrape is STALL however it was seen
// before: described in state Unknown (a KIP-848 group with a
// protocol_version below 3.7.0, or a ConsumerGroupDescribe that failed), or
// not described at all.
func TestMembersThatCannotBeListedNeverStop(t *testing.T) {
	const window = 3
	empty := *classicGroup(kafka.GroupStateEmpty)
	unknown := kafka.GroupDescription{State: kafka.GroupStateUnknown, Protocol: kafka.NextGenProtocol, Epoch: -1}
	type seen struct {
		d         kafka.GroupDescription
		described bool
	}
	for _, tt := range []struct {
		name    string
		history []seen // one per scrape, oldest first
		want    Status
	}{
		{"listed empty every scrape", []seen{{empty, true}, {empty, true}, {empty, true}}, StatusStop},
		{"state Unknown every scrape", []seen{{unknown, true}, {unknown, true}, {unknown, true}}, StatusStall},
		{"empty, then Unknown", []seen{{empty, true}, {empty, true}, {unknown, true}}, StatusStall},
		{"empty, then not described", []seen{{empty, true}, {empty, true}, {described: false}}, StatusStall},
		{"never described", []seen{{described: false}, {described: false}, {described: false}}, StatusStall},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(window, 0)
			var gh GroupHealth
			for _, s := range tt.history {
				stuck := lag.PartitionLag{Group: "g", TopicPartition: kafka.TopicPartition{Topic: "t"}, Committed: 5, HasEnd: true, End: 9, Lag: 4}
				tr.BeginScrape(0)
				gh = tr.ObserveGroup("g", s.d, s.described, []lag.PartitionLag{stuck})
				tr.EndScrape()
			}
			require.Equal(t, tt.want, gh.Status)
		})
	}
}
