// Package demo runs an in-process Kafka cluster (franz-go's kfake) with a
// workload whose consumer groups show the lag patterns the kafka_time_lag
// receiver is meant to expose: a busy group a few seconds behind, a quiet
// batch group minutes behind, a group that stalls, a group that keeps
// rebalancing, a topic whose producer goes away, and on a topic whose
// production surges, a group that catches up after each surge and one that
// falls further behind all the time; and a share group (KIP-932) whose
// members take a while over each record.
//
// It backs `make run` (through cmd/kafkademo) and the end-to-end test, which
// starts it on free ports.
package demo

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topic and group names of the workload. They are exported so that tests and
// docs can refer to them without repeating string literals.
const (
	TopicOrders    = "orders"
	TopicAudit     = "audit"
	TopicPayments  = "payments"
	TopicInventory = "inventory"
	TopicClicks    = "clicks"
	TopicShipments = "shipments"
	TopicJobs      = "jobs"

	GroupOrdersFast       = "orders-fast"
	GroupAuditBatch       = "audit-batch"
	GroupPaymentsStalled  = "payments-stalled"
	GroupInventory        = "inventory-rebalancing"
	GroupClicksReader     = "clicks-reader"
	GroupShipmentsCatchup = "shipments-catchup"
	GroupShipmentsSlow    = "shipments-slow"
	// GroupJobsWorkers is a share group, not a consumer group.
	GroupJobsWorkers = "jobs-workers"
)

// DefaultPorts are the broker ports `make run` and the collector config in
// the repository root expect.
var DefaultPorts = []int{9092, 9093, 9094}

// Demo is a running cluster and workload. Stop it with Close.
type Demo struct {
	opts Options
	log  *log.Logger
	// cluster is the in-process cluster, nil when the workload runs on
	// Options.Bootstrap's.
	cluster *kfake.Cluster
	addrs   []string

	// producer is shared by all topics; admin wraps it for topic creation,
	// offset look-ups and the batch job's commits.
	producer *kgo.Client
	admin    *kadm.Client

	counts *counters

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Start starts the cluster, creates the topics, seeds the backdated audit
// history and starts the workload. The workload runs until ctx is cancelled
// or Close is called; either way Close must be called to release the
// cluster and wait for every goroutine.
func Start(ctx context.Context, opts Options) (*Demo, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("invalid demo options: %w", err)
	}

	d := &Demo{opts: opts, log: opts.Logger, counts: newCounters()}
	if len(opts.Bootstrap) > 0 {
		d.addrs = append([]string(nil), opts.Bootstrap...)
		d.log.Printf("cluster: the workload runs on %v", d.addrs)
	} else {
		kopts := []kfake.Opt{
			kfake.NumBrokers(opts.Brokers),
			kfake.ClusterID("kafkademo"),
			// kfake only enforces retention.ms (set on orders) from this
			// cleaner loop, which defaults to once an hour; a minute keeps
			// the busy topic's memory bounded during a long `make run`.
			kfake.BrokerConfigs(map[string]string{"log.cleaner.backoff.ms": "60000"}),
		}
		if len(opts.Ports) > 0 {
			kopts = append(kopts, kfake.Ports(opts.Ports...))
		}
		cluster, err := kfake.NewCluster(kopts...)
		if err != nil {
			return nil, fmt.Errorf("start kfake cluster on ports %v: %w", opts.Ports, err)
		}
		d.cluster, d.addrs = cluster, cluster.ListenAddrs()
		d.log.Printf("cluster: %d brokers listening on %v", len(d.addrs), d.addrs)
	}

	var err error
	d.producer, err = kgo.NewClient(
		kgo.SeedBrokers(d.addrs...),
		kgo.ClientID("kafkademo-producer"),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		d.closeCluster()
		return nil, fmt.Errorf("create producer client: %w", err)
	}
	d.admin = kadm.NewClient(d.producer)

	if err := d.setup(ctx); err != nil {
		d.producer.Close()
		d.closeCluster()
		return nil, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	d.cancel = cancel
	d.startWorkload(runCtx)
	return d, nil
}

// Addrs returns the brokers' host:port addresses.
func (d *Demo) Addrs() []string { return append([]string(nil), d.addrs...) }

// Close stops the workload, waits for every goroutine it started, then shuts
// the cluster down. It is safe to call more than once.
func (d *Demo) Close() {
	d.closeOnce.Do(func() {
		d.log.Printf("shutdown: stopping workload")
		d.cancel()
		d.wg.Wait()
		d.producer.Close()
		if d.cluster != nil {
			d.closeCluster()
			d.log.Printf("shutdown: cluster stopped")
		}
	})
}

// closeCluster stops the cluster the demo started (none on Bootstrap).
func (d *Demo) closeCluster() {
	if d.cluster != nil {
		d.cluster.Close()
	}
}

type topicSpec struct {
	name       string
	partitions int32
	configs    map[string]*string
}

func (d *Demo) topics() []topicSpec {
	str := func(s string) *string { return &s }
	return []topicSpec{
		{name: TopicOrders, partitions: int32(d.opts.OrdersPartitions), configs: map[string]*string{
			// Only orders is big enough to need retention. The other
			// topics keep everything so that the lagging groups'
			// committed records stay readable for the receiver.
			"retention.ms":  str(strconv.FormatInt((10 * time.Minute).Milliseconds(), 10)),
			"segment.bytes": str(strconv.Itoa(8 << 20)),
		}},
		{name: TopicAudit, partitions: 1},
		{name: TopicPayments, partitions: 3},
		{name: TopicInventory, partitions: 4},
		{name: TopicClicks, partitions: 3},
		{name: TopicShipments, partitions: 3},
		{name: TopicJobs, partitions: 3},
	}
}

func (d *Demo) setup(ctx context.Context) error {
	rf := int16(min(3, len(d.addrs)))
	for _, t := range d.topics() {
		if _, err := d.admin.CreateTopic(ctx, t.partitions, rf, t.configs, t.name); err != nil {
			return fmt.Errorf("create topic %s: %w", t.name, err)
		}
		d.log.Printf("topic %s: created with %d partitions", t.name, t.partitions)
	}
	return d.seedAudit(ctx)
}

func (d *Demo) startWorkload(ctx context.Context) {
	o := d.opts
	d.goRun(func() {
		d.produce(ctx, stream{topic: TopicOrders, rate: o.OrdersRate})
	})
	d.goRun(func() {
		d.produce(ctx, stream{topic: TopicAudit, rate: 1 / o.AuditEvery.Seconds()})
	})
	d.goRun(func() {
		d.produce(ctx, stream{topic: TopicPayments, rate: o.PaymentsRate})
	})
	d.goRun(func() {
		d.produce(ctx, stream{topic: TopicInventory, rate: o.InventoryRate})
	})
	d.goRun(func() {
		d.produce(ctx, stream{topic: TopicClicks, rate: o.ClicksRate, stopAfter: o.ClicksProduceFor})
	})
	d.goRun(func() {
		d.produce(ctx, stream{topic: TopicShipments, rate: o.ShipmentsRate, surge: &surge{
			rate: o.ShipmentsSurgeRate, after: o.ShipmentsSurgeAfter, every: o.ShipmentsSurgeEvery, lasting: o.ShipmentsSurgeFor,
		}})
	})

	d.goRun(func() {
		d.consumeLagging(ctx, laggingConsumer{group: GroupOrdersFast, topic: TopicOrders, delay: o.OrdersDelay})
	})
	d.goRun(func() {
		d.consumeLagging(ctx, laggingConsumer{group: GroupPaymentsStalled, topic: TopicPayments, stallAfter: o.PaymentsStallAfter})
	})
	d.goRun(func() {
		d.consumeLagging(ctx, laggingConsumer{group: GroupClicksReader, topic: TopicClicks, readRate: o.ClicksReadRate})
	})
	d.goRun(func() {
		d.consumeLagging(ctx, laggingConsumer{group: GroupShipmentsCatchup, topic: TopicShipments, readRate: o.ShipmentsCatchupReadRate})
	})
	d.goRun(func() {
		d.consumeLagging(ctx, laggingConsumer{group: GroupShipmentsSlow, topic: TopicShipments, readRate: o.ShipmentsSlowReadRate})
	})
	d.goRun(func() {
		d.produce(ctx, stream{topic: TopicJobs, rate: o.JobsRate})
	})
	d.runShareGroup(ctx)
	d.goRun(func() { d.runAuditBatch(ctx) })
	d.goRun(func() { d.runInventoryGroup(ctx) })
	if o.StatusEvery > 0 {
		d.goRun(func() { d.reportStatus(ctx) })
	}
}

// goRun starts fn as a goroutine that Close waits for.
func (d *Demo) goRun(fn func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		fn()
	}()
}

func (d *Demo) reportStatus(ctx context.Context) {
	t := time.NewTicker(d.opts.StatusEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.log.Printf("status: produced %s", d.counts)
		}
	}
}

// sleepCtx waits for d or ctx, reporting whether the full wait elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
