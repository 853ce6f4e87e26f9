package read

import (
	"context"
	"fmt"
	"maps"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
)

// The scrape's partitions: which to track, and their offsets read into the
// snapshot, which is then indexed.

// track makes the committed and gauged partitions the tables' tracked set
// and returns them, sorted.
func (r *Reader) track(committed map[string]kafka.Commits, gauged map[kafka.TopicPartition]struct{}, complete bool) []kafka.TopicPartition {
	tracked := maps.Clone(gauged)
	if tracked == nil {
		tracked = map[kafka.TopicPartition]struct{}{}
	}
	for _, tp := range lag.Partitions(committed) {
		tracked[tp] = struct{}{}
	}
	// A partial read cannot tell a partition no group commits on any more
	// from one whose group or coordinator could not be read: the tables of
	// partitions it does not name are kept for a while, so that history
	// survives an outage, but not for ever.
	var keep time.Duration
	if !complete {
		keep = r.KeepUnwantedFor
	}
	partitions, dropped := r.Tables.Track(tracked, r.Now(), keep)
	if dropped > 0 {
		r.Logger.Debug("dropped tables of partitions no longer tracked", zap.Int("tables", dropped), zap.Bool("complete_read", complete))
	}
	return partitions
}

// readOffsets reads the tracked partitions' end offsets (through the
// tables, sampler.Read), and their log start and last stable offsets when
// asked, into the scrape's snapshot, indexes it, and refreshes the topics'
// retention. With nothing to read, the snapshot is of now; otherwise it is
// stamped with the end-offset read.
func (r *Reader) readOffsets(ctx context.Context, p *pass) {
	p.snap = &lag.Snapshot{At: r.Now().UnixNano(), Committed: p.committed, End: map[kafka.TopicPartition]int64{}, Start: r.Tables.StartOffsets(),
		Shares: p.shares.owned, CommitsUnread: ownedOnly(p.partlyRead, p.committed), SharesUnread: p.shares.partlyRead}
	if len(p.partitions) == 0 {
		p.index()
		return
	}
	withStart := r.StartOffsets
	end, start, err := sampler.Read(ctx, r.Cluster, r.Tables, p.partitions, sampler.ReadOptions{
		WithStart: withStart,
		// Restored tables may be another cluster's until it says
		// otherwise: ask before they date anything.
		WithIdentity: !r.Tables.Identified(),
		Logger:       r.Logger,
	})
	if err = p.denials.Split(err); err != nil {
		missing := len(p.partitions) - len(end.Offsets)
		if withStart {
			missing += len(p.partitions) - len(start.Offsets)
		}
		p.errs.AddPartial(missing, err)
	}
	r.Records.Forget(r.Tables.TakeResets())
	if r.StableOffsets {
		// After the committed offsets too, so that a commit between the
		// reads can only overstate the stable lag.
		stable, err := r.Cluster.StableOffsets(ctx, p.partitions)
		if err = p.denials.Split(err); err != nil {
			p.errs.AddPartial(len(p.partitions)-len(stable.Offsets), fmt.Errorf("read last stable offsets: %w", err))
		}
		p.snap.Stable = stable.Offsets
	}
	p.snap.End = end.Offsets
	if !end.Received.IsZero() { // zero: nothing was asked (the client closed under the scrape)
		p.snap.At = end.Received.UnixNano()
	}
	if withStart {
		p.snap.Start = r.Tables.StartOffsets()
	}
	p.index()
	if !withStart {
		r.readStartsBehind(ctx, p)
	}
	if r.Retention != nil {
		// The partitions whose end offsets were read: those a lag is
		// reported on.
		err := r.Retention.Refresh(ctx, end.Offsets, r.Now())
		if err = p.denials.Split(err); err != nil {
			p.errs.AddPartial(0, fmt.Errorf("read topics' retention: %w", err))
		}
	}
}

// index indexes the snapshot and lets its commits go: the index holds all
// the rest of the scrape needs of them, and at a million pairs they are
// 32 MB, pointers the garbage collector would carry through dating and
// export.
func (p *pass) index() {
	p.idx = lag.NewIndex(p.snap)
	p.committedPairs = make(map[string]int, len(p.committed))
	for g, commits := range p.committed {
		p.committedPairs[g] = len(commits)
	}
	p.committed, p.snap.Committed = nil, nil
}
