package lag

import "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"

// Partitions lists the partitions the groups commit on, each once, in no
// particular order.
func Partitions(committed map[string]kafka.Commits) []kafka.TopicPartition {
	ids := newPartitionIDs(0)
	for _, commits := range committed {
		for _, c := range commits {
			ids.id(c.TopicPartition)
		}
	}
	return ids.tps
}

// partitionIDs numbers partitions in the order they are first seen,
// without hashing every (group, partition) pair: Kafka numbers a topic's
// partitions from 0, so a topic's ids are kept in an array indexed by
// partition, and the topic is looked up once per run of it (commits are
// sorted by topic). A partition number far past those the topic has shown
// (a broken or hostile broker's) is kept in a map instead, so that it
// cannot make the array huge: a topic's array holds at most
// denseSlack + 2 x its partitions.
type partitionIDs struct {
	topics map[string]int // index in byTopic
	// byTopic holds each topic's ids + 1 by partition (0: none).
	byTopic   []denseIDs
	sparse    map[kafka.TopicPartition]int32
	tps       []kafka.TopicPartition // by id
	lastTopic string
	last      int // index in byTopic of lastTopic; -1 before the first
}

type denseIDs struct {
	ids   []int32
	count int
}

// denseSlack is how far past twice a topic's partitions seen an array
// grows for a new one.
const denseSlack = 1024

func newPartitionIDs(capacity int) *partitionIDs {
	return &partitionIDs{topics: map[string]int{}, tps: make([]kafka.TopicPartition, 0, capacity), last: -1}
}

func (p *partitionIDs) id(tp kafka.TopicPartition) int32 {
	if p.last < 0 || tp.Topic != p.lastTopic {
		t, ok := p.topics[tp.Topic]
		if !ok {
			t = len(p.byTopic)
			p.topics[tp.Topic] = t
			p.byTopic = append(p.byTopic, denseIDs{})
		}
		p.last, p.lastTopic = t, tp.Topic
	}
	d := &p.byTopic[p.last]
	if tp.Partition >= 0 && int(tp.Partition) < len(d.ids) && d.ids[tp.Partition] != 0 {
		return d.ids[tp.Partition] - 1
	}
	if n, ok := p.sparse[tp]; ok {
		return n
	}
	n := int32(len(p.tps))
	p.tps = append(p.tps, tp)
	switch {
	case tp.Partition >= 0 && int(tp.Partition) < len(d.ids):
		d.ids[tp.Partition] = n + 1
	case tp.Partition >= 0 && int(tp.Partition) < denseSlack+2*d.count:
		size := max(int(tp.Partition)+1, 2*len(d.ids))
		size = min(size, denseSlack+2*d.count)
		grown := make([]int32, size)
		copy(grown, d.ids)
		d.ids = grown
		d.ids[tp.Partition] = n + 1
	default:
		if p.sparse == nil {
			p.sparse = map[kafka.TopicPartition]int32{}
		}
		p.sparse[tp] = n
		return n
	}
	d.count++
	return n
}
