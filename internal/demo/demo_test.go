//go:build !unit

package demo

import (
	"bytes"
	"context"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

// syncBuffer collects the demo's event lines; the workload writes from many
// goroutines while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) contains(s string) bool { return strings.Contains(b.String(), s) }

// verifyNoLeaks fails t if goroutines outlive the demo. kfake's listener and
// connection goroutines exit shortly after Cluster.Close returns, so this
// polls longer than goleak's own retry budget before failing.
func verifyNoLeaks(t *testing.T) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = goleak.Find(); err == nil {
			return
		}
	}
	t.Errorf("goroutines left after Close: %v", err)
}

// start runs a demo with quiet rates suited to a loaded CI machine and
// returns its event log. Close is registered as cleanup and is idempotent.
func start(t *testing.T, opts Options) (*Demo, *syncBuffer) {
	t.Helper()
	events := &syncBuffer{}
	opts.Logger = log.New(events, "", log.Lmicroseconds)
	if opts.OrdersRate == 0 {
		opts.OrdersRate = 100
	}
	d, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		if t.Failed() {
			t.Logf("demo events:\n%s", events)
		}
	})
	return d, events
}

func adminFor(t *testing.T, d *Demo) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.Addrs()...))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// eventually polls cond until it holds or the generous deadline passes; the
// workload runs in real time on a possibly busy machine.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func committed(t *testing.T, adm *kadm.Client, group string) kadm.OffsetResponses {
	t.Helper()
	offs, err := adm.FetchOffsets(t.Context(), group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	return offs
}

func sumCommitted(offs kadm.OffsetResponses, topic string) int64 {
	var n int64
	for _, o := range offs[topic] {
		if o.Err == nil && o.At > 0 {
			n += o.At
		}
	}
	return n
}

func sumEnds(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

func TestStartOnFreePortsAndCloseLeavesNoGoroutines(t *testing.T) {
	d, err := Start(t.Context(), Options{OrdersRate: 100})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	addrs := d.Addrs()
	if len(addrs) != 3 {
		t.Errorf("got %d broker addresses %v, want 3", len(addrs), addrs)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" || port == "0" || seen[port] {
			t.Errorf("bad or duplicate broker address %q in %v", a, addrs)
		}
		seen[port] = true
	}

	adm := adminFor(t, d)
	topics, err := adm.ListTopics(t.Context())
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	for _, want := range []string{TopicOrders, TopicAudit, TopicPayments, TopicInventory, TopicClicks, TopicShipments, TopicJobs} {
		if !topics.Has(want) {
			t.Errorf("topic %s missing; have %v", want, topics.Names())
		}
	}
	if got := len(topics[TopicOrders].Partitions); got != 6 {
		t.Errorf("orders has %d partitions, want 6", got)
	}
	adm.Close()

	d.Close()
	d.Close() // must be a no-op
	verifyNoLeaks(t)
}

func TestCancelledContextStopsWorkload(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	d, err := Start(ctx, Options{OrdersRate: 100})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	cancel()
	done := make(chan struct{})
	go func() {
		d.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Close did not return after the context was cancelled")
	}
	verifyNoLeaks(t)
}

func TestFixedPorts(t *testing.T) {
	// Reserve free ports, release them and ask the demo to use exactly
	// those, as `make run` does with 9092-9094.
	var ports []int
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("reserve port: %v", err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
	}
	d, _ := start(t, Options{Ports: ports})
	for i, a := range d.Addrs() {
		if _, port, _ := net.SplitHostPort(a); port != strconv.Itoa(ports[i]) {
			t.Errorf("broker %d listens on %s, want port %d", i, a, ports[i])
		}
	}
}

func TestSeededAuditHistoryIsBackdated(t *testing.T) {
	before := time.Now()
	d, _ := start(t, Options{AuditHistory: 15 * time.Minute, AuditEvery: time.Hour})
	after := time.Now()

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(d.Addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{TopicAudit: {0: kgo.NewOffset().AtStart()}}),
	)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cl.Close()

	var recs []*kgo.Record
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for len(recs) < 15 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	}
	if len(recs) < 15 {
		t.Fatalf("read %d seeded audit records, want 15", len(recs))
	}
	for i, r := range recs[:15] {
		// Record i was stamped start-(15-i) minutes, where start lies
		// between before and after.
		age := time.Duration(15-i) * time.Minute
		lo, hi := before.Add(-age).Truncate(time.Millisecond), after.Add(-age)
		if r.Timestamp.Before(lo) || r.Timestamp.After(hi) {
			t.Errorf("record %d timestamp %s, want within [%s, %s] (kfake must keep the client's CreateTime)",
				i, r.Timestamp.Format(time.RFC3339Nano), lo.Format(time.RFC3339Nano), hi.Format(time.RFC3339Nano))
		}
		if r.Attrs.TimestampType() != 0 {
			t.Errorf("record %d timestamp type %d, want 0 (CreateTime)", i, r.Attrs.TimestampType())
		}
	}

	offs := committed(t, adminFor(t, d), GroupAuditBatch)
	o, ok := offs.Lookup(TopicAudit, 0)
	if !ok || o.Err != nil {
		t.Fatalf("audit-batch has no committed offset for audit[0]: %+v", offs)
	}
	if o.At != 3 {
		t.Fatalf("audit-batch committed offset %d, want 3", o.At)
	}
	if age := time.Since(recs[o.At].Timestamp); age < 11*time.Minute {
		t.Errorf("record at audit-batch's committed offset is %s old, want about 12m", age)
	}
}

// TestWorkloadBehaviours speeds every timed behaviour up to seconds and checks
// each one shows in the cluster's state, not just in the event log.
func TestWorkloadBehaviours(t *testing.T) {
	d, events := start(t, Options{
		OrdersRate:          100,
		OrdersDelay:         2 * time.Second,
		AuditEvery:          300 * time.Millisecond,
		AuditBatchEvery:     3 * time.Second,
		PaymentsRate:        20,
		PaymentsStallAfter:  3 * time.Second,
		InventoryRate:       20,
		InventoryChurnEvery: 2 * time.Second,
		ClicksRate:          100,
		ClicksProduceFor:    3 * time.Second,
		ClicksReadRate:      5,
		StatusEvery:         time.Second,
		// One surge, 2 s after the start: 200 records more than the
		// catch-up group can read at once.
		ShipmentsRate:            10,
		ShipmentsSurgeRate:       110,
		ShipmentsSurgeAfter:      2 * time.Second,
		ShipmentsSurgeFor:        2 * time.Second,
		ShipmentsSurgeEvery:      time.Hour,
		ShipmentsCatchupReadRate: 30,
		ShipmentsSlowReadRate:    5,
	})
	adm := adminFor(t, d)

	t.Run("clicks producer stops while clicks-reader lags", func(t *testing.T) {
		eventually(t, "the clicks producer to stop", func() bool { return events.contains("topic clicks: producer stopped") })
		end := sumEnds(t, adm, TopicClicks)
		time.Sleep(time.Second)
		if now := sumEnds(t, adm, TopicClicks); now != end {
			t.Errorf("clicks end offsets moved from %d to %d after the producer stopped", end, now)
		}
		// 100/s produced for 3s but read at 5/s: far behind for a minute.
		if c := sumCommitted(committed(t, adm, GroupClicksReader), TopicClicks); c >= end {
			t.Errorf("clicks-reader committed %d of %d; it should still be behind", c, end)
		}
	})

	t.Run("shipments surge: one group catches up after it, one falls further behind", func(t *testing.T) {
		lagOf := func(group string) int64 {
			return sumEnds(t, adm, TopicShipments) - sumCommitted(committed(t, adm, group), TopicShipments)
		}
		eventually(t, "the surge to end", func() bool { return events.contains("topic shipments: surge over") })
		if !events.contains("topic shipments: surge: producing 110 records/s for 2s") {
			t.Error("no surge start in the event log")
		}
		behind := lagOf(GroupShipmentsCatchup)
		if behind < 50 {
			t.Errorf("shipments-catchup is %d behind at the end of the surge, want far behind", behind)
		}
		// 30/s read against 10/s produced: the backlog shrinks by 20/s.
		eventually(t, "shipments-catchup to catch up", func() bool { return lagOf(GroupShipmentsCatchup) < behind/4 })
		slow := lagOf(GroupShipmentsSlow)
		eventually(t, "shipments-slow to fall further behind", func() bool { return lagOf(GroupShipmentsSlow) > slow+10 })
	})

	t.Run("orders-fast commits but trails the head", func(t *testing.T) {
		eventually(t, "orders-fast commits", func() bool {
			return sumCommitted(committed(t, adm, GroupOrdersFast), TopicOrders) > 0
		})
		// 100 records/s committed only once 2s old leaves ~200 behind.
		eventually(t, "orders-fast lag > 0", func() bool {
			c := sumCommitted(committed(t, adm, GroupOrdersFast), TopicOrders)
			return sumEnds(t, adm, TopicOrders) > c
		})
	})

	t.Run("audit-batch commits the end offsets per run", func(t *testing.T) {
		eventually(t, "a batch run", func() bool { return events.contains("group audit-batch: batch run read") })
		eventually(t, "audit-batch commit past the seeded offset", func() bool {
			return sumCommitted(committed(t, adm, GroupAuditBatch), TopicAudit) > 3
		})
	})

	t.Run("payments-stalled stops committing and stays in the group", func(t *testing.T) {
		eventually(t, "the stall", func() bool { return events.contains("group payments-stalled: stalled") })
		// Let a commit already in flight at the stall land.
		time.Sleep(2 * commitEvery)
		frozen := sumCommitted(committed(t, adm, GroupPaymentsStalled), TopicPayments)
		end := sumEnds(t, adm, TopicPayments)
		eventually(t, "payments to grow past the frozen commit", func() bool {
			return sumEnds(t, adm, TopicPayments) > end+20
		})
		if now := sumCommitted(committed(t, adm, GroupPaymentsStalled), TopicPayments); now != frozen {
			t.Errorf("payments-stalled committed %d after stalling at %d", now, frozen)
		}
		described, err := adm.DescribeGroups(t.Context(), GroupPaymentsStalled)
		if err != nil {
			t.Fatalf("describe: %v", err)
		}
		if g := described[GroupPaymentsStalled]; len(g.Members) != 1 {
			t.Errorf("payments-stalled has %d members, want 1 (state %s)", len(g.Members), g.State)
		}
	})

	t.Run("inventory-rebalancing members join and leave", func(t *testing.T) {
		eventually(t, "a member to leave", func() bool {
			return events.contains("group inventory-rebalancing: member inventory-rebalancing-1 left")
		})
		eventually(t, "a third member to join", func() bool { return events.contains("member inventory-rebalancing-3 joining") })
		eventually(t, "inventory-rebalancing commits", func() bool {
			return sumCommitted(committed(t, adm, GroupInventory), TopicInventory) > 0
		})
	})

	t.Run("jobs-workers: a share group whose oldest unfinished record waits", func(t *testing.T) {
		eventually(t, "jobs-workers to have its 3 members and to acknowledge records", func() bool {
			described, err := adm.DescribeShareGroups(t.Context(), GroupJobsWorkers)
			if err != nil || len(described[GroupJobsWorkers].Members) != 3 {
				return false
			}
			offsets, err := adm.DescribeShareGroupOffsets(t.Context(), GroupJobsWorkers)
			if err != nil {
				return false
			}
			var started, behind bool
			for _, o := range offsets[GroupJobsWorkers].Offsets.Sorted() {
				started = started || o.StartOffset > 0
				behind = behind || o.Lag > 0
			}
			return started && behind
		})
	})

	if !events.contains("status: produced orders=") {
		t.Error("no status line in the event log")
	}
}

func TestInvalidOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"negative rate":     {OrdersRate: -1},
		"negative interval": {AuditEvery: -time.Second},
		"zero-ish brokers":  {Brokers: -1},
	} {
		if d, err := Start(t.Context(), o); err == nil {
			d.Close()
			t.Errorf("%s: Start succeeded, want an error", name)
		}
	}
}

func TestSurgeTimes(t *testing.T) {
	s := &surge{rate: 100, after: time.Minute, every: 8 * time.Minute, lasting: 2 * time.Minute}
	for _, c := range []struct {
		elapsed time.Duration
		on      bool
	}{
		{0, false}, {59 * time.Second, false}, {time.Minute, true}, {2*time.Minute + 59*time.Second, true},
		{3 * time.Minute, false}, {8*time.Minute + 59*time.Second, false}, {9 * time.Minute, true}, {11 * time.Minute, false},
	} {
		if got := s.active(c.elapsed); got != c.on {
			t.Errorf("active(%s) = %v, want %v", c.elapsed, got, c.on)
		}
	}
	var none *surge
	if none.active(time.Hour) {
		t.Error("no surge is never active")
	}
}
