package accuracy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLastStableOffsetWaitsForOpenTransactions: a transaction holds the
// last stable offset at its first offset from its first batch's append
// until its marker is replicated, whatever was written after it; its
// records, once it aborts, are skipped by what a read_committed consumer
// gets, and stay in the log and its time index.
func TestLastStableOffsetWaitsForOpenTransactions(t *testing.T) {
	tl := &Timeline{}
	// Times in milliseconds, as the time index answers.
	data := func(producer, at int64, txnStart, aborted bool) Batch {
		at *= ms
		return Batch{Producer: producer, At: at, Visible: at, FirstStamp: at, LastStamp: at, SentFirst: at, SentLast: at, Records: 1, TxnStart: txnStart, Aborted: aborted}
	}
	marker := func(producer, at, visible int64) Batch {
		at, visible = at*ms, visible*ms
		return Batch{Producer: producer, Control: true, At: at, Visible: visible, FirstStamp: at, LastStamp: at, SentFirst: at, SentLast: at, Records: 1}
	}
	tl.AppendBatch(data(1, 10, true, false))  // 0: producer 1 opens a transaction
	tl.AppendBatch(data(2, 20, true, true))   // 1: producer 2 opens one it will abort
	tl.AppendBatch(data(1, 30, false, false)) // 2
	tl.AppendBatch(marker(1, 40, 45))         // 3: producer 1 commits, replicated at 45
	tl.AppendBatch(data(3, 50, false, false)) // 4: no transaction
	tl.AppendBatch(marker(2, 60, 60))         // 5: producer 2 aborts
	for at, want := range map[int64]int64{5: 0, 10: 0, 44: 0, 45: 1, 59: 1, 60: 6} {
		require.Equal(t, want, tl.StableAt(at*ms), "last stable offset at %d ms", at)
	}
	require.Equal(t, int64(6), tl.EndAt(60*ms))
	next, ok := tl.NextData(1, 6)
	require.True(t, ok)
	require.Equal(t, int64(2), next, "the aborted record and nothing else skipped")
	next, ok = tl.NextData(3, 6)
	require.True(t, ok)
	require.Equal(t, int64(4), next, "the marker skipped")
	offset, _, ok := tl.FirstStampedFrom(20*ms, 6)
	require.True(t, ok)
	require.Equal(t, int64(1), offset, "the time index answers the aborted record")
}

// TestHungTransactionHoldsItsGroup: on the shape of aborted and hung
// transactions, a read_committed group stops at the last stable offset
// while a transaction hangs (minutes), and moves on once it is aborted; the
// high watermark runs on meanwhile.
func TestHungTransactionHoldsItsGroup(t *testing.T) {
	shape := shapeByKey(t, "real-hung")
	tl, commits := shape.BuildPartition(1, 0)
	longest, held, from := int64(0), int64(0), int64(0)
	for at := Epoch + shape.History; at < shape.End(); at += 10 * second {
		committed, _ := commits[0].At(at)
		if committed == held {
			longest = max(longest, at-from)
			continue
		}
		held, from = committed, at
	}
	require.GreaterOrEqual(t, longest, minute, "the group stood still on the hung transaction")
	require.LessOrEqual(t, longest, 11*minute, "and moved on once it was aborted")
	aborted, control := 0, 0
	for i := range tl.at {
		if tl.aborted[i] {
			aborted++
		}
		if tl.control[i] {
			control++
		}
	}
	require.InDelta(t, 0.05, float64(aborted)/float64(len(tl.at)-control), 0.03, "a share of the data batches aborted")
}

// TestRetentionDeletesWholeOldSegments: the log start moves at the
// retention checks only, by whole segments whose records are all older
// than the retention, never into the active one; the time index and reads
// answer from the records left.
func TestRetentionDeletesWholeOldSegments(t *testing.T) {
	tl := &Timeline{}
	for at := int64(0); at < 100*second; at += second {
		tl.Append(Epoch+at, 1) // offset n at n s
	}
	tl.Retain(Retention{Ms: 30 * second, SegmentMs: 10 * second, CheckEvery: 5 * second, Phase: 2 * second}, Epoch, Epoch+100*second)
	for at, want := range map[int64]int64{0: 0, 41 * second: 0, 42 * second: 10, 46 * second: 10, 47 * second: 10, 52 * second: 20, 99 * second: 60} {
		require.Equal(t, want, tl.StartAt(Epoch+at), "log start at %d s", at/second)
	}
	offset, stamp, ok := tl.FirstStampedLeft(Epoch+5*second, 20, tl.EndOffset())
	require.True(t, ok)
	require.Equal(t, int64(20), offset, "the first record left")
	require.Equal(t, Epoch+20*second, stamp)
	_, _, ok = readRecord(tl, 15, 20, tl.EndOffset())
	require.False(t, ok, "a read below the log start is out of range")
}

// TestOneInstanceRunsPeersAsAlone: a shape read as one instance runs each
// peer partition by partition as Run does otherwise (the same points and
// requests), and the receiver through one reader, asking no more offsets
// of Kafka than one a partition.
func TestOneInstanceRunsPeersAsAlone(t *testing.T) {
	shape := RealisticShapes()[0]
	shape.Duration = 20 * minute
	iv := Intervals()[1]
	alone := Run(shape, iv, Methods(), 1)
	shape.OneInstance = true
	together := Run(shape, iv, Methods(), 1)
	for i := range alone {
		if alone[i].Method.NewPartitions != nil {
			require.Equal(t, alone[i].Cost.OffsetReads, together[i].Cost.OffsetReads, alone[i].Method.Key)
			require.Len(t, together[i].Points, len(alone[i].Points), alone[i].Method.Key)
			continue
		}
		require.Equal(t, alone[i].Points, together[i].Points, alone[i].Method.Key)
		require.Equal(t, alone[i].Cost, together[i].Cost, alone[i].Method.Key)
	}
}

// shapeByKey is the evaluation's shape (idealized or realistic) named key.
func shapeByKey(t *testing.T, key string) Shape {
	for _, s := range append(Shapes(), RealisticShapes()...) {
		if s.Key == key {
			return s
		}
	}
	t.Fatalf("no shape %q", key)
	return Shape{}
}
