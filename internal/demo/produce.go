package demo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceTick is the producer pacing granularity. Records are produced in
// bursts once per tick so that a high rate costs one wakeup per tick rather
// than one per record.
const produceTick = 100 * time.Millisecond

type stream struct {
	topic string
	rate  float64 // records per second
	// stopAfter, if positive, stops the producer for good after this long.
	stopAfter time.Duration
	// surge, if set, raises the rate from time to time.
	surge *surge
}

// surge is a stretch of heavier production: at rate for lasting, first
// after the start and then every every.
type surge struct {
	rate                  float64
	after, every, lasting time.Duration
}

// active says whether a surge is on elapsed after the start.
func (s *surge) active(elapsed time.Duration) bool {
	return s != nil && elapsed >= s.after && (elapsed-s.after)%s.every < s.lasting
}

// counters tallies produced records and errors per topic for the status line.
// The maps are filled once by newCounters and only read afterwards.
type counters struct {
	topics []string
	ok     map[string]*atomic.Int64
	failed map[string]*atomic.Int64
}

func newCounters() *counters {
	c := &counters{ok: map[string]*atomic.Int64{}, failed: map[string]*atomic.Int64{}}
	for _, t := range []string{TopicOrders, TopicAudit, TopicPayments, TopicInventory, TopicClicks, TopicShipments, TopicJobs} {
		c.topics = append(c.topics, t)
		c.ok[t] = new(atomic.Int64)
		c.failed[t] = new(atomic.Int64)
	}
	return c
}

func (c *counters) String() string {
	var b strings.Builder
	for i, t := range c.topics {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", t, c.ok[t].Load())
		if f := c.failed[t].Load(); f > 0 {
			fmt.Fprintf(&b, "(+%d failed)", f)
		}
	}
	return b.String()
}

// produce paces s.rate records/s to s.topic until ctx ends or s.stopAfter
// elapses. Produce is asynchronous; failures are counted and the first one
// per topic is logged so that a broken cluster is visible without flooding
// stderr.
func (d *Demo) produce(ctx context.Context, s stream) {
	tick := time.NewTicker(produceTick)
	defer tick.Stop()

	var (
		start    = time.Now()
		last     = start
		budget   float64
		seq      int64
		reported atomic.Bool
		surging  bool
	)
	onDone := func(_ *kgo.Record, err error) {
		if err == nil {
			d.counts.ok[s.topic].Add(1)
			return
		}
		if ctx.Err() != nil {
			return // shutting down: in-flight records fail by design
		}
		d.counts.failed[s.topic].Add(1)
		if !reported.Swap(true) {
			d.log.Printf("topic %s: produce failed (further failures only counted in status): %v", s.topic, err)
		}
	}

	d.log.Printf("topic %s: producing %s records/s", s.topic, formatRate(s.rate))
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if s.stopAfter > 0 && now.Sub(start) >= s.stopAfter {
				d.log.Printf("topic %s: producer stopped after %s (%d records); nothing new arrives for %s", s.topic, s.stopAfter, seq, groupOf(s.topic))
				return
			}
			rate := s.rate
			if on := s.surge.active(now.Sub(start)); on != surging {
				surging = on
				if on {
					d.log.Printf("topic %s: surge: producing %s records/s for %s", s.topic, formatRate(s.surge.rate), s.surge.lasting)
				} else {
					d.log.Printf("topic %s: surge over: back to %s records/s; next surge in %s", s.topic, formatRate(s.rate), s.surge.every-s.surge.lasting)
				}
			}
			if surging {
				rate = s.surge.rate
			}
			budget += rate * now.Sub(last).Seconds()
			last = now
			for ; budget >= 1; budget-- {
				seq++
				d.producer.Produce(ctx, &kgo.Record{
					Topic: s.topic,
					Key:   []byte(strconv.FormatInt(seq, 10)),
					Value: fmt.Appendf(nil, `{"topic":%q,"seq":%d,"at":%q}`, s.topic, seq, now.UTC().Format(time.RFC3339Nano)),
				}, onDone)
			}
		}
	}
}

func groupOf(topic string) string {
	switch topic {
	case TopicOrders:
		return GroupOrdersFast
	case TopicAudit:
		return GroupAuditBatch
	case TopicPayments:
		return GroupPaymentsStalled
	case TopicInventory:
		return GroupInventory
	case TopicClicks:
		return GroupClicksReader
	case TopicShipments:
		return GroupShipmentsCatchup + " and " + GroupShipmentsSlow
	case TopicJobs:
		return GroupJobsWorkers
	}
	return ""
}

func formatRate(r float64) string {
	if r >= 1 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return fmt.Sprintf("%.3g (one every %s)", r, time.Duration(float64(time.Second)/r).Round(time.Millisecond))
}
