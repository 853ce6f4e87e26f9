package main

// Churn mode (-churn): on top of busy mode's writes, every group commits
// on every partition every -churn-every, each a few records behind the end
// it read, so that every (group, partition) pair moves between two scrapes
// as on a cluster whose consumers all keep up: the committed offsets, the
// records they sit on and the brackets that date them change all the time,
// which is what record reads and their cache are tested by. With
// -busy-every and -churn-every at the collection interval it is the shape
// of "every partition written and every group committing each interval".

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

type churnOptions struct {
	on    bool
	every time.Duration
	// warmup is how many scrapes pass before the measured ones: with
	// every pair moving, record reads never stop, so the run cannot wait
	// for a scrape that reads none as a busy run does.
	warmup int
	// behind is the most records a group's commit is behind the end it
	// read; each commit picks uniformly from behindMin to it.
	behind, behindMin int64
}

func (c *churnOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "churn", false, "with -busy: every group also commits on every partition every -churn-every, up to -churn-behind records behind the end")
	fs.DurationVar(&c.every, "churn-every", 15*time.Second, "churn mode: how often every group commits on every partition")
	fs.Int64Var(&c.behind, "churn-behind", 20, "churn mode: the most records behind the end a commit is (each picks from -churn-behind-min to it)")
	fs.Int64Var(&c.behindMin, "churn-behind-min", 0, "churn mode: the fewest records behind the end a commit is (groups far behind: with -busy-prefill)")
	fs.IntVar(&c.warmup, "churn-warmup", 4, "churn mode: scrapes before the measured ones (a cold start reads records for two)")
}

// settled tells whether the n-th export starts the measured scrapes, the
// last interval having sent fetches Fetch requests: in churn mode after
// the warm-up, else at the first scrape that read no record.
func (c churnOptions) settled(n int, fetches int64) bool {
	if c.on {
		return n-1 >= c.warmup
	}
	return fetches == 0
}

// check refuses churn without the busy writes it churns on.
func (c churnOptions) check(busy bool) error {
	switch {
	case !c.on:
		return nil
	case !busy:
		return errors.New("-churn needs -busy: the groups commit behind the ends that busy mode's writes move")
	case c.every <= 0:
		return fmt.Errorf("-churn-every %s: must be positive", c.every)
	case c.behind < 0:
		return fmt.Errorf("-churn-behind %d: must not be negative", c.behind)
	case c.behindMin < 0 || c.behindMin > c.behind:
		return fmt.Errorf("-churn-behind-min %d: must be between 0 and -churn-behind %d", c.behindMin, c.behind)
	case c.warmup < 1:
		return fmt.Errorf("-churn-warmup %d: must be at least 1", c.warmup)
	}
	return nil
}

// commitChurn commits every group on every partition of w every c.every,
// from phase on (the busy writes'), until ctx ends.
func commitChurn(ctx context.Context, k *scaleload.Cluster, w scaleload.Workload, c churnOptions, phase time.Duration) error {
	if !waitPhase(ctx, phase) {
		return nil
	}
	rng := rand.New(rand.NewPCG(3, 4))
	tick := time.NewTicker(c.every)
	defer tick.Stop()
	for {
		if err := commitChurnOnce(ctx, k, w, c.behindMin, c.behind, rng); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// commitChurnOnce reads the end of every partition of w and commits every
// group on each, from behindMin to behind records behind it (never below
// what the group could have committed before: an end only grows).
func commitChurnOnce(ctx context.Context, k *scaleload.Cluster, w scaleload.Workload, behindMin, behind int64, rng *rand.Rand) error {
	topics := make([]string, w.Topics)
	for t := range topics {
		topics[t] = w.Topic(t)
	}
	ends, err := k.Admin.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("churn: read the end offsets: %w", err)
	}
	for g := range w.GroupCount() {
		offsets := kadm.Offsets{}
		reads := map[string]bool{}
		for _, t := range w.TopicsOf(g) {
			reads[w.Topic(t)] = true
		}
		ends.Each(func(end kadm.ListedOffset) {
			if !reads[end.Topic] {
				return
			}
			at := max(0, end.Offset-behindMin-rng.Int64N(behind-behindMin+1))
			offsets.Add(kadm.Offset{Topic: end.Topic, Partition: end.Partition, At: at, LeaderEpoch: -1})
		})
		resp, err := k.Admin.CommitOffsets(ctx, w.Group(g), offsets)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("churn: commit %s: %w", w.Group(g), err)
		}
	}
	return nil
}
