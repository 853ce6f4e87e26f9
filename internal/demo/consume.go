package demo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// commitEvery is how often the continuously running groups commit what they
// have marked as processed.
const commitEvery = time.Second

// demoSlowFetchBytes bounds what a rate-capped consumer fetches per
// partition: a few dozen of the demo's records.
const demoSlowFetchBytes = 4 << 10

// pollTimeout bounds one poll so that consumer loops notice ctx, stalls and
// elapsed delays even when their topic is quiet.
const pollTimeout = 250 * time.Millisecond

// laggingConsumer is a single-member group consumer that can trail the head
// of its topic in three ways: by commit delay, by read rate, or by stalling.
type laggingConsumer struct {
	group, topic string
	// delay marks a record processed only once it is this old, so the
	// committed offsets trail the head by about delay (+ commitEvery).
	delay time.Duration
	// readRate, if positive, caps records/s read, so the group falls
	// behind a faster producer.
	readRate float64
	// stallAfter, if positive, stops all commits after this long while the
	// member keeps polling and heartbeating, i.e. it stays in the group.
	stallAfter time.Duration
}

// groupClient creates a group member of group consuming topic. Commits are
// autocommits of marked records only (AutoCommitMarks) when marks is set,
// otherwise kgo's default autocommit of everything polled. extra adds client
// options.
func (d *Demo) groupClient(group, member, topic string, marks bool, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(d.addrs...),
		kgo.ClientID(member),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.AutoCommitInterval(commitEvery),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			// The cooperative balancer also reports rebalances that
			// moved nothing to this member; those are noise here.
			n := 0
			for _, ps := range assigned {
				n += len(ps)
			}
			if n == 0 {
				return
			}
			d.log.Printf("group %s: member %s assigned %s", group, member, formatAssignment(assigned))
		}),
	}
	if marks {
		opts = append(opts, kgo.AutoCommitMarks())
	}
	opts = append(opts, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("create client for group %s member %s: %w", group, member, err)
	}
	return cl, nil
}

func (d *Demo) consumeLagging(ctx context.Context, lc laggingConsumer) {
	member := lc.group + "-1"
	var extra []kgo.Opt
	if lc.readRate > 0 {
		// Small fetches per partition, so that a consumer capped at a few
		// records per second advances on all its partitions every few
		// seconds. With kgo's default (1 MiB per partition) it would
		// spend minutes on one partition's fetch while the others kept
		// their committed offsets: STALL on those, which is not what
		// these groups are there to show.
		extra = append(extra, kgo.FetchMaxPartitionBytes(demoSlowFetchBytes))
	}
	cl, err := d.groupClient(lc.group, member, lc.topic, true, extra...)
	if err != nil {
		d.log.Printf("group %s: %v", lc.group, err)
		return
	}
	// Close leaves the group and, via kgo's default revoke handling,
	// commits what was marked, so a restart resumes where this one ended.
	defer cl.Close()

	switch {
	case lc.delay > 0:
		d.log.Printf("group %s: consuming %s, committing records once they are %s old", lc.group, lc.topic, lc.delay)
	case lc.readRate > 0:
		d.log.Printf("group %s: consuming %s at most %s records/s", lc.group, lc.topic, formatRate(lc.readRate))
	case lc.stallAfter > 0:
		d.log.Printf("group %s: consuming %s, will stop committing after %s", lc.group, lc.topic, lc.stallAfter)
	}

	var (
		start   = time.Now()
		last    = start
		budget  float64
		stalled bool
		// pending holds polled records not yet old enough to be marked,
		// in poll order (which is offset order per partition).
		pending []*kgo.Record
	)
	for ctx.Err() == nil {
		maxRecords := 0 // unlimited
		if lc.readRate > 0 {
			now := time.Now()
			// Cap the budget at one second's worth so that a quiet
			// spell does not allow a burst that catches up at once.
			budget = min(budget+lc.readRate*now.Sub(last).Seconds(), max(lc.readRate, 1))
			last = now
			if budget < 1 {
				sleepCtx(ctx, pollTimeout)
				continue
			}
			maxRecords = int(budget)
		}

		pollCtx, cancel := context.WithTimeout(ctx, pollTimeout)
		fetches := cl.PollRecords(pollCtx, maxRecords)
		cancel()
		if fetches.IsClientClosed() {
			return
		}
		d.logFetchErrors(lc.group, fetches)
		n := 0
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			if !stalled {
				pending = append(pending, r)
			}
		})
		budget -= float64(n)

		if !stalled && lc.stallAfter > 0 && time.Since(start) >= lc.stallAfter {
			stalled = true
			pending = nil
			d.log.Printf("group %s: stalled: stops committing after %s; its member stays in the group, so lag grows", lc.group, lc.stallAfter)
		}
		if stalled {
			continue
		}

		cutoff := time.Now().Add(-lc.delay)
		ready := 0
		for ready < len(pending) && !pending[ready].Timestamp.After(cutoff) {
			ready++
		}
		if ready > 0 {
			cl.MarkCommitRecords(pending[:ready]...)
			// Copy the tail so the backing array does not pin every
			// record ever polled.
			pending = append([]*kgo.Record(nil), pending[ready:]...)
		}
	}
}

// logFetchErrors logs fetch errors other than the poll timeouts and
// cancellation the loops cause themselves.
func (d *Demo) logFetchErrors(group string, fetches kgo.Fetches) {
	fetches.EachError(func(topic string, partition int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		d.log.Printf("group %s: fetch %s[%d]: %v", group, topic, partition, err)
	})
}

func formatAssignment(a map[string][]int32) string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(a)) {
		ps := slices.Clone(a[t])
		slices.Sort(ps)
		parts = append(parts, fmt.Sprintf("%s%v", t, ps))
	}
	return strings.Join(parts, " ")
}
