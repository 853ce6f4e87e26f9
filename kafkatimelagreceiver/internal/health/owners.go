package health

import (
	"cmp"
	"slices"
	"strings"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/groupview"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// PartitionOwner is one partition of a group's assignment and the member
// holding it (groupview.PartitionOwner).
type PartitionOwner = groupview.PartitionOwner

// PartitionOwners lists who holds each partition of a described group's
// assignment, sorted by partition then member; members whose assignment
// the coordinator did not tell (a classic group that is not Stable) are
// left out. Two members with the same client id, host and instance id
// holding one partition (the coordinator never assigns that) are one
// point.
func PartitionOwners(d kafka.GroupDescription) []PartitionOwner {
	var out []PartitionOwner
	for _, m := range d.Members {
		if !m.AssignmentKnown {
			continue
		}
		for _, tp := range m.Assignment {
			out = append(out, PartitionOwner{TopicPartition: tp, ClientID: m.ClientID, Host: m.Host, InstanceID: m.InstanceID})
		}
	}
	slices.SortFunc(out, func(a, b PartitionOwner) int {
		return cmp.Or(
			a.TopicPartition.Compare(b.TopicPartition),
			strings.Compare(a.ClientID, b.ClientID),
			strings.Compare(a.Host, b.Host),
			strings.Compare(a.InstanceID, b.InstanceID),
		)
	})
	return slices.Compact(out)
}
