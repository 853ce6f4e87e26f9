package health

import "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"

// Burrow's rules, as far as the admin API can observe them. OffsetFetch
// returns no commit time, so "the consumer stopped" is read from the group
// having no members rather than from an old commit. Each rule reads a
// lagWindow: a run as long as the window's points or steps means the rule's
// condition held over the whole window.

// rewound: the committed offset went back at some step of the window. A
// reset or a recommit moves the group back over records it already
// consumed, which no amount of lag shows; two points prove it.
func rewound(w lagWindow) bool {
	return w.ordered < w.steps()
}

// complete: the window has all its points. The rules on how a group moves
// judge only a complete window, since a shorter one cannot tell a stuck or
// slow consumer from a long commit interval.
func complete(w lagWindow, window int) bool {
	return int(w.points) >= window
}

// stalled: over a complete window the group lagged at every point and never
// moved its committed offset. Its members are present, or not known: a
// consumer may hold the partition without making progress.
func stalled(w lagWindow, window int) bool {
	return complete(w, window) && w.lagging >= w.points && w.unchanged >= w.steps()
}

// stopped: stalled with no member at all, so that nothing will move the
// committed offset until a consumer comes back.
func stopped(w lagWindow, window int, noMembers bool) bool {
	return noMembers && stalled(w, window)
}

// lagGrowing: over a complete window the group committed, but its lag grew
// at every step: it consumes slower than the partition is written and falls
// further behind.
func lagGrowing(w lagWindow, window int) bool {
	return complete(w, window) && w.unchanged < w.steps() && w.growing >= w.steps()
}

// consumable is the lag the rules judge: none when only transaction
// markers and aborted records are left, which no consumer will ever be
// given, so that a group committed on a commit marker is not STALL or STOP
// for the marker's offset.
func consumable(pl *lag.PartitionLag) int64 {
	if pl.CaughtUp {
		return 0
	}
	return pl.Lag
}

// timeLagAboveBound goes beyond Burrow: a group can keep pace in offsets and
// still be too far behind in time for its users. An unknown end offset or
// time lag is no evidence either way.
func timeLagAboveBound(pl *lag.PartitionLag, maxTimeLag float64) bool {
	return maxTimeLag > 0 && pl.HasEnd && pl.HasTimeLag && pl.TimeLag > maxTimeLag
}

// status applies Burrow's rules, worst first: the first that holds decides.
func (w lagWindow) status(window int, noMembers bool) Status {
	switch {
	case w.points == 0:
		return StatusOK
	case rewound(w):
		return StatusRewind
	case stopped(w, window, noMembers):
		return StatusStop
	case stalled(w, window):
		return StatusStall
	case lagGrowing(w, window):
		return StatusWarn
	}
	return StatusOK
}

// partitionStatus is a partition's status: Burrow's rules on its window,
// and at least WARN when its time lag is above maxTimeLag (0 turns that
// off), however its offsets move.
func partitionStatus(w lagWindow, window int, noMembers bool, pl *lag.PartitionLag, maxTimeLag float64) Status {
	st := w.status(window, noMembers)
	if timeLagAboveBound(pl, maxTimeLag) {
		st = max(st, StatusWarn)
	}
	return st
}
