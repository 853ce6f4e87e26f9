package demo

import (
	"errors"
	"fmt"
	"io"
	"log"
	"time"
)

// Options configures the cluster and the workload. Zero values select the
// defaults documented on each field, so Options{} is the `make run` workload
// on random free ports.
type Options struct {
	// Ports are the broker ports, one broker each. Empty starts Brokers
	// brokers on free ports chosen by the OS.
	Ports []int
	// Brokers is the broker count when Ports is empty (default 3).
	Brokers int
	// Bootstrap, when set, runs the workload on that running cluster
	// (host:port of its brokers) instead of starting one: Ports and
	// Brokers are then unused.
	Bootstrap []string
	// Logger receives one line per workload event. Nil discards them.
	Logger *log.Logger

	// OrdersRate is records/s produced to orders (default 1000).
	OrdersRate float64
	// OrdersPartitions is the partition count of orders (default 6).
	OrdersPartitions int
	// OrdersDelay is how far behind the head orders-fast commits: a record
	// is committed once it is this old (default 2s).
	OrdersDelay time.Duration

	// AuditEvery is the time between two audit records (default 25s).
	AuditEvery time.Duration
	// AuditHistory is how far back the backdated audit records seeded at
	// startup reach, one record per minute (default 15m).
	AuditHistory time.Duration
	// AuditBatchEvery is the period of the audit-batch job, which reads
	// everything new and commits once per run (default 4m). The first run is
	// one period after start, so the seeded lag is visible until then.
	AuditBatchEvery time.Duration

	// PaymentsRate is records/s produced to payments (default 20).
	PaymentsRate float64
	// PaymentsStallAfter is how long payments-stalled commits before it stops
	// committing for good (default 90s).
	PaymentsStallAfter time.Duration

	// InventoryRate is records/s produced to inventory (default 50).
	InventoryRate float64
	// InventoryChurnEvery is the time between two membership changes of
	// inventory-rebalancing (default 60s).
	InventoryChurnEvery time.Duration
	// InventoryMaxMembers bounds inventory-rebalancing's member count, which
	// walks between 1 and this value (default 3).
	InventoryMaxMembers int

	// ClicksRate is records/s produced to clicks (default 200).
	ClicksRate float64
	// ClicksProduceFor is how long clicks is produced to before its producer
	// stops (default 3m).
	ClicksProduceFor time.Duration
	// ClicksReadRate caps clicks-reader's records/s, below ClicksRate so that
	// it falls behind (default 100).
	ClicksReadRate float64

	// ShipmentsRate is records/s produced to shipments outside a surge
	// (default 20).
	ShipmentsRate float64
	// ShipmentsSurgeRate is records/s produced to shipments during a surge
	// (default 150).
	ShipmentsSurgeRate float64
	// ShipmentsSurgeAfter is when the first surge starts (default 1m).
	ShipmentsSurgeAfter time.Duration
	// ShipmentsSurgeEvery is the time from one surge's start to the next's
	// (default 8m).
	ShipmentsSurgeEvery time.Duration
	// ShipmentsSurgeFor is how long a surge lasts (default 2m).
	ShipmentsSurgeFor time.Duration
	// ShipmentsCatchupReadRate caps shipments-catchup's records/s: above
	// ShipmentsRate and below ShipmentsSurgeRate, so that it falls behind
	// during a surge and catches up after it (default 60).
	ShipmentsCatchupReadRate float64
	// ShipmentsSlowReadRate caps shipments-slow's records/s, below
	// ShipmentsRate, so that it falls further behind all the time
	// (default 15).
	ShipmentsSlowReadRate float64

	// JobsRate is records/s produced to jobs (default 10).
	JobsRate float64
	// JobsMembers is the member count of the jobs-workers share group
	// (default 3).
	JobsMembers int
	// JobsHandleTime is how long a jobs-workers member takes over each
	// record (default 250ms): 3 members at 250ms handle 12 records/s, just
	// above JobsRate, so records wait seconds for a handler.
	JobsHandleTime time.Duration

	// StatusEvery is the period of the "status" line with produced counts
	// (default 30s; negative disables it).
	StatusEvery time.Duration
}

// Defaults returns the options Start uses for zero fields (Logger aside).
func Defaults() Options {
	o := Options{}.withDefaults()
	o.Logger = nil
	return o
}

func (o Options) withDefaults() Options {
	setF := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	setD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setI := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setI(&o.Brokers, 3)
	setF(&o.OrdersRate, 1000)
	setI(&o.OrdersPartitions, 6)
	setD(&o.OrdersDelay, 2*time.Second)
	setD(&o.AuditEvery, 25*time.Second)
	setD(&o.AuditHistory, 15*time.Minute)
	setD(&o.AuditBatchEvery, 4*time.Minute)
	setF(&o.PaymentsRate, 20)
	setD(&o.PaymentsStallAfter, 90*time.Second)
	setF(&o.InventoryRate, 50)
	setD(&o.InventoryChurnEvery, time.Minute)
	setI(&o.InventoryMaxMembers, 3)
	setF(&o.ClicksRate, 200)
	setD(&o.ClicksProduceFor, 3*time.Minute)
	setF(&o.ClicksReadRate, 100)
	setF(&o.ShipmentsRate, 20)
	setF(&o.ShipmentsSurgeRate, 150)
	setD(&o.ShipmentsSurgeAfter, time.Minute)
	setD(&o.ShipmentsSurgeEvery, 8*time.Minute)
	setD(&o.ShipmentsSurgeFor, 2*time.Minute)
	setF(&o.ShipmentsCatchupReadRate, 60)
	setF(&o.ShipmentsSlowReadRate, 15)
	setF(&o.JobsRate, 10)
	setI(&o.JobsMembers, 3)
	setD(&o.JobsHandleTime, 250*time.Millisecond)
	setD(&o.StatusEvery, 30*time.Second)
	if o.Logger == nil {
		o.Logger = log.New(io.Discard, "", 0)
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	positive := map[string]float64{
		"orders rate": o.OrdersRate, "payments rate": o.PaymentsRate,
		"inventory rate": o.InventoryRate, "clicks rate": o.ClicksRate,
		"clicks read rate": o.ClicksReadRate,
		"audit interval":   o.AuditEvery.Seconds(), "audit history": o.AuditHistory.Seconds(),
		"audit batch interval": o.AuditBatchEvery.Seconds(), "orders delay": o.OrdersDelay.Seconds(),
		"payments stall-after":     o.PaymentsStallAfter.Seconds(),
		"inventory churn interval": o.InventoryChurnEvery.Seconds(),
		"clicks produce-for":       o.ClicksProduceFor.Seconds(),
		"shipments rate":           o.ShipmentsRate, "shipments surge rate": o.ShipmentsSurgeRate,
		"shipments surge-after": o.ShipmentsSurgeAfter.Seconds(), "shipments surge-every": o.ShipmentsSurgeEvery.Seconds(),
		"shipments surge-for":         o.ShipmentsSurgeFor.Seconds(),
		"shipments-catchup read rate": o.ShipmentsCatchupReadRate, "shipments-slow read rate": o.ShipmentsSlowReadRate,
		"jobs rate": o.JobsRate, "jobs handle time": o.JobsHandleTime.Seconds(),
	}
	for name, v := range positive {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %v", name, v))
		}
	}
	if o.Brokers < 1 {
		errs = append(errs, fmt.Errorf("broker count must be at least 1, got %d", o.Brokers))
	}
	if o.OrdersPartitions < 1 {
		errs = append(errs, fmt.Errorf("orders partitions must be at least 1, got %d", o.OrdersPartitions))
	}
	if o.ShipmentsSurgeFor >= o.ShipmentsSurgeEvery {
		errs = append(errs, fmt.Errorf("shipments surge-for (%s) must be shorter than surge-every (%s)", o.ShipmentsSurgeFor, o.ShipmentsSurgeEvery))
	}
	if o.JobsMembers < 1 {
		errs = append(errs, fmt.Errorf("jobs members must be at least 1, got %d", o.JobsMembers))
	}
	if o.InventoryMaxMembers < 1 {
		errs = append(errs, fmt.Errorf("inventory max members must be at least 1, got %d", o.InventoryMaxMembers))
	}
	return errors.Join(errs...)
}
