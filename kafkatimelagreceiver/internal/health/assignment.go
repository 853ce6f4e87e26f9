package health

import (
	"cmp"
	"slices"
	"strings"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/groupview"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// MemberAssignment is one member's assigned partitions
// (groupview.MemberAssignment).
type MemberAssignment = groupview.MemberAssignment

// AssignedPartitions sums the assignment of the members of a described
// group by (client id, host, instance id), sorted; members whose assignment
// the coordinator did not tell are left out, since an unknown assignment is
// not an empty one.
func AssignedPartitions(d kafka.GroupDescription) []MemberAssignment {
	type key struct{ clientID, host, instanceID string }
	sums := map[key]int64{}
	for _, m := range d.Members {
		if m.AssignmentKnown {
			sums[key{m.ClientID, m.Host, m.InstanceID}] += int64(len(m.Assignment))
		}
	}
	out := make([]MemberAssignment, 0, len(sums))
	for k, n := range sums {
		out = append(out, MemberAssignment{ClientID: k.clientID, Host: k.host, InstanceID: k.instanceID, Partitions: n})
	}
	slices.SortFunc(out, func(a, b MemberAssignment) int {
		return cmp.Or(
			strings.Compare(a.ClientID, b.ClientID),
			strings.Compare(a.Host, b.Host),
			strings.Compare(a.InstanceID, b.InstanceID),
		)
	})
	return out
}
