package kafkatimelagreceiver

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

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
func (in partitionInput) status(t *testing.T) healthStatus {
	t.Helper()
	require.LessOrEqual(t, len(in.points), max(in.completeWindow, 2), "the test's points are one window")
	var w lagWindow
	for _, p := range in.points {
		w.add(p, in.completeWindow)
	}
	latest := partitionLag{hasEnd: true, timeLag: in.timeLag, hasTimeLag: in.hasTimeLag}
	return partitionStatus(w, in.completeWindow, in.noMembers, latest, in.maxTimeLag)
}

// windowStatus is Burrow's rules read straight off a window of points: the
// reference the run lengths of lagWindow must agree with.
func windowStatus(pts []lagPoint, window int, noMembers bool) healthStatus {
	for i := 1; i < len(pts); i++ {
		if pts[i].committed < pts[i-1].committed {
			return statusRewind
		}
	}
	if len(pts) < window || len(pts) < 2 {
		return statusOK
	}
	lagging, unchanged, growing := true, true, true
	for i, p := range pts {
		if p.lag <= 0 {
			lagging = false
		}
		if i > 0 {
			if p.committed != pts[i-1].committed {
				unchanged = false
			}
			if p.lag <= pts[i-1].lag {
				growing = false
			}
		}
	}
	switch {
	case lagging && unchanged && noMembers:
		return statusStop
	case lagging && unchanged:
		return statusStall
	case !unchanged && growing:
		return statusWarn
	}
	return statusOK
}

// The tracker keeps run lengths, not the window's points: on random
// histories its status must be the one read off the last window of points.
func TestLagWindowMatchesWindowOfPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20000 {
		window := 2 + rng.IntN(6)
		noMembers := rng.IntN(2) == 0
		var w lagWindow
		var history []lagPoint
		committed, lag := int64(rng.IntN(5)), int64(rng.IntN(3))
		for range 1 + rng.IntN(25) {
			// Small steps, so that equal offsets and equal lags are common.
			switch rng.IntN(6) {
			case 0:
				committed -= int64(rng.IntN(3))
			case 1, 2:
				committed += int64(rng.IntN(3))
			}
			lag = max(0, lag+int64(rng.IntN(5))-2)
			p := lagPoint{committed: committed, lag: lag}
			w.add(p, window)
			history = append(history, p)
			last := history[max(0, len(history)-window):]
			require.Equal(t, windowStatus(last, window, noMembers), w.status(window, noMembers),
				"trial %d, window %d, no members %v, history %v", trial, window, noMembers, history)
		}
	}
}

// partitionHealth is one group's status on one partition after a scrape.
type partitionHealth struct {
	group string
	topicPartition
	status healthStatus
}

// healthInput is what one scrape observed.
type healthInput struct {
	groups    []string                    // the groups the scrape reports on
	described map[string]groupDescription // the groups described in the scrape
	lags      []partitionLag              // sorted by group, topic, partition
}

// observe runs one scrape through the tracker as the scraper does: group by
// group in name order, every group of in.groups and of in.lags, returning
// the health of in.groups.
func (t *healthTracker) observe(in healthInput) ([]groupHealth, []partitionHealth) {
	names := append([]string(nil), in.groups...)
	byGroup := map[string][]partitionLag{}
	for _, pl := range in.lags {
		byGroup[pl.group] = append(byGroup[pl.group], pl)
		names = append(names, pl.group)
	}
	reported := map[string]bool{}
	for _, g := range in.groups {
		reported[g] = true
	}
	var groups []groupHealth
	var partitions []partitionHealth
	t.beginScrape()
	for _, name := range dedupeStrings(names) {
		d, ok := in.described[name]
		gh := t.observeGroup(name, d, ok, byGroup[name], func(pl partitionLag, st healthStatus) {
			partitions = append(partitions, partitionHealth{pl.group, pl.topicPartition, st})
		})
		if reported[name] {
			groups = append(groups, gh)
		}
	}
	t.endScrape()
	return groups, partitions
}

func TestParseGroupState(t *testing.T) {
	for in, want := range map[string]groupState{
		"Stable":              groupStateStable,
		"PreparingRebalance":  groupStatePreparingRebalance,
		"CompletingRebalance": groupStateCompletingRebalance,
		"AwaitingSync":        groupStateCompletingRebalance,
		"Empty":               groupStateEmpty,
		"Dead":                groupStateDead,
		"Assigning":           groupStatePreparingRebalance,
		"Reconciling":         groupStateCompletingRebalance,
		"":                    groupStateUnknown,
		"NotReady":            groupStateUnknown,
	} {
		require.Equal(t, want, parseGroupState(in), in)
	}
	// Every state and status has its attribute value: the points of a
	// StateSet are never recorded with an empty attribute.
	for _, st := range groupStates {
		_, ok := metadata.MapAttributeState[st.String()]
		require.True(t, ok, st.String())
	}
	for _, st := range healthStatuses {
		_, ok := metadata.MapAttributeStatus[st.String()]
		require.True(t, ok, st.String())
	}
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
		want healthStatus
	}{
		{"no history", partitionInput{completeWindow: 3}, statusOK},
		{"incomplete window, stuck", partitionInput{points: pts(5, 3, 5, 3), completeWindow: 3, noMembers: true}, statusOK},
		{"rewind needs two points only", partitionInput{points: pts(5, 3, 2, 6), completeWindow: 3}, statusRewind},
		{"rewind beats stop", partitionInput{points: pts(5, 3, 2, 6, 2, 6), completeWindow: 3, noMembers: true}, statusRewind},
		{"stuck and lagging, no members", partitionInput{points: pts(5, 3, 5, 3, 5, 4), completeWindow: 3, noMembers: true}, statusStop},
		{"stuck and lagging, members", partitionInput{points: pts(5, 3, 5, 3, 5, 4), completeWindow: 3}, statusStall},
		{"stuck, caught up once", partitionInput{points: pts(5, 0, 5, 3, 5, 4), completeWindow: 3, noMembers: true}, statusOK},
		{"stuck but caught up", partitionInput{points: pts(5, 0, 5, 0, 5, 0), completeWindow: 3}, statusOK},
		{"advancing, lag grows every step", partitionInput{points: pts(5, 3, 6, 4, 9, 8), completeWindow: 3}, statusWarn},
		{"advancing, lag grows then holds", partitionInput{points: pts(5, 3, 6, 4, 9, 4), completeWindow: 3}, statusOK},
		{"advancing, lag shrinks", partitionInput{points: pts(5, 9, 6, 4, 9, 1), completeWindow: 3}, statusOK},
		{"advancing only in part of the window", partitionInput{points: pts(5, 3, 5, 4, 6, 8), completeWindow: 3}, statusWarn},
		{
			"time lag over threshold while lag shrinks",
			partitionInput{points: pts(5, 9, 6, 4, 9, 1), completeWindow: 3, timeLag: 120, hasTimeLag: true, maxTimeLag: 60},
			statusWarn,
		},
		{
			"time lag over threshold before the window is complete",
			partitionInput{points: pts(5, 9), completeWindow: 3, timeLag: 120, hasTimeLag: true, maxTimeLag: 60},
			statusWarn,
		},
		{
			"time lag at threshold",
			partitionInput{points: pts(5, 9), completeWindow: 3, timeLag: 60, hasTimeLag: true, maxTimeLag: 60},
			statusOK,
		},
		{
			"threshold off",
			partitionInput{points: pts(5, 9), completeWindow: 3, timeLag: 1e6, hasTimeLag: true},
			statusOK,
		},
		{
			"no time lag estimate",
			partitionInput{points: pts(5, 9), completeWindow: 3, timeLag: 1e6, maxTimeLag: 60},
			statusOK,
		},
		{
			"time lag does not soften a stall",
			partitionInput{points: pts(5, 3, 5, 3, 5, 3), completeWindow: 3, timeLag: 120, hasTimeLag: true, maxTimeLag: 60},
			statusStall,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.in.status(t))
		})
	}
}

// member builds a group member; instance may be empty, partitions nil means
// the assignment is unknown.
func testMember(id, instance string, partitions ...int32) groupMember {
	m := groupMember{memberID: id, clientID: "client-" + id, host: "10.0.0.1", instanceID: instance}
	if partitions != nil {
		m.assignmentKnown = true
		for _, p := range partitions {
			m.assignment = append(m.assignment, topicPartition{"t", p})
		}
	}
	return m
}

func classicGroup(state groupState, members ...groupMember) *groupDescription {
	return &groupDescription{state: state, protocol: "range", epoch: -1, members: members}
}

func nextGenGroup(state groupState, epoch int32, members ...groupMember) *groupDescription {
	return &groupDescription{state: state, protocol: nextGenProtocol, epoch: epoch, members: members}
}

func TestRebalanceCounting(t *testing.T) {
	a := testMember("a", "", 0, 1)
	aAll := testMember("a", "", 0, 1, 2, 3)
	b := testMember("b", "", 2, 3)
	aUnknown := testMember("a", "")
	bUnknown := testMember("b", "")
	tests := []struct {
		name  string
		scans []*groupDescription // nil: not described in that scrape
		want  int64
	}{
		{"first sight of a stable group", []*groupDescription{classicGroup(groupStateStable, a)}, 0},
		{"first sight of a rebalance", []*groupDescription{classicGroup(groupStatePreparingRebalance, aUnknown)}, 1},
		{"nothing changes", []*groupDescription{classicGroup(groupStateStable, aAll), classicGroup(groupStateStable, aAll), classicGroup(groupStateStable, aAll)}, 0},
		{"join seen only settled", []*groupDescription{classicGroup(groupStateStable, aAll), classicGroup(groupStateStable, a, b)}, 1},
		{
			"join seen in progress over several scrapes",
			[]*groupDescription{
				classicGroup(groupStateStable, aAll),
				classicGroup(groupStatePreparingRebalance, aUnknown),
				classicGroup(groupStatePreparingRebalance, aUnknown, bUnknown),
				classicGroup(groupStateCompletingRebalance, aUnknown, bUnknown),
				classicGroup(groupStateStable, a, b),
			},
			1,
		},
		{
			"join then leave",
			[]*groupDescription{
				classicGroup(groupStateStable, aAll),
				classicGroup(groupStatePreparingRebalance, aUnknown, bUnknown),
				classicGroup(groupStateStable, a, b),
				classicGroup(groupStateStable, a, b),
				classicGroup(groupStateStable, aAll),
			},
			2,
		},
		{"last member leaves", []*groupDescription{classicGroup(groupStateStable, aAll), classicGroup(groupStateEmpty)}, 1},
		{"empty stays empty", []*groupDescription{classicGroup(groupStateEmpty), classicGroup(groupStateEmpty)}, 0},
		{"first member joins an empty group", []*groupDescription{classicGroup(groupStateEmpty), classicGroup(groupStateStable, aAll)}, 1},
		{"assignment moves, same members", []*groupDescription{classicGroup(groupStateStable, a, b), classicGroup(groupStateStable, testMember("a", "", 0, 2), testMember("b", "", 1, 3))}, 1},
		{"dynamic member restarts with a new member id", []*groupDescription{classicGroup(groupStateStable, aAll), classicGroup(groupStateStable, testMember("a2", "", 0, 1, 2, 3))}, 1},
		{
			"static member restarts with a new member id",
			[]*groupDescription{
				classicGroup(groupStateStable, testMember("s-1", "inst", 0, 1), b),
				classicGroup(groupStateStable, testMember("s-2", "inst", 0, 1), b),
			},
			0,
		},
		{
			"a scrape without description changes nothing",
			[]*groupDescription{classicGroup(groupStateStable, aAll), nil, classicGroup(groupStateStable, aAll)},
			0,
		},
		{
			"unknown state changes nothing",
			[]*groupDescription{classicGroup(groupStateStable, aAll), {state: groupStateUnknown, epoch: -1}, classicGroup(groupStateStable, aAll)},
			0,
		},
		{"KIP-848 epoch bumps count each", []*groupDescription{nextGenGroup(groupStateStable, 3, a), nextGenGroup(groupStateStable, 3, a), nextGenGroup(groupStateStable, 5, a, b)}, 2},
		{"KIP-848 first sight counts nothing", []*groupDescription{nextGenGroup(groupStateCompletingRebalance, 7, a)}, 0},
		{"KIP-848 group recreated", []*groupDescription{nextGenGroup(groupStateStable, 9, a), nextGenGroup(groupStateStable, 1, a), nextGenGroup(groupStateStable, 2, a)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newHealthTracker(3, 0)
			var got []groupHealth
			for _, d := range tt.scans {
				in := healthInput{groups: []string{"g"}}
				if d != nil {
					in.described = map[string]groupDescription{"g": *d}
				}
				got, _ = tr.observe(in)
			}
			require.Len(t, got, 1)
			require.Equal(t, tt.want, got[0].rebalances)
		})
	}
}

func TestHealthTrackerStatuses(t *testing.T) {
	tr := newHealthTracker(2, 0)
	lag := func(group, topic string, p int32, committed, end int64) partitionLag {
		return partitionLag{group: group, topicPartition: topicPartition{topic, p}, committed: committed, hasEnd: true, end: end, lag: max(0, end-committed)}
	}
	observe := func(lags []partitionLag, described map[string]groupDescription) (map[string]groupHealth, map[partitionHealth]bool) {
		groups, partitions := tr.observe(healthInput{groups: []string{"gone", "live", "idle"}, described: described, lags: lags})
		byName := map[string]groupHealth{}
		for _, g := range groups {
			byName[g.group] = g
		}
		set := map[partitionHealth]bool{}
		for _, p := range partitions {
			set[p] = true
		}
		return byName, set
	}
	described := map[string]groupDescription{
		"gone": *classicGroup(groupStateEmpty),
		"live": *classicGroup(groupStateStable, testMember("a", "", 0, 1)),
	}
	observe([]partitionLag{lag("gone", "t", 0, 5, 9), lag("gone", "t", 1, 9, 9), lag("live", "t", 0, 5, 9), lag("live", "t", 1, 1, 9)}, described)
	groups, partitions := observe([]partitionLag{
		lag("gone", "t", 0, 5, 10), lag("gone", "t", 1, 9, 9),
		lag("live", "t", 0, 5, 10), lag("live", "t", 1, 0, 9),
	}, described)
	require.Equal(t, statusStop, groups["gone"].status, "the worst partition decides")
	require.Equal(t, statusRewind, groups["live"].status)
	require.Equal(t, statusOK, groups["idle"].status, "a group without partitions is OK")
	require.False(t, groups["idle"].described)
	require.True(t, partitions[partitionHealth{"gone", topicPartition{"t", 0}, statusStop}])
	require.True(t, partitions[partitionHealth{"gone", topicPartition{"t", 1}, statusOK}])
	require.True(t, partitions[partitionHealth{"live", topicPartition{"t", 0}, statusStall}])
	require.True(t, partitions[partitionHealth{"live", topicPartition{"t", 1}, statusRewind}])

	// A partition whose end offset could not be read keeps its window.
	unread := lag("gone", "t", 0, 5, 0)
	unread.hasEnd, unread.lag = false, 0
	groups, _ = observe([]partitionLag{unread}, nil)
	require.Equal(t, statusStop, groups["gone"].status, "the window is not reset by a missing read")
	require.True(t, groups["gone"].rebalances == 0)
}

func TestHealthTrackerForgets(t *testing.T) {
	tr := newHealthTracker(3, 0)
	tp := topicPartition{"t", 0}
	stuck := partitionLag{group: "g", topicPartition: tp, committed: 1, hasEnd: true, end: 5, lag: 4}
	empty := map[string]groupDescription{"g": *classicGroup(groupStateEmpty)}
	stable := map[string]groupDescription{"g": *classicGroup(groupStateStable, testMember("a", "", 0))}

	tr.observe(healthInput{groups: []string{"g"}, described: empty, lags: []partitionLag{stuck}})
	tr.observe(healthInput{groups: []string{"g"}, described: stable, lags: []partitionLag{stuck}})
	// Missing from one scrape: kept.
	tr.observe(healthInput{groups: []string{"other"}})
	groups, partitions := tr.observe(healthInput{groups: []string{"g"}, described: stable, lags: []partitionLag{stuck}})
	require.Equal(t, int64(1), groups[0].rebalances)
	require.Equal(t, statusStall, partitions[0].status, "three points survived a scrape without the group")

	// Missing from two: dropped, so it starts over.
	tr.observe(healthInput{groups: []string{"other"}})
	tr.observe(healthInput{groups: []string{"other"}})
	require.NotContains(t, tr.groups, "g")
	groups, partitions = tr.observe(healthInput{groups: []string{"g"}, described: stable, lags: []partitionLag{stuck}})
	require.Equal(t, int64(0), groups[0].rebalances)
	require.Equal(t, statusOK, partitions[0].status)

	// A partition the group stopped committing on goes too.
	other := partitionLag{group: "g", topicPartition: topicPartition{"u", 0}, hasEnd: true}
	tr.observe(healthInput{groups: []string{"g"}, lags: []partitionLag{other}})
	tr.observe(healthInput{groups: []string{"g"}, lags: []partitionLag{other}})
	for _, p := range tr.groups["g"].pairs {
		require.NotEqual(t, tp, p.topicPartition)
	}

	// Churn does not grow it: every scrape has new groups and partitions.
	tr = newHealthTracker(3, 0)
	for i := range 1000 {
		name := fmt.Sprintf("churn-%d", i)
		tr.observe(healthInput{
			groups:    []string{name},
			described: map[string]groupDescription{name: *classicGroup(groupStateStable, testMember("m", "", 0))},
			lags:      []partitionLag{{group: name, topicPartition: topicPartition{name, 0}, hasEnd: true}},
		})
		require.LessOrEqual(t, len(tr.groups), forgetAfter)
	}
}

func TestAssignedPartitions(t *testing.T) {
	d := groupDescription{state: groupStateStable, epoch: -1, members: []groupMember{
		{memberID: "1", clientID: "app", host: "h1", assignment: []topicPartition{{"t", 0}, {"t", 1}}, assignmentKnown: true},
		{memberID: "2", clientID: "app", host: "h1", assignment: []topicPartition{{"t", 2}}, assignmentKnown: true},
		{memberID: "3", clientID: "app", host: "h2", instanceID: "i-3", assignmentKnown: true},
		{memberID: "4", clientID: "other", host: "h1"},
	}}
	require.Equal(t, []memberAssignment{
		{clientID: "app", host: "h1", partitions: 3},
		{clientID: "app", host: "h2", instanceID: "i-3", partitions: 0},
	}, assignedPartitions(d))
}

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
	require.Equal(t, groupDescription{
		state: groupStateStable, protocol: "cooperative-sticky", epoch: -1,
		members: []groupMember{
			{memberID: "m-1", clientID: "c1", host: "host/10.0.0.1", assignmentKnown: true},
			{memberID: "m-2", clientID: "c2", host: "10.0.0.2", instanceID: "inst-1", assignmentKnown: true,
				assignment: []topicPartition{{"a", 3}, {"b", 0}, {"b", 1}}},
		},
	}, d)

	// Outside Stable the coordinator sends no assignment: it is unknown, not empty.
	gd.State, gd.Protocol = "PreparingRebalance", ""
	d, err = classicDescription(gd)
	require.NoError(t, err)
	require.Equal(t, groupStatePreparingRebalance, d.state)
	require.False(t, d.members[1].assignmentKnown)

	// A garbled assignment is an error, the rest of the group still counts.
	gd.State = "Stable"
	gd.Members["m-2"].MemberAssignment = []byte{0, 1, 0}
	d, err = classicDescription(gd)
	require.ErrorContains(t, err, `member "m-2"`)
	require.Len(t, d.members, 2)
	require.False(t, d.members[1].assignmentKnown)
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
	require.Equal(t, groupDescription{
		state: groupStateCompletingRebalance, protocol: "consumer", epoch: 4,
		members: []groupMember{{
			memberID: "m", clientID: "c", host: "10.0.0.3", instanceID: "inst", assignmentKnown: true,
			assignment: []topicPartition{{"t", 0}, {"t", 2}},
		}},
	}, d)
}

func TestStatusConfigValidate(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.Equal(t, StatusConfig{Window: 10, MaxTimeLag: 0}, cfg.Status)
	require.NoError(t, cfg.Validate())

	cfg.Status = StatusConfig{Window: 2, MaxTimeLag: time.Minute}
	require.NoError(t, cfg.Validate())

	cfg.Status.Window = 1
	require.ErrorContains(t, cfg.Validate(), "status.window")
	cfg.Status = StatusConfig{Window: 10, MaxTimeLag: -time.Second}
	require.ErrorContains(t, cfg.Validate(), "status.max_time_lag")
}
