package emit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// ownedGroups is 50 Stable groups of 20 members holding 100 partitions each
// of one topic: 100,000 assigned partitions, the scale benchmarks' 100k
// pairs with every pair assigned.
func ownedGroups() []health.GroupHealth {
	groups := make([]health.GroupHealth, 50)
	for g := range groups {
		d := kafka.GroupDescription{State: kafka.GroupStateStable, Protocol: "range", Epoch: -1}
		for m := range 20 {
			member := kafka.GroupMember{MemberID: fmt.Sprintf("m-%02d", m), ClientID: fmt.Sprintf("consumer-%02d", m), Host: fmt.Sprintf("10.0.%d.%d", g, m), AssignmentKnown: true}
			for p := range 100 {
				member.Assignment = append(member.Assignment, kafka.TopicPartition{Topic: "events", Partition: int32(m*100 + p)})
			}
			d.Members = append(d.Members, member)
		}
		groups[g] = health.GroupHealth{Group: fmt.Sprintf("group-%02d", g), Described: true, Description: d, Protocol: "range", StatusKnown: true,
			Owners: health.PartitionOwners(d)}
	}
	return groups
}

// BenchmarkWritePartitionOwners is the writer's cost of the group metrics
// of 50 groups holding 100,000 partitions, with partition_owner off (the
// default) and on.
func BenchmarkWritePartitionOwners(b *testing.B) {
	groups := ownedGroups()
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("partition_owner=%v", on), func(b *testing.B) {
			cfg := newSettings()
			cfg.Metrics.KafkaConsumerGroupPartitionOwner.Enabled = on
			w := newWriter(b, cfg)
			at := time.Now().UnixNano()
			points := 0
			b.ReportAllocs()
			for b.Loop() {
				sw := w.Begin(context.Background(), at, 0)
				for _, g := range groups {
					sw.GroupHealth(g)
				}
				md, err := sw.Finish()
				if err != nil {
					b.Fatal(err)
				}
				points = md.DataPointCount()
			}
			b.ReportMetric(float64(points), "points/op")
		})
	}
}
