//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
)

// The replica test's timing: one scrape round per interval, and a session
// timeout the in-process coordinator accepts (kfake.GroupMinSessionTimeout).
const (
	replicaInterval = time.Second
	replicaSession  = time.Second
	replicaGroups   = 24
	coordGroup      = "lag-replicas"
)

// replicaFixture is a cluster with replicaGroups groups, each committed on
// a topic of its own (2 partitions) and on one partition of a shared topic,
// over records with known timestamps: every time lag is exact (a record
// read), so each reported one can be checked.
type replicaFixture struct {
	k *testKafka
	// recordTime is each record's timestamp by partition and offset.
	recordTime map[kafka.TopicPartition][]time.Time
	// committed is each group's commits.
	committed map[string]map[kafka.TopicPartition]int64
}

func newReplicaFixture(t *testing.T) *replicaFixture {
	k := newTestKafka(t, 3, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	f := &replicaFixture{k: k, recordTime: map[kafka.TopicPartition][]time.Time{}, committed: map[string]map[kafka.TopicPartition]int64{}}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	fill := func(topic string, partitions int32) {
		k.CreateTopic(topic, partitions)
		for p := range partitions {
			tp := kafka.TopicPartition{Topic: topic, Partition: p}
			for i := range 5 {
				f.recordTime[tp] = append(f.recordTime[tp], base.Add(time.Duration(i+int(p))*time.Minute))
			}
			k.Produce(topic, p, f.recordTime[tp]...)
		}
	}
	fill("shared", 3)
	for i := range replicaGroups {
		group, topic := fmt.Sprintf("group-%02d", i), fmt.Sprintf("topic-%02d", i)
		fill(topic, 2)
		k.Commit(group, topic, map[int32]int64{0: 1, 1: 3})
		k.Commit(group, "shared", map[int32]int64{int32(i % 3): int64(i % 5)})
		f.committed[group] = map[kafka.TopicPartition]int64{
			{Topic: topic, Partition: 0}:               1,
			{Topic: topic, Partition: 1}:               3,
			{Topic: "shared", Partition: int32(i % 3)}: int64(i % 5),
		}
	}
	return f
}

// partitionsWithCommits is every partition some group commits on.
func (f *replicaFixture) partitionsWithCommits() map[kafka.TopicPartition]bool {
	out := map[kafka.TopicPartition]bool{}
	for _, offsets := range f.committed {
		for tp := range offsets {
			out[tp] = true
		}
	}
	return out
}

// replica is one running receiver of the set.
type replica struct {
	name      string
	scraper   *timeLagScraper
	telemetry *componenttest.Telemetry
	killed    bool
	// mayFail: its scrapes may fail (a replica the test breaks).
	mayFail bool
}

func (f *replicaFixture) startReplica(t *testing.T, name string) *replica {
	t.Helper()
	return f.startReplicaWith(t, name, nil)
}

// replicaConfig is the configuration of the replica named name: the
// fixture's cluster, coordination group and short intervals.
func (f *replicaFixture) replicaConfig(name string) *Config {
	cfg := f.k.testConfig()
	cfg.ClientID = "replica-" + name
	cfg.CollectionInterval = replicaInterval
	cfg.Coordination.GroupID = coordGroup
	cfg.Coordination.TopicPartitions = 12
	cfg.Coordination.SessionTimeout = replicaSession
	cfg.Coordination.HeartbeatInterval = 100 * time.Millisecond
	return cfg
}

// startReplicaWith starts a replica whose configuration adjust changes
// first (nil: the fixture's).
func (f *replicaFixture) startReplicaWith(t *testing.T, name string, adjust func(*Config)) *replica {
	t.Helper()
	cfg := f.replicaConfig(name)
	if adjust != nil {
		adjust(cfg)
	}
	require.NoError(t, cfg.Validate())
	tt := componenttest.NewTelemetry()
	s, err := newTimeLagScraper(cfg, metadatatest.NewSettings(tt), nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	r := &replica{name: name, scraper: s, telemetry: tt}
	t.Cleanup(func() {
		if !r.killed {
			require.NoError(t, s.shutdown(context.Background()))
		}
		require.NoError(t, tt.Shutdown(context.Background()))
	})
	return r
}

// kill stops a replica the way SIGKILL would look to the coordinator: it
// stops heartbeating and its connections close, but no LeaveGroup arrives
// (the test swallows it), so the others take over only when its session
// expires.
func (f *replicaFixture) kill(t *testing.T, r *replica) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := f.k.Admin.DescribeGroups(ctx, coordGroup)
	require.NoError(t, err)
	var member string
	for _, m := range described[coordGroup].Members {
		if m.ClientID == "replica-"+r.name {
			member = m.MemberID
		}
	}
	require.NotEmpty(t, member, "replica %s is a member of %s", r.name, coordGroup)
	f.k.Cluster.ControlKey(int16(kmsg.LeaveGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		leave := req.(*kmsg.LeaveGroupRequest)
		if len(leave.Members) != 1 || leave.Members[0].MemberID != member {
			return nil, nil, false
		}
		resp := leave.ResponseKind().(*kmsg.LeaveGroupResponse)
		m := kmsg.NewLeaveGroupResponseMember()
		m.MemberID = member
		resp.Members = append(resp.Members, m)
		return resp, nil, true
	})
	r.killed = true
	require.NoError(t, r.scraper.shutdown(context.Background()))
}

// round is what one scrape of every live replica reported.
type round struct {
	n  int
	at time.Duration // since the test started
	// groups and gauges map each group, and each partition with a
	// per-partition gauge, to the replicas that reported it.
	groups map[string][]string
	gauges map[kafka.TopicPartition][]string
	// pairs map each (group, partition) with a lag to the replicas that
	// reported it.
	pairs map[string][]string
	note  string
}

func (r round) missing(expected []string) []string {
	var out []string
	for _, g := range expected {
		if len(r.groups[g]) == 0 {
			out = append(out, g)
		}
	}
	return out
}

func (r round) twice() []string {
	var out []string
	for g, by := range r.groups {
		if len(by) > 1 {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

func (r round) String() string {
	perReplica := map[string]int{}
	for _, by := range r.groups {
		for _, name := range by {
			perReplica[name]++
		}
	}
	var shares []string
	for _, name := range slices.Sorted(maps.Keys(perReplica)) {
		shares = append(shares, fmt.Sprintf("%s:%d", name, perReplica[name]))
	}
	gaugedTwice := 0
	for _, by := range r.gauges {
		if len(by) > 1 {
			gaugedTwice++
		}
	}
	return fmt.Sprintf("round %02d +%5.1fs  groups by replica [%s]  missing %d  twice %d  partitions gauged %d (twice %d)  %s",
		r.n, r.at.Seconds(), strings.Join(shares, " "), len(r.missing(groupNames())), len(r.twice()), len(r.gauges), gaugedTwice, r.note)
}

func groupNames() []string {
	out := make([]string, replicaGroups)
	for i := range out {
		out[i] = fmt.Sprintf("group-%02d", i)
	}
	return out
}

// scrapeRound scrapes every replica at once and checks each point against
// the fixture: a replica samples only its groups' partitions and those it
// gauges, and every time lag is exact.
func (f *replicaFixture) scrapeRound(t *testing.T, n int, started time.Time, replicas []*replica) round {
	t.Helper()
	r := round{n: n, at: time.Since(started), groups: map[string][]string{}, gauges: map[kafka.TopicPartition][]string{}, pairs: map[string][]string{}}
	outputs := make([]pmetric.Metrics, len(replicas))
	errs := make([]error, len(replicas))
	var wg sync.WaitGroup
	for i, rep := range replicas {
		wg.Go(func() {
			// Bounded by the configuration's timeout, as the scraper
			// controller bounds it, rather than by one (short) interval.
			ctx, cancel := context.WithTimeout(context.Background(), rep.scraper.cfg.Timeout)
			defer cancel()
			outputs[i], errs[i] = rep.scraper.scrape(ctx)
		})
	}
	wg.Wait()
	for i, rep := range replicas {
		if !rep.mayFail {
			require.NoError(t, errs[i], "replica %s, round %d", rep.name, n)
		}
		// A group's own series (status) come from the owner of its home
		// topic; its per-partition ones from each topic's owner.
		groups := map[string]bool{}
		for key := range pointsOf(outputs[i], "kafka.consumer_group.status") {
			if key.group != coordGroup {
				groups[key.group] = true
			}
		}
		for key := range pointsOf(outputs[i], "kafka.consumer_group.lag") {
			pair := fmt.Sprintf("%s %s/%d", key.group, key.topic, key.partition)
			r.pairs[pair] = append(r.pairs[pair], rep.name)
		}
		for key, p := range pointsOf(outputs[i], "kafka.consumer_group.time_lag") {
			tp := kafka.TopicPartition{Topic: key.topic, Partition: int32(key.partition)}
			c := f.committed[key.group][tp]
			want := p.timestamp.Sub(f.recordTime[tp][c]).Seconds()
			require.InDelta(t, want, p.doubleValue, 0.002, "replica %s, round %d: time lag of %v", rep.name, n, key)
		}
		for group := range groups {
			r.groups[group] = append(r.groups[group], rep.name)
		}
		mine := map[kafka.TopicPartition]bool{}
		for group := range groups {
			for tp := range f.committed[group] {
				mine[tp] = true
			}
		}
		for key := range pointsOf(outputs[i], "kafka.partition.current_offset") {
			tp := kafka.TopicPartition{Topic: key.topic, Partition: int32(key.partition)}
			mine[tp] = true
			r.gauges[tp] = append(r.gauges[tp], rep.name)
		}
		if len(mine) == 0 {
			continue // not joined yet: nothing was read
		}
		// What it samples: the partitions of its topics with a commit and
		// those its groups commit on, no more.
		tracked := lastGauge(t, rep.telemetry, "otelcol_kafka_time_lag_tracked_partitions")
		require.Equal(t, int64(len(mine)), tracked, "replica %s tracks only its groups' partitions", rep.name)
		// Its share counts every group it reports, the coordination group
		// (members, no commits) included when it falls to it.
		reported := maps.Clone(groups)
		for key := range pointsOf(outputs[i], "kafka.consumer_group.status") {
			reported[key.group] = true
		}
		require.Equal(t, int64(len(reported)), lastGauge(t, rep.telemetry, "otelcol_kafka_time_lag_coordination_groups"), "replica %s", rep.name)
	}
	return r
}

func lastGauge(t *testing.T, tt *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tt.GetMetric(name)
	require.NoError(t, err, name)
	dps := m.Data.(metricdata.Gauge[int64]).DataPoints
	require.Len(t, dps, 1, name)
	return dps[0].Value
}

// requireExactlyOnce fails unless every group, every pair and every partition with a
// commit was reported by exactly one replica.
func (f *replicaFixture) requireExactlyOnce(t *testing.T, r round, partitions map[kafka.TopicPartition]bool) {
	t.Helper()
	require.Empty(t, r.missing(groupNames()), "%s: groups nobody reported", r)
	require.Empty(t, r.twice(), "%s: groups reported twice", r)
	require.Len(t, r.gauges, len(partitions), "%s: every partition gauged", r)
	for tp, by := range r.gauges {
		require.Len(t, by, 1, "%s: %v gauged by %v", r, tp, by)
	}
	pairs := 0
	for _, offsets := range f.committed {
		pairs += len(offsets)
	}
	require.Len(t, r.pairs, pairs, "%s: every pair's lag reported", r)
	for pair, by := range r.pairs {
		require.Len(t, by, 1, "%s: %s reported by %v", r, pair, by)
	}
}

// owners maps each group to the replica that reported it (first one).
func owners(r round) map[string]string {
	out := map[string]string{}
	for g, by := range r.groups {
		out[g] = by[0]
	}
	return out
}

// TestReplicasShareGroups runs three receivers sharing the groups through
// Kafka's group membership, kills one without a LeaveGroup and adds
// another, and checks coverage round by round: with all replicas live,
// every group and every partition's gauges come from exactly one replica;
// a killed replica's groups come back within the session timeout plus two
// intervals, with exact time lag from the first round; during a handover a
// group is missing in at most one round and reported twice in at most one;
// groups move only when membership changes.
func TestReplicasShareGroups(t *testing.T) {
	f := newReplicaFixture(t)
	partitions := f.partitionsWithCommits()
	started := time.Now()
	live := []*replica{f.startReplica(t, "a"), f.startReplica(t, "b"), f.startReplica(t, "c")}
	n := 0
	var rounds []round
	next := func(note string) round {
		time.Sleep(time.Until(started.Add(time.Duration(n) * replicaInterval)))
		r := f.scrapeRound(t, n, started, live)
		r.note = note
		t.Log(r)
		rounds = append(rounds, r)
		n++
		return r
	}

	// Start: wait until the three have split the groups.
	for ; ; next("starting") {
		if len(rounds) > 0 {
			last := rounds[len(rounds)-1]
			if len(last.missing(groupNames())) == 0 && len(last.twice()) == 0 && len(owners(last)) == replicaGroups && countReplicas(last) == 3 {
				break
			}
		}
		require.Less(t, n, 30, "the three replicas never split the groups")
	}
	steady := rounds[len(rounds)-1]
	for range 3 {
		r := next("steady")
		f.requireExactlyOnce(t, r, partitions)
		require.Equal(t, owners(steady), owners(r), "groups moved without a membership change")
	}

	// Kill b.
	victim := live[1]
	victimGroups := groupsOf(owners(steady), victim.name)
	generation := live[0].scraper.membership.Assignment().Generation
	survivorsHoldAll := whenHeld(t, []*replica{live[0], live[2]}, holdEvery(generation))
	killedAt := time.Now()
	f.kill(t, victim)
	live = []*replica{live[0], live[2]}
	failoverBound := replicaSession + 2*replicaInterval
	firstHandover := len(rounds)
	for time.Since(killedAt) < failoverBound+3*replicaInterval {
		r := next("after killing b")
		require.Empty(t, r.twice(), "%s: nothing is reported twice when a replica dies", r)
		for g, by := range owners(steady) {
			if by != victim.name {
				require.Contains(t, r.groups[g], by, "%s: survivors keep their own groups throughout", r)
			}
		}
	}
	tookOver := time.Duration(-1)
	for _, r := range rounds[firstHandover:] {
		if len(r.missing(groupNames())) == 0 {
			tookOver = started.Add(r.at).Sub(killedAt)
			break
		}
	}
	handedOver := survivorsHoldAll()
	t.Logf("failover: the survivors held every coordination partition %.2fs after the kill, and reported b's %d groups %.1fs after it (bound on the handover: session timeout %s + 2 x interval %s = %s)",
		handedOver.Sub(killedAt).Seconds(), len(victimGroups), tookOver.Seconds(), replicaSession, replicaInterval, failoverBound)
	require.Positive(t, tookOver, "b's groups were never taken over")
	// The handover is the membership's (the coordinator notices the dead
	// member within its session timeout, the survivors rejoin at their
	// next heartbeat), measured as it happens; the scrapes' part is exact:
	// the first round after it reports every group.
	require.LessOrEqual(t, handedOver.Sub(killedAt), failoverBound, "the survivors hold b's partitions within the session timeout and two intervals")
	require.Empty(t, firstRoundFrom(t, rounds[firstHandover:], started, handedOver).missing(groupNames()),
		"the first round after the survivors hold every partition reports every group")
	afterKill := rounds[len(rounds)-1]
	f.requireExactlyOnce(t, afterKill, partitions)
	requireHandoverBounds(t, rounds[firstHandover:], victimGroups)

	// Add d.
	generation = live[0].scraper.membership.Assignment().Generation
	joinedAt := time.Now()
	live = append(live, f.startReplica(t, "d"))
	dHolds := whenHeld(t, live, holdEvery(generation))
	firstJoin := len(rounds)
	for time.Since(joinedAt) < failoverBound+3*replicaInterval {
		next("after adding d")
	}
	var tookShare time.Duration = -1
	for _, r := range rounds[firstJoin:] {
		if countReplicas(r) == 3 {
			tookShare = started.Add(r.at).Sub(joinedAt)
			break
		}
	}
	shared := dHolds()
	t.Logf("join: the three held every coordination partition %.2fs after d started, and d reported its first groups %.1fs after it (bound on the handover %s)",
		shared.Sub(joinedAt).Seconds(), tookShare.Seconds(), failoverBound)
	require.Positive(t, tookShare, "d never took a share")
	require.LessOrEqual(t, shared.Sub(joinedAt), failoverBound, "d joins and the three rebalance within the session timeout and two intervals")
	require.Equal(t, 3, countReplicas(firstRoundFrom(t, rounds[firstJoin:], started, shared)),
		"the first round after the three hold every partition has d reporting its share")
	requireHandoverBounds(t, rounds[firstJoin:], nil)

	final := rounds[len(rounds)-1]
	require.NotEmpty(t, groupsOf(owners(final), "d"))
	for range 3 {
		r := next("steady")
		f.requireExactlyOnce(t, r, partitions)
		require.Equal(t, owners(final), owners(r), "groups moved without a membership change")
	}
}

// requireHandoverBounds: after a membership change, each group is missing
// in at most one round and reported twice in at most one, except the dead
// replica's groups (dead), which may be missing until they are taken over
// but never again after. From the last round on, coverage is exact.
func requireHandoverBounds(t *testing.T, rounds []round, dead []string) {
	t.Helper()
	for _, g := range groupNames() {
		missing, twice, back := 0, 0, false
		for _, r := range rounds {
			by := r.groups[g]
			switch {
			case len(by) == 0 && slices.Contains(dead, g) && !back:
			case len(by) == 0:
				missing++
			case len(by) > 1:
				twice++
			}
			if len(by) > 0 {
				back = true
			}
		}
		require.LessOrEqual(t, missing, 1, "group %s missing in %d rounds of the handover", g, missing)
		require.LessOrEqual(t, twice, 1, "group %s reported twice in %d rounds of the handover", g, twice)
	}
}

func groupsOf(owners map[string]string, replica string) []string {
	var out []string
	for g, by := range owners {
		if by == replica {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// whenHeld polls, without a request (Assignment never waits on the
// network), the replicas' assignments from now on, and returns a function
// that says when they first met held: the instant the membership handed
// over, measured apart from the scrape rounds, so that a bound on the
// handover does not depend on where it fell between two rounds.
func whenHeld(t *testing.T, replicas []*replica, held func([]kafka.Assignment) bool) func() time.Time {
	t.Helper()
	found := make(chan time.Time, 1)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			as := make([]kafka.Assignment, len(replicas))
			for i, r := range replicas {
				as[i] = r.scraper.membership.Assignment()
			}
			if held(as) {
				found <- time.Now()
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	return func() time.Time {
		t.Helper()
		select {
		case at := <-found:
			return at
		default:
			t.Fatal("the replicas' assignments never met the condition")
			return time.Time{}
		}
	}
}

// holdEvery tells whether the assignments are all joined, of one
// generation after after, and together hold every coordination partition.
func holdEvery(after int32) func([]kafka.Assignment) bool {
	return func(as []kafka.Assignment) bool {
		held := map[int32]bool{}
		for _, a := range as {
			if !a.Joined || a.Generation <= after || a.Generation != as[0].Generation {
				return false
			}
			for _, p := range a.Partitions {
				held[p] = true
			}
		}
		return len(as) > 0 && len(held) == int(as[0].PartitionCount)
	}
}

// firstRoundFrom is the first of the rounds that began at or after at.
func firstRoundFrom(t *testing.T, rounds []round, started, at time.Time) round {
	t.Helper()
	for _, r := range rounds {
		if !started.Add(r.at).Before(at) {
			return r
		}
	}
	t.Fatalf("no round began after %s", at)
	return round{}
}

func countReplicas(r round) int {
	seen := map[string]bool{}
	for _, by := range r.groups {
		for _, name := range by {
			seen[name] = true
		}
	}
	return len(seen)
}

// TestReplicaAttributeOnlyWhenAsked: kafka.time_lag.replica (the host name)
// is on every resource only when enabled, so that by default a group's
// series do not change name when it moves to another replica.
func TestReplicaAttributeOnlyWhenAsked(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("orders", 1)
	k.Produce("orders", 0, time.Now().Add(-time.Minute), time.Now())
	k.Commit("billing", "orders", map[int32]int64{0: 1})
	host := replicaName()
	require.NotEmpty(t, host)
	for _, enabled := range []bool{false, true} {
		cfg := k.testConfig()
		cfg.ResourceAttributes.KafkaTimeLagReplica.Enabled = enabled
		md, err := startScraper(t, cfg).scrape(context.Background())
		require.NoError(t, err)
		require.Positive(t, md.ResourceMetrics().Len())
		for i := range md.ResourceMetrics().Len() {
			v, ok := md.ResourceMetrics().At(i).Resource().Attributes().Get("kafka.time_lag.replica")
			require.Equal(t, enabled, ok)
			if ok {
				require.Equal(t, host, v.Str())
			}
		}
	}
}

// coordinationACLs are the ACLs docs/security.md lists for coordination: Read on
// the coordination group (join, heartbeat, leave), Read on the
// coordination topic and, to let the receiver create it, Create on it.
func coordinationACLs(group, topic string, create bool) []kfake.ACL {
	acls := []kfake.ACL{
		{Resource: kmsg.ACLResourceTypeGroup, Name: group, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationRead, Allow: true},
		{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationRead, Allow: true},
	}
	if create {
		acls = append(acls, kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationCreate, Allow: true})
	}
	return acls
}

func coordinationACLKafka(t *testing.T, password string, acls []kfake.ACL) *testKafka {
	t.Helper()
	return newSecureTestKafka(t, 3,
		[]kgo.Opt{kgo.SASL(saslMechanismFor(t, kafka.SASLSCRAMSHA256, secAdminUser, secAdminPassword))},
		kfake.EnableSASL(),
		kfake.EnableACLs(),
		kfake.GroupMinSessionTimeout(100*time.Millisecond),
		kfake.Superuser(kafka.SASLSCRAMSHA256, secAdminUser, secAdminPassword),
		kfake.User(kafka.SASLSCRAMSHA256, secMonitorUser, password, acls...),
	)
}

func coordinatedACLConfig(k *testKafka, password string) *Config {
	cfg := aclScraperConfig(k, password)
	cfg.Coordination.GroupID = "lag-replicas"
	cfg.Coordination.Topic = "lag-coordination"
	cfg.Coordination.TopicPartitions = 4
	cfg.Coordination.SessionTimeout = time.Second
	cfg.Coordination.HeartbeatInterval = 100 * time.Millisecond
	return cfg
}

// TestCoordinationLeastPrivilege: with the monitoring ACLs plus the
// coordination ones of docs/security.md, a replica creates the coordination
// topic, joins and reports; without Create, and with no topic, it reports
// nothing and its scrapes say what is missing.
func TestCoordinationLeastPrivilege(t *testing.T) {
	const password = "coordinate-Pa55-7"
	t.Run("with create", func(t *testing.T) {
		acls := append(aclsFor("team-", []string{"orders"}, []string{"orders"}), coordinationACLs("lag-replicas", "lag-coordination", true)...)
		k := coordinationACLKafka(t, password, acls)
		k.CreateTopic("orders", 1)
		at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		k.Produce("orders", 0, at, at.Add(time.Minute))
		k.Commit("team-a", "orders", map[int32]int64{0: 0})

		s, logs := startObservedScraper(t, coordinatedACLConfig(k, password), zap.NewAtomicLevelAt(zap.InfoLevel))
		require.Eventually(t, func() bool {
			md, err := s.scrape(context.Background())
			require.NoError(t, err)
			return intValues(pointsOf(md, "kafka.consumer_group.lag"))[pointKey{"team-a", "orders", 0}] == 2
		}, 30*time.Second, 100*time.Millisecond, "the replica joins and reports team-a")
		require.Equal(t, 1, logs.FilterMessageSnippet("created the coordination topic").Len())
		require.Empty(t, deniedWarnings(logs))
		requireNoSecretLogged(t, logs, password)
	})
	t.Run("without create", func(t *testing.T) {
		acls := append(aclsFor("team-", []string{"orders"}, []string{"orders"}), coordinationACLs("lag-replicas", "lag-coordination", false)...)
		k := coordinationACLKafka(t, password, acls)
		s, logs := startObservedScraper(t, coordinatedACLConfig(k, password), zap.NewAtomicLevelAt(zap.InfoLevel))
		var err error
		require.Eventually(t, func() bool {
			_, err = s.scrape(context.Background())
			return err != nil
		}, 30*time.Second, 100*time.Millisecond)
		require.ErrorContains(t, err, `coordination: not a member of group "lag-replicas", so reporting no group`)
		require.ErrorContains(t, err, `create coordination topic "lag-coordination" (needs CREATE on the topic or the cluster, or create it yourself with 4 partitions)`)
		require.Equal(t, 1, logs.FilterMessageSnippet("cannot join the replicas' group").Len(), "one warning for the failure streak")
	})
}

// settle scrapes rounds until every group and partition gauge has come from
// exactly one replica in three rounds in a row, and fails after max rounds.
func (f *replicaFixture) settle(t *testing.T, started time.Time, replicas []*replica, max int, note string) []round {
	t.Helper()
	partitions := f.partitionsWithCommits()
	var rounds []round
	exact := 0
	for n := 0; exact < 3; n++ {
		if n == max {
			require.FailNow(t, "coverage never exact for three rounds in a row", "%s; last: %v", note, rounds[len(rounds)-1])
		}
		time.Sleep(time.Until(started.Add(time.Duration(n) * replicaInterval)))
		r := f.scrapeRound(t, n, started, replicas)
		r.note = note
		t.Log(r)
		rounds = append(rounds, r)
		if once(r, partitions) {
			exact++
		} else {
			exact = 0
		}
	}
	return rounds
}

// once tells whether every group and every partition with a commit was
// reported by exactly one replica.
func once(r round, partitions map[kafka.TopicPartition]bool) bool {
	if len(r.missing(groupNames())) > 0 || len(r.twice()) > 0 || len(r.gauges) != len(partitions) {
		return false
	}
	for _, by := range r.gauges {
		if len(by) != 1 {
			return false
		}
	}
	for _, by := range r.pairs {
		if len(by) != 1 {
			return false
		}
	}
	return true
}

// TestReplicasAgreeOnTheCoordinationPartitionCount: after the coordination
// topic grows from 4 to 8 partitions, or is deleted and created again with
// 8, and one replica restarts (a rolling restart after the change), both
// replicas hash the groups over the same count, the one the group leader
// assigned from, so every group is reported by exactly one of them.
func TestReplicasAgreeOnTheCoordinationPartitionCount(t *testing.T) {
	for _, change := range []string{"grown", "recreated"} {
		t.Run(change, func(t *testing.T) {
			f := newReplicaFixture(t)
			topic := change + "-coordination"
			four := func(cfg *Config) {
				cfg.Coordination.Topic = topic
				cfg.Coordination.TopicPartitions = 4
			}
			a, b := f.startReplicaWith(t, "a", four), f.startReplicaWith(t, "b", four)
			f.settle(t, time.Now(), []*replica{a, b}, 30, "4 partitions")

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if change == "grown" {
				grown, err := f.k.Admin.UpdatePartitions(ctx, 8, topic)
				require.NoError(t, err)
				require.NoError(t, grown.Error())
			} else {
				deleted, err := f.k.Admin.DeleteTopic(ctx, topic)
				require.NoError(t, err)
				require.NoError(t, deleted.Err)
				f.k.CreateTopic(topic, 8)
			}
			require.NoError(t, b.scraper.shutdown(context.Background()))
			b.killed = true // shut down: its cleanup must not shut it down again
			b2 := f.startReplicaWith(t, "b2", four)
			rounds := f.settle(t, time.Now(), []*replica{a, b2}, 20, change+" with 8, b restarted")
			last := rounds[len(rounds)-1]
			require.Equal(t, 2, countReplicas(last), "%s: both replicas hold a share", last)
			require.Equal(t, int32(8), a.scraper.held.PartitionCount, "a hashes over the new count")
			require.Equal(t, int32(8), b2.scraper.held.PartitionCount, "b2 hashes over the new count")
		})
	}
}

// TestCoordinatedAggregatesHaveOneWriter: under coordination a series that
// sums or maxes across groups would be written by every replica from its
// own groups only. A metric without `group` is refused unless each
// replica's series carry kafka.time_lag.replica; a topic's production rate
// (and its partitions' gauges) comes from one replica, which reads every
// partition of the topic that some group commits on, so the rate is the
// whole topic's.
func TestCoordinatedAggregatesHaveOneWriter(t *testing.T) {
	f := newReplicaFixture(t)
	byTopic := func(cfg *Config) {
		cfg.Metrics.KafkaConsumerGroupTimeLagMax.EnabledAttributes = []metadata.KafkaConsumerGroupTimeLagMaxMetricAttributeKey{metadata.KafkaConsumerGroupTimeLagMaxMetricAttributeKeyTopic}
	}
	cfg := f.k.testConfig()
	byTopic(cfg)
	require.NoError(t, cfg.Validate(), "one collector writes every group's maximum")
	cfg.Coordination.GroupID = coordGroup
	err := cfg.Validate()
	require.ErrorContains(t, err, `metrics::kafka.consumer_group.time_lag_max::attributes: without "group"`)
	require.ErrorContains(t, err, "resource_attributes::kafka.time_lag.replica")
	cfg.ResourceAttributes.KafkaTimeLagReplica.Enabled = true
	require.NoError(t, cfg.Validate(), "with the replica on its resource, each replica's series is its own")
	// Per group over all topics: each topic's replica would write its own.
	cfg.ResourceAttributes.KafkaTimeLagReplica.Enabled = false
	cfg.Metrics.KafkaConsumerGroupTimeLagMax.EnabledAttributes = []metadata.KafkaConsumerGroupTimeLagMaxMetricAttributeKey{metadata.KafkaConsumerGroupTimeLagMaxMetricAttributeKeyGroup}
	require.ErrorContains(t, cfg.Validate(), `metrics::kafka.consumer_group.time_lag_max::attributes: without "topic"`)
	cfg.Metrics.KafkaConsumerGroupTimeLagMax.EnabledAttributes = metadata.DefaultMetricsConfig().KafkaConsumerGroupTimeLagMax.EnabledAttributes
	cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled = true
	cfg.Metrics.KafkaConsumerGroupPartitionStatus.EnabledAttributes = []metadata.KafkaConsumerGroupPartitionStatusMetricAttributeKey{metadata.KafkaConsumerGroupPartitionStatusMetricAttributeKeyGroup, metadata.KafkaConsumerGroupPartitionStatusMetricAttributeKeyStatus}
	require.NoError(t, cfg.Validate(), "a group's partition statuses come from its home replica alone")
	cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled = false
	cfg.ResourceAttributes.KafkaTimeLagReplica.Enabled = true

	rates := func(cfg *Config) {
		cfg.Metrics.KafkaTopicProduceRate.Enabled = true
		cfg.RateWindow = 4 * replicaInterval // a rate once the scrapes span a second
	}
	replicas := []*replica{f.startReplicaWith(t, "a", rates), f.startReplicaWith(t, "b", rates), f.startReplicaWith(t, "c", rates)}
	f.settle(t, time.Now(), replicas, 30, "starting")
	topics := map[string]bool{}
	for tp := range f.partitionsWithCommits() {
		topics[tp.Topic] = true
	}
	started := time.Now()
	for n := range 3 {
		time.Sleep(time.Until(started.Add(time.Duration(n) * replicaInterval)))
		writers := map[string][]string{}
		gaugers := map[kafka.TopicPartition][]string{}
		for _, rep := range replicas {
			ctx, cancel := context.WithTimeout(context.Background(), rep.scraper.cfg.Timeout)
			md, err := rep.scraper.scrape(ctx)
			cancel()
			require.NoError(t, err)
			for key := range pointsOf(md, "kafka.topic.produce_rate") {
				writers[key.topic] = append(writers[key.topic], rep.name)
			}
			for key := range pointsOf(md, "kafka.partition.current_offset") {
				tp := kafka.TopicPartition{Topic: key.topic, Partition: int32(key.partition)}
				gaugers[tp] = append(gaugers[tp], rep.name)
			}
		}
		t.Logf("round %d: produce_rate of shared written by %v, its partitions gauged by %v %v %v", n, writers["shared"],
			gaugers[kafka.TopicPartition{Topic: "shared", Partition: 0}], gaugers[kafka.TopicPartition{Topic: "shared", Partition: 1}], gaugers[kafka.TopicPartition{Topic: "shared", Partition: 2}])
		for topic := range topics {
			require.Len(t, writers[topic], 1, "round %d: produce_rate of %s written by %v", n, topic, writers[topic])
		}
		for tp := range f.partitionsWithCommits() {
			require.Equal(t, writers[tp.Topic], gaugers[tp], "round %d: %v is gauged by the replica that writes its topic's rate", n, tp)
		}
	}
}

// TestReplicaThatCannotReadGivesItsGroupsUp: a replica that keeps
// heartbeating but whose reads fail (b: every OffsetFetch of its scrapes
// fails) leaves the replicas' group after StandDownAfter scrapes in a row
// read none of its share, and the others report its groups from the next
// round; once it reads again it rejoins and takes a share back. kfake's
// controls do not see a request's client id, so b's requests are told by
// its protocol_version: 2.4.0 makes its OffsetFetch v6, the others' (the
// newest version) v8; the membership's own OffsetFetch, of the
// coordination group, is left alone.
func TestReplicaThatCannotReadGivesItsGroupsUp(t *testing.T) {
	f := newReplicaFixture(t)
	var broken atomic.Bool
	f.k.Cluster.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.k.Cluster.KeepControl()
		fetch := req.(*kmsg.OffsetFetchRequest)
		if !broken.Load() || fetch.Version >= 8 || fetch.Group == coordGroup {
			return nil, nil, false
		}
		resp := fetch.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil, true
	})
	a := f.startReplica(t, "a")
	b := f.startReplicaWith(t, "b", func(cfg *Config) { cfg.ProtocolVersion = "2.4.0" })
	b.mayFail = true
	c := f.startReplica(t, "c")
	live := []*replica{a, b, c}
	settled := f.settle(t, time.Now(), live, 30, "starting")
	bGroups := groupsOf(owners(settled[len(settled)-1]), "b")
	require.NotEmpty(t, bGroups)

	broken.Store(true)
	brokenAt := time.Now()
	var rounds []round
	for n := 0; ; n++ {
		require.LessOrEqual(t, n, ownership.StandDownAfter+3, "b's groups were never taken over")
		time.Sleep(time.Until(brokenAt.Add(time.Duration(n) * replicaInterval)))
		r := f.scrapeRound(t, n, brokenAt, live)
		r.note = "b cannot read"
		t.Log(r)
		rounds = append(rounds, r)
		require.Empty(t, r.twice(), "%s: nothing is reported twice", r)
		require.Empty(t, groupsOf(owners(r), "b"), "%s: b reports nothing it cannot read", r)
		if len(r.missing(groupNames())) == 0 {
			break
		}
	}
	// Round 0 is the first b could not read; it stands down at the end of
	// round StandDownAfter-1, and the others have its groups one round on.
	takenOver := len(rounds) - 1
	t.Logf("b's %d groups reported by the others in round %d after its reads began failing, %.1fs (bound: round %d, %d x collection_interval %s)",
		len(bGroups), takenOver, rounds[takenOver].at.Seconds(), ownership.StandDownAfter, ownership.StandDownAfter+1, replicaInterval)
	require.LessOrEqual(t, takenOver, ownership.StandDownAfter)
	require.Equal(t, 2, countReplicas(rounds[takenOver]), "a and c report everything")
	_, err := b.scraper.scrape(context.Background())
	require.ErrorContains(t, err, "stood down: 3 scrapes in a row read none of this replica's groups")

	broken.Store(false)
	rejoined := f.settle(t, time.Now(), live, 15, "b reads again")
	require.Equal(t, 3, countReplicas(rejoined[len(rejoined)-1]), "b takes a share again")
}

// exportLog is a pipeline that records which groups each export carried
// and refuses them while refusing is set.
type exportLog struct {
	refusing atomic.Bool
	mu       sync.Mutex
	exports  [][]string // the groups with a lag point in each export
}

func (l *exportLog) consumer(t *testing.T) consumer.Metrics {
	c, err := consumer.NewMetrics(func(_ context.Context, md pmetric.Metrics) error {
		groups := map[string]bool{}
		for key := range pointsOf(md, "kafka.consumer_group.lag") {
			groups[key.group] = true
		}
		l.mu.Lock()
		l.exports = append(l.exports, slices.Sorted(maps.Keys(groups)))
		l.mu.Unlock()
		if l.refusing.Load() {
			return errors.New("refused: memory limit reached")
		}
		return nil
	})
	require.NoError(t, err)
	return c
}

func (l *exportLog) last() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.exports) == 0 {
		return nil
	}
	return l.exports[len(l.exports)-1]
}

// TestReplicaWhosePipelineRefusesGivesItsGroupsUp: two receivers built by
// the factory (the scraper controller exports each scrape); a's pipeline
// refuses every export. After StandDownAfter refused exports a leaves the
// replicas' group and b exports every group; a reports nothing while it
// stands down.
func TestReplicaWhosePipelineRefusesGivesItsGroupsUp(t *testing.T) {
	f := newReplicaFixture(t)
	start := func(name string, log *exportLog) {
		cfg := f.replicaConfig(name)
		require.NoError(t, cfg.Validate())
		rcvr, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, log.consumer(t))
		require.NoError(t, err)
		require.NoError(t, rcvr.Start(context.Background(), componenttest.NewNopHost()))
		t.Cleanup(func() { require.NoError(t, rcvr.Shutdown(context.Background())) })
	}
	var a, b exportLog
	a.refusing.Store(true)
	start("a", &a)
	start("b", &b)
	// b may hold every group before a joins: first a takes a share.
	require.Eventually(t, func() bool { return len(a.last()) > 0 }, 30*time.Second, 50*time.Millisecond, "a takes a share")
	shared := time.Now()
	require.Eventually(t, func() bool { return len(a.last()) == 0 && len(b.last()) == replicaGroups }, 30*time.Second, 50*time.Millisecond,
		"b exports every group once a gives its share up")
	tookOver := time.Since(shared)

	a.mu.Lock()
	defer a.mu.Unlock()
	withPoints, run := 0, 0
	for _, groups := range a.exports {
		if len(groups) > 0 {
			run++
			withPoints = max(withPoints, run)
		} else {
			run = 0
		}
	}
	t.Logf("b exported all %d groups %.1fs after a's first refused export of a share; a's exports: %v", replicaGroups, tookOver.Seconds(), a.exports)
	require.Positive(t, withPoints, "a held a share first")
	require.LessOrEqual(t, withPoints, ownership.StandDownAfter, "a stood down after %d refused exports in a row", ownership.StandDownAfter)
}

// TestReplicaCutOffFromItsCoordinatorStopsReporting: every group request
// of replica b (its member ids start with its client id) is black-holed
// at the coordinator: kfake holds them unanswered, as a partitioned
// network would. b's heartbeats then fail one after another, each after
// its read deadline (timeout + session_timeout/2), and b stops reporting
// when sarama gives the session up after metadata.retry.max + 1 of them
// (4 here): within heartbeat_interval + 4 x (timeout + session_timeout/2)
// of the cut, the bound docs/high-availability.md states. The others take
// its groups over after session_timeout, so they are reported twice
// meanwhile.
func TestReplicaCutOffFromItsCoordinatorStopsReporting(t *testing.T) {
	f := newReplicaFixture(t)
	var cut atomic.Bool
	release := make(chan struct{})
	for _, key := range []kmsg.Key{kmsg.Heartbeat, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.LeaveGroup} {
		f.k.Cluster.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			f.k.Cluster.KeepControl()
			var member string
			switch r := req.(type) {
			case *kmsg.HeartbeatRequest:
				member = r.MemberID
			case *kmsg.JoinGroupRequest:
				member = r.MemberID
			case *kmsg.SyncGroupRequest:
				member = r.MemberID
			case *kmsg.LeaveGroupRequest:
				member = r.MemberID
				if len(r.Members) > 0 {
					member = r.Members[0].MemberID
				}
			}
			if !cut.Load() || !strings.HasPrefix(member, "replica-b-") {
				return nil, nil, false
			}
			f.k.Cluster.SleepControl(func() { <-release })
			return nil, errors.New("cut off"), true // the connection is closed
		})
	}
	const timeout = time.Second
	a := f.startReplica(t, "a")
	b := f.startReplicaWith(t, "b", func(cfg *Config) { cfg.Timeout = timeout })
	b.mayFail = true
	c := f.startReplica(t, "c")
	t.Cleanup(func() { // before the replicas shut down (cleanups run last first)
		cut.Store(false)
		close(release)
	})
	live := []*replica{a, b, c}
	f.settle(t, time.Now(), live, 30, "starting")

	bound := b.scraper.cfg.Coordination.HeartbeatInterval + 4*(timeout+replicaSession/2)
	cut.Store(true)
	cutAt := time.Now()
	// Rounds half an interval off the cut, so that none starts just as
	// the bound ends.
	var lastReported, firstSilent time.Duration
	silent := 0
	for n := 0; silent < 2; n++ {
		at := time.Duration(n)*replicaInterval + replicaInterval/2
		require.Less(t, at, bound+5*replicaInterval, "b kept reporting long past the bound")
		time.Sleep(time.Until(cutAt.Add(at)))
		r := f.scrapeRound(t, n, cutAt, live)
		r.note = "b cut off from its coordinator"
		t.Log(r)
		reported := false
		for _, by := range r.groups {
			reported = reported || slices.Contains(by, "b")
		}
		switch {
		case reported:
			lastReported, silent = r.at, 0
		case silent == 0:
			firstSilent, silent = r.at, 1
		default:
			silent++
		}
	}
	t.Logf("b's last report began %.1fs after the cut, its first silent one %.1fs (bound: heartbeat_interval + 4 x (timeout + session_timeout/2) = %s)",
		lastReported.Seconds(), firstSilent.Seconds(), bound)
	require.LessOrEqual(t, lastReported, bound)
	require.LessOrEqual(t, firstSilent, bound+replicaInterval, "b is silent from the first round after the bound")
	final := f.scrapeRound(t, 99, cutAt, []*replica{a, c})
	require.Empty(t, final.missing(groupNames()), "%s: a and c report every group", final)
}
