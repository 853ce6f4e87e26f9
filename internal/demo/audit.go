package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// auditBatchReadTimeout bounds one batch run's read of the audit backlog.
const auditBatchReadTimeout = 30 * time.Second

// seedAudit writes AuditHistory worth of backdated audit records, one per
// minute, and commits audit-batch a fifth of the way into them. Without this
// the quiet group would need many minutes of wall-clock time before its time
// lag reached minutes; with it the receiver's first scrape already sees a
// committed record that is minutes old.
//
// The record timestamps are client-set CreateTime values: kgo keeps a
// non-zero Record.Timestamp, and kfake stores the batch timestamps as sent
// unless the batch asks for LogAppendTime.
func (d *Demo) seedAudit(ctx context.Context) error {
	n := max(1, int(d.opts.AuditHistory/time.Minute))
	now := time.Now()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		ts := now.Add(-time.Duration(n-i) * time.Minute)
		recs[i] = &kgo.Record{
			Topic:     TopicAudit,
			Timestamp: ts,
			Key:       fmt.Appendf(nil, "seed-%d", i),
			Value:     fmt.Appendf(nil, `{"topic":%q,"seed":%d,"at":%q}`, TopicAudit, i, ts.UTC().Format(time.RFC3339Nano)),
		}
	}
	if err := d.producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("seed %d backdated records into %s: %w", n, TopicAudit, err)
	}
	d.counts.ok[TopicAudit].Add(int64(n))

	at := int64(n / 5)
	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: TopicAudit, Partition: 0, At: at, LeaderEpoch: -1})
	// The group has no members yet, so this is a plain admin commit, as a
	// batch job that keeps its position in Kafka between runs would do.
	if err := d.admin.CommitAllOffsets(ctx, GroupAuditBatch, commit); err != nil {
		return fmt.Errorf("commit %s at %s[0]@%d: %w", GroupAuditBatch, TopicAudit, at, err)
	}
	d.log.Printf("topic %s: seeded %d records backdated %s..%s ago; group %s committed at offset %d (a record from %s ago, %d records behind)",
		TopicAudit, n, time.Duration(n)*time.Minute, time.Minute, GroupAuditBatch, at, time.Duration(int64(n)-at)*time.Minute, int64(n)-at)
	return nil
}

// runAuditBatch runs the audit-batch job every AuditBatchEvery. The first run
// is a full period after start so that the seeded lag stays visible.
func (d *Demo) runAuditBatch(ctx context.Context) {
	d.log.Printf("group %s: batch job reads %s every %s and commits once per run", GroupAuditBatch, TopicAudit, d.opts.AuditBatchEvery)
	t := time.NewTicker(d.opts.AuditBatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := d.auditBatchOnce(ctx); err != nil && ctx.Err() == nil {
				d.log.Printf("group %s: batch run failed: %v", GroupAuditBatch, err)
			}
		}
	}
}

// auditBatchOnce reads audit from the group's committed offsets to the end
// offsets listed at the start of the run and commits those end offsets. It
// reads partitions directly and commits through the admin API: like many
// batch jobs it is never a live group member, so the group stays Empty.
func (d *Demo) auditBatchOnce(ctx context.Context) error {
	committed, err := d.admin.FetchOffsets(ctx, GroupAuditBatch)
	if err != nil {
		return fmt.Errorf("fetch committed offsets: %w", err)
	}
	ends, err := d.admin.ListEndOffsets(ctx, TopicAudit)
	if err != nil {
		return fmt.Errorf("list end offsets of %s: %w", TopicAudit, err)
	}
	if err := ends.Error(); err != nil {
		return fmt.Errorf("list end offsets of %s: %w", TopicAudit, err)
	}

	from := map[int32]kgo.Offset{}
	remaining := map[int32]int64{} // partition -> end offset still to reach
	var target kadm.Offsets
	ends.Each(func(e kadm.ListedOffset) {
		start := int64(0)
		if c, ok := committed.Lookup(TopicAudit, e.Partition); ok && c.Err == nil && c.At >= 0 {
			start = c.At
		}
		if e.Offset <= start {
			return
		}
		from[e.Partition] = kgo.NewOffset().At(start)
		remaining[e.Partition] = e.Offset
		target.Add(kadm.Offset{Topic: TopicAudit, Partition: e.Partition, At: e.Offset, LeaderEpoch: -1})
	})
	if len(from) == 0 {
		d.log.Printf("group %s: batch run found nothing new", GroupAuditBatch)
		return nil
	}

	read, err := d.readUntil(ctx, TopicAudit, from, remaining)
	if err != nil {
		return err
	}
	if err := d.admin.CommitAllOffsets(ctx, GroupAuditBatch, target); err != nil {
		return fmt.Errorf("commit end offsets: %w", err)
	}
	d.log.Printf("group %s: batch run read %d records and committed the end offsets (lag 0 until the next record); next run in %s",
		GroupAuditBatch, read, d.opts.AuditBatchEvery)
	return nil
}

// readUntil consumes topic's partitions from the given offsets until each
// partition has delivered the record before its end offset in remaining.
func (d *Demo) readUntil(ctx context.Context, topic string, from map[int32]kgo.Offset, remaining map[int32]int64) (int, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(d.addrs...),
		kgo.ClientID(GroupAuditBatch+"-job"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
	)
	if err != nil {
		return 0, fmt.Errorf("create batch reader: %w", err)
	}
	defer cl.Close()

	ctx, cancel := context.WithTimeout(ctx, auditBatchReadTimeout)
	defer cancel()
	read := 0
	for len(remaining) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return read, fmt.Errorf("read %s backlog (%d records read, %d partitions unfinished): %w", topic, read, len(remaining), err)
		}
		d.logFetchErrors(GroupAuditBatch, fetches)
		fetches.EachRecord(func(r *kgo.Record) {
			read++
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
	}
	return read, nil
}
