package kafka

import "context"

// CommitsOnReader reads groups' committed offsets on some partitions only:
// a coordinated replica asks the groups that another replica reports on
// the partitions of its own topics alone.
type CommitsOnReader interface {
	// CommittedOffsetsOn reads the committed offsets of each group of on,
	// on the partitions it lists (none listed: every partition it
	// committed on), as Cluster.CommittedOffsets does.
	CommittedOffsetsOn(ctx context.Context, on map[string][]TopicPartition) (map[string]Commits, error)
}
