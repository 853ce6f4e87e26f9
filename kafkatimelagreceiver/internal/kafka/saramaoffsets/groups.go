package saramaoffsets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/IBM/sarama"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
)

// ConsumerGroups sends one ListGroups to every broker, and remembers which
// broker listed each group as that group's coordinator.
func (c *Offsets) ConsumerGroups(ctx context.Context) ([]string, error) {
	call, stop := c.conn.Begin(ctx)
	defer stop()
	client, err := c.conn.Connected(ctx)
	if err != nil {
		return nil, err
	}
	brokers := client.Brokers()
	if len(brokers) == 0 {
		// sarama forgets the brokers a metadata refresh could not reach
		// (the whole cluster was down); only a refresh from the bootstrap
		// brokers brings them back.
		_, err := brokerwatch.Lookup(ctx, call, func() (struct{}, error) { return struct{}{}, client.RefreshMetadata() })
		if err != nil {
			return nil, fmt.Errorf("list groups: no brokers known: %w", err)
		}
		if brokers = client.Brokers(); len(brokers) == 0 {
			return nil, errors.New("list groups: no brokers known")
		}
	}
	work := make(map[*sarama.Broker]struct{}, len(brokers))
	for _, b := range brokers {
		work[b] = struct{}{}
	}
	var (
		mu       sync.Mutex
		groups   = map[string]struct{}{}
		shares   = map[string]struct{}{}
		listedBy = map[string]int32{}
		twice    = map[string]bool{}
	)
	err = saramaconn.PerBroker(ctx, c.conn, call, work, func(b *sarama.Broker, _ struct{}) error {
		if err := b.Open(client.Config()); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
			return fmt.Errorf("list groups on broker %d: connect: %w", b.ID(), err)
		}
		req := &sarama.ListGroupsRequest{}
		if c.conn.Config().Version.IsAtLeast(sarama.V2_6_0_0) {
			req.Version = 4
		}
		resp, err := b.ListGroups(req)
		c.conn.Observe(ctx, b, "ListGroups", err)
		if err != nil {
			return fmt.Errorf("list groups on broker %d: %w", b.ID(), err)
		}
		if !errors.Is(resp.Err, sarama.ErrNoError) {
			return fmt.Errorf("list groups on broker %d: %w", b.ID(), saramaconn.ClusterAuthorization(resp.Err))
		}
		mu.Lock()
		defer mu.Unlock()
		for id, protocolType := range resp.Groups {
			if protocolType == shareProtocolType {
				shares[id] = struct{}{}
				continue
			}
			// Groups with only committed offsets have no protocol type;
			// Connect workers have no consumer offsets.
			if protocolType == "consumer" || protocolType == "" {
				groups[id] = struct{}{}
				if _, seen := listedBy[id]; seen {
					twice[id] = true
				}
				listedBy[id] = b.ID()
			}
		}
		return nil
	})
	for id := range twice {
		delete(listedBy, id)
	}
	c.listedMu.Lock()
	c.listedBy = listedBy
	c.listedShare = sortedKeys(shares)
	c.listedMu.Unlock()
	out := make([]string, 0, len(groups))
	for g := range groups {
		out = append(out, g)
	}
	sort.Strings(out)
	return out, err
}

// shareProtocolType is the protocol type ListGroups gives share groups
// (KIP-932).
const shareProtocolType = "share"

// ListedShareGroups returns the share groups the last ConsumerGroups
// listing saw, sorted. Share groups are read with another client; this
// spares it a ListGroups per broker of its own.
func (c *Offsets) ListedShareGroups() []string {
	c.listedMu.Lock()
	defer c.listedMu.Unlock()
	return slices.Clone(c.listedShare)
}

func sortedKeys(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// offsetsRecorder stores one group's committed offsets and returns the
// errors of its partitions.
type offsetsRecorder func(group string, blocks map[string]map[int32]*sarama.OffsetFetchResponseBlock) error

// CommittedOffsets sends one OffsetFetch per coordinator carrying all its
// groups when the protocol allows it (v8, Kafka 3.0+), and one per group
// otherwise or when the batched request is refused.
func (c *Offsets) CommittedOffsets(ctx context.Context, groups []string) (map[string]kafka.Commits, error) {
	return c.committedOffsets(ctx, groups, nil)
}

// CommittedOffsetsOn is CommittedOffsets of the groups of on, each on the
// partitions it lists (none listed: every partition it committed on).
func (c *Offsets) CommittedOffsetsOn(ctx context.Context, on map[string][]kafka.TopicPartition) (map[string]kafka.Commits, error) {
	groups := make([]string, 0, len(on))
	for g := range on {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	return c.committedOffsets(ctx, groups, on)
}

// committedOffsets reads the groups' committed offsets, each on the
// partitions only lists (a group it does not list: every partition).
func (c *Offsets) committedOffsets(ctx context.Context, groups []string, only map[string][]kafka.TopicPartition) (map[string]kafka.Commits, error) {
	call, stop := c.conn.Begin(ctx)
	defer stop()
	client, err := c.conn.Connected(ctx)
	if err != nil {
		return nil, err
	}
	byCoordinator, coordinatorErr := c.groupsByCoordinator(ctx, call, client, groups)
	var (
		mu  sync.Mutex
		out = make(map[string]kafka.Commits, len(groups))
	)
	record := func(group string, blocks map[string]map[int32]*sarama.OffsetFetchResponseBlock) error {
		n := 0
		for _, partitions := range blocks {
			n += len(partitions)
		}
		offsets := make(kafka.Commits, 0, n)
		var errs []error
		for topic, partitions := range blocks {
			for partition, block := range partitions {
				// A KError is a value, compared as one: errors.Is would
				// cost a reflective check on each of a million blocks.
				if block.Err != sarama.ErrNoError {
					errs = append(errs, &kafka.PartitionError{Group: group, TopicPartition: kafka.TopicPartition{Topic: topic, Partition: partition},
						Err: saramaconn.TopicError(topic, kafka.OperationDescribe, fmt.Errorf("committed offset of group %q on %s/%d: %w",
							group, topic, partition, saramaconn.Authorization(block.Err)))})
					continue
				}
				if block.Offset < 0 {
					continue // no commit on this partition
				}
				offsets = append(offsets, kafka.Commit{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: partition}, Offset: block.Offset})
			}
		}
		offsets.Sort()
		mu.Lock()
		out[group] = offsets
		mu.Unlock()
		return kafka.Join(errs...)
	}
	batched := c.conn.Config().Version.IsAtLeast(sarama.V3_0_0_0)
	err = saramaconn.PerBroker(ctx, c.conn, call, byCoordinator, func(b *sarama.Broker, groups []string) error {
		if !batched {
			return c.offsetFetchEach(ctx, call, client, b, groups, only, record)
		}
		return c.offsetFetchChunks(ctx, call, client, b, groups, only, record)
	})
	return out, kafka.Join(coordinatorErr, err)
}

// maxGroupsPerOffsetFetch bounds the groups of one batched OffsetFetch. Its
// response carries every committed partition of every group in it, and a
// response over sarama's limit (MaxResponseSize, 100 MiB) fails all of them,
// scrape after scrape: one request for all the groups of a large coordinator
// could pass it. 100 groups of 1,000 committed partitions each answer in
// about 5 MB.
const maxGroupsPerOffsetFetch = 100

// offsetFetchChunks sends batched OffsetFetch requests (v8) of at most
// maxGroupsPerOffsetFetch groups each, one after the other. A broker that
// cannot take a batch gets one request per group from then on; a chunk
// whose response could not be decoded (too large, or garbled) is asked
// again one group per request, so that one group's answer cannot fail the
// others.
func (c *Offsets) offsetFetchChunks(ctx context.Context, call *brokerwatch.Call, client sarama.Client, b *sarama.Broker, groups []string, only map[string][]kafka.TopicPartition, record offsetsRecorder) error {
	var errs []error
	for start := 0; start < len(groups); start += maxGroupsPerOffsetFetch {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("fetch committed offsets of %d groups from coordinator %d: %w", len(groups)-start, b.ID(), err))
			break
		}
		chunk := groups[start:min(start+maxGroupsPerOffsetFetch, len(groups))]
		err := c.offsetFetchBatch(ctx, call, client, b, chunk, only, record)
		switch {
		case errors.Is(err, errBatchUnsupported):
			c.conn.Logger().Debug("broker refused a batched OffsetFetch; falling back to one request per group",
				zap.Int32("broker", b.ID()), zap.Error(err))
			return kafka.Join(append(errs, c.offsetFetchEach(ctx, call, client, b, groups[start:], only, record))...)
		case saramaconn.IsDecodingError(err):
			c.conn.Logger().Debug("a batched OffsetFetch response could not be decoded; asking its groups one by one",
				zap.Int32("broker", b.ID()), zap.Int("groups", len(chunk)), zap.Error(err))
			// Observe closed the connection: the stream may be out of step.
			if err := b.Open(client.Config()); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
				errs = append(errs, fmt.Errorf("fetch committed offsets from coordinator %d: reconnect: %w", b.ID(), err))
				continue
			}
			errs = append(errs, c.offsetFetchEach(ctx, call, client, b, chunk, only, record))
		default:
			errs = append(errs, err)
		}
	}
	return kafka.Join(errs...)
}

// offsetFetchEach sends one OffsetFetch per group.
func (c *Offsets) offsetFetchEach(ctx context.Context, call *brokerwatch.Call, client sarama.Client, b *sarama.Broker, groups []string, only map[string][]kafka.TopicPartition, record offsetsRecorder) error {
	var errs []error
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			errs = append(errs, saramaconn.GroupError(g, fmt.Errorf("fetch committed offsets of group %q: %w", g, err)))
			break
		}
		req := sarama.NewOffsetFetchRequest(c.conn.Config().Version, g, byTopic(only[g]))
		if req.Version >= 8 {
			// One group per request: build the v7 shape so a broker
			// without v8 reads it as well.
			req = &sarama.OffsetFetchRequest{Version: 7, ConsumerGroup: g}
			for _, tp := range only[g] {
				req.AddPartition(tp.Topic, tp.Partition)
			}
		}
		resp, err := b.FetchOffset(req)
		c.conn.Observe(ctx, b, "OffsetFetch", err)
		if err != nil {
			errs = append(errs, saramaconn.GroupError(g, fmt.Errorf("fetch committed offsets of group %q from coordinator %d: %w", g, b.ID(), err)))
			continue
		}
		if !errors.Is(resp.Err, sarama.ErrNoError) {
			c.refreshCoordinatorOn(ctx, call, client, g, resp.Err)
			errs = append(errs, saramaconn.GroupError(g, fmt.Errorf("fetch committed offsets of group %q from coordinator %d: %w", g, b.ID(), saramaconn.Authorization(resp.Err))))
			continue
		}
		errs = append(errs, record(g, resp.Blocks))
	}
	return kafka.Join(errs...)
}

var errBatchUnsupported = errors.New("batched OffsetFetch unsupported")

// offsetFetchBatch sends one OffsetFetch v8 for all the groups. It returns
// an error wrapping errBatchUnsupported when the broker cannot take one, for
// the caller to fall back to one request per group.
func (c *Offsets) offsetFetchBatch(ctx context.Context, call *brokerwatch.Call, client sarama.Client, b *sarama.Broker, groups []string, only map[string][]kafka.TopicPartition, record offsetsRecorder) error {
	req := &sarama.OffsetFetchRequest{Version: 8}
	for _, g := range groups {
		// Nil partitions: every partition the group has committed on.
		req.Groups = append(req.Groups, sarama.OffsetFetchRequestGroup{GroupId: g, Partitions: byTopic(only[g])})
	}
	resp, err := b.FetchOffset(req)
	c.conn.Observe(ctx, b, "OffsetFetch", err)
	if err != nil {
		var encErr sarama.PacketEncodingError
		if errors.As(err, &encErr) || errors.Is(err, sarama.ErrUnsupportedVersion) {
			return fmt.Errorf("%w: %w", errBatchUnsupported, err)
		}
		return fmt.Errorf("fetch committed offsets of %d groups from coordinator %d: %w", len(groups), b.ID(), err)
	}
	if resp.Version < 8 {
		return fmt.Errorf("%w: broker %d answered with version %d", errBatchUnsupported, b.ID(), resp.Version)
	}
	var errs []error
	for _, g := range resp.Groups {
		if !errors.Is(g.Err, sarama.ErrNoError) {
			c.refreshCoordinatorOn(ctx, call, client, g.GroupId, g.Err)
			errs = append(errs, saramaconn.GroupError(g.GroupId, fmt.Errorf("fetch committed offsets of group %q from coordinator %d: %w",
				g.GroupId, b.ID(), saramaconn.Authorization(g.Err))))
			continue
		}
		errs = append(errs, record(g.GroupId, g.Blocks))
	}
	return kafka.Join(errs...)
}

// refreshCoordinatorOn looks the group's coordinator up again when the
// broker asked says it is not (or not yet) the group's coordinator.
func (c *Offsets) refreshCoordinatorOn(ctx context.Context, call *brokerwatch.Call, client sarama.Client, group string, kerr sarama.KError) {
	switch kerr {
	case sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable, sarama.ErrOffsetsLoadInProgress:
		// The next scrape asks again; refreshing now points it at the right
		// broker, and the listing that named the wrong one is not trusted
		// for this group until the next listing.
		c.listedMu.Lock()
		delete(c.listedBy, group)
		c.listedMu.Unlock()
		if ctx.Err() != nil {
			return // the next call finds it out
		}
		_, err := brokerwatch.Lookup(ctx, call, func() (struct{}, error) { return struct{}{}, client.RefreshCoordinator(group) })
		if err != nil {
			c.conn.Logger().Debug("refresh coordinator", zap.String("group", group), zap.Error(err))
		}
	}
}

// groupsByCoordinator groups the groups by their coordinator broker: the
// broker that listed the group, else the client's answer, which it caches,
// so that only a group missing from the listing and not seen before (or
// whose coordinator moved) costs a FindCoordinator request.
func (c *Offsets) groupsByCoordinator(ctx context.Context, call *brokerwatch.Call, client sarama.Client, groups []string) (map[*sarama.Broker][]string, error) {
	listed := make([]int32, len(groups))
	c.listedMu.Lock()
	for i, g := range groups {
		id, ok := c.listedBy[g]
		if !ok {
			id = -1
		}
		listed[i] = id
	}
	c.listedMu.Unlock()
	var errs []error
	out := map[*sarama.Broker][]string{}
	for i, g := range groups {
		if listed[i] >= 0 {
			if b, err := client.Broker(listed[i]); err == nil {
				out[b] = append(out[b], g)
				continue
			}
		}
		if err := ctx.Err(); err != nil {
			// One error for the rest, not one per group: thousands of
			// groups may be left.
			errs = append(errs, fmt.Errorf("find coordinators of %d groups: %w", len(groups)-i, err))
			break
		}
		// A FindCoordinator on a cache miss: no lock held.
		coordinator, err := brokerwatch.Lookup(ctx, call, func() (*sarama.Broker, error) { return client.Coordinator(g) })
		if err != nil {
			errs = append(errs, saramaconn.GroupError(g, fmt.Errorf("find coordinator of group %q: %w", g, saramaconn.Authorization(err))))
			continue
		}
		out[coordinator] = append(out[coordinator], g)
	}
	return out, kafka.Join(errs...)
}

// byTopic groups partitions by topic; nil for none.
func byTopic(partitions []kafka.TopicPartition) map[string][]int32 {
	if len(partitions) == 0 {
		return nil
	}
	out := map[string][]int32{}
	for _, tp := range partitions {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	return out
}
