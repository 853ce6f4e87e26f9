// Package kafkacount counts the requests an in-process Kafka (kfake) serves,
// by API key, for the request-count tests, the benchmarks and the scale
// program. The counter sees every client of the cluster.
package kafkacount

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Counter counts the requests a cluster served, by API key, in all and by
// the broker that served them.
type Counter struct {
	counts [kmsg.MaxKey + 1]atomic.Int64

	mu     sync.Mutex
	byNode map[int32]*Counts
}

// Observe installs a counter on the cluster. It watches every request
// without handling it, so the cluster serves them as usual.
func Observe(c *kfake.Cluster) *Counter {
	counter := &Counter{byNode: map[int32]*Counts{}}
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if key := req.Key(); key >= 0 && int(key) < len(counter.counts) {
			counter.counts[key].Add(1)
			node := c.CurrentNode()
			counter.mu.Lock()
			if counter.byNode[node] == nil {
				counter.byNode[node] = &Counts{}
			}
			counter.byNode[node][key]++
			counter.mu.Unlock()
		}
		return nil, nil, false
	})
	return counter
}

// ByBroker returns the counts so far of each broker, by node id.
func (c *Counter) ByBroker() map[int32]Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int32]Counts, len(c.byNode))
	for node, counts := range c.byNode {
		out[node] = *counts
	}
	return out
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	var out Counts
	for i := range c.counts {
		out[i] = c.counts[i].Load()
	}
	return out
}

// Counts are requests served, by API key.
type Counts [kmsg.MaxKey + 1]int64

// Since returns the requests served between before and a.
func (a Counts) Since(before Counts) Counts {
	for i := range a {
		a[i] -= before[i]
	}
	return a
}

// Of returns the count of one API.
func (a Counts) Of(key kmsg.Key) int64 { return a[key] }

// Total returns the count of all APIs.
func (a Counts) Total() int64 {
	var n int64
	for _, v := range a {
		n += v
	}
	return n
}

// String lists the non-zero counts by API name, sorted:
// "[ListOffsets=3 OffsetFetch=3]".
func (a Counts) String() string {
	var parts []string
	for key, n := range a {
		if n != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", kmsg.NameForKey(int16(key)), n))
		}
	}
	sort.Strings(parts)
	return fmt.Sprint(parts)
}

// PerOp formats the counts divided by n, by API name, e.g.
// "ListOffsets 9, OffsetFetch 3".
func (a Counts) PerOp(n int) string {
	if n <= 0 {
		return "-"
	}
	var parts []string
	for key, v := range a {
		if v == 0 {
			continue
		}
		per := float64(v) / float64(n)
		s := fmt.Sprintf("%.1f", per)
		if per == float64(int64(per)) {
			s = fmt.Sprintf("%d", int64(per))
		}
		parts = append(parts, kmsg.NameForKey(int16(key))+" "+s)
	}
	if len(parts) == 0 {
		return "none"
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// BlackHole swallows the requests of one API key while on: the cluster
// neither answers nor closes the connection, as a broker behind a firewall
// that drops its packets. It counts what it swallowed.
type BlackHole struct {
	on        atomic.Bool
	swallowed atomic.Int64
}

// NewBlackHole installs a black hole, off, on the requests with the key (-1:
// every key).
func NewBlackHole(c *kfake.Cluster, key int16) *BlackHole {
	h := &BlackHole{}
	c.ControlKey(key, func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !h.on.Load() {
			return nil, nil, false
		}
		h.swallowed.Add(1)
		return nil, nil, true
	})
	return h
}

// Set turns the black hole on or off.
func (h *BlackHole) Set(on bool) { h.on.Store(on) }

// Swallowed is how many requests it swallowed.
func (h *BlackHole) Swallowed() int64 { return h.swallowed.Load() }
