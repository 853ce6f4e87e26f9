// Package health follows consumer groups from scrape to scrape: it counts
// their rebalances and gives each group and each of its partitions a
// Burrow-style status. It does no I/O and reads no clock, so that every rule
// can be tested on a history of observations alone.
package health

import "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/groupview"

// Status is a partition's or group's status (groupview.Status).
type Status = groupview.Status

// The statuses, in increasing severity.
const (
	StatusUnknown = groupview.StatusUnknown
	StatusOK      = groupview.StatusOK
	StatusWarn    = groupview.StatusWarn
	StatusStall   = groupview.StatusStall
	StatusStop    = groupview.StatusStop
	StatusRewind  = groupview.StatusRewind
)

// Statuses lists every status, in order (groupview.Statuses).
var Statuses = groupview.Statuses
