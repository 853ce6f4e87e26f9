package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareMaxRecords is how many records a share-group member acquires per
// poll: it holds them, unfinished, while its handler works through them.
const shareMaxRecords = 10

// runShareGroup runs the share group's members until ctx ends. Each member
// handles one record at a time in JobsHandleTime, acknowledging each as it
// is done: the records still acquired are unfinished, and the oldest of
// them is the group's start offset, so the group's time lag is about how
// long a record waits for a handler.
func (d *Demo) runShareGroup(ctx context.Context) {
	// Without it a new share group starts at the end of the log.
	if err := d.setShareGroupEarliest(ctx); err != nil {
		d.log.Printf("share group %s: %v", GroupJobsWorkers, err)
	}
	d.log.Printf("share group %s: %d members consuming %s, %s per record", GroupJobsWorkers, d.opts.JobsMembers, TopicJobs, d.opts.JobsHandleTime)
	for i := range d.opts.JobsMembers {
		d.goRun(func() { d.shareMember(ctx, fmt.Sprintf("%s-%d", GroupJobsWorkers, i+1)) })
	}
}

// setShareGroupEarliest sets the share group's share.auto.offset.reset to
// earliest: in the in-process cluster directly, on a real one with
// IncrementalAlterConfigs.
func (d *Demo) setShareGroupEarliest(ctx context.Context) error {
	if d.cluster != nil {
		d.cluster.SetGroupConfigs(GroupJobsWorkers, map[string]string{"share.auto.offset.reset": "earliest"})
		return nil
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = GroupJobsWorkers
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, d.producer)
	if err == nil && len(resp.Resources) == 1 {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("set share.auto.offset.reset=earliest: %w", err)
	}
	return nil
}

func (d *Demo) shareMember(ctx context.Context, member string) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(d.addrs...),
		kgo.ClientID(member),
		kgo.ShareGroup(GroupJobsWorkers),
		kgo.ConsumeTopics(TopicJobs),
		kgo.ShareMaxRecords(shareMaxRecords),
		kgo.ShareMaxRecordsStrict(),
	)
	if err != nil {
		d.log.Printf("share group %s: member %s: %v", GroupJobsWorkers, member, err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		pollCtx, cancel := context.WithTimeout(ctx, pollTimeout)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		if fetches.IsClientClosed() {
			return
		}
		d.logFetchErrors(GroupJobsWorkers, fetches)
		for _, r := range fetches.Records() {
			if !sleepCtx(ctx, d.opts.JobsHandleTime) {
				return // unacknowledged: released when the member leaves
			}
			r.Ack(kgo.AckAccept)
		}
		flushCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := cl.FlushAcks(flushCtx); err != nil && ctx.Err() == nil {
			d.log.Printf("share group %s: member %s: acknowledge: %v", GroupJobsWorkers, member, err)
		}
		cancel()
	}
}
