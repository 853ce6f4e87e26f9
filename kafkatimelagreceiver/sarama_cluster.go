package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"go.uber.org/zap"
)

var errClusterClosed = errors.New("kafka cluster access is closed")

// saramaCluster implements cluster with sarama. It connects lazily, so that a
// collector whose brokers are down still starts, and reconnects after the
// client has failed for good.
type saramaCluster struct {
	brokers []string
	config  *sarama.Config
	logger  *zap.Logger
	metrics *requestMetrics

	mu     sync.Mutex
	client sarama.Client
	closed bool

	// listedBy is the broker whose ListGroups listed each group in the last
	// listing: a broker lists exactly the groups it coordinates, so the
	// listing every scrape sends anyway answers FindCoordinator for every
	// group at once (there is no batched FindCoordinator below v4, which
	// sarama does not speak). A group listed by two brokers (mid-move) is
	// left out and asked for the usual way.
	listedMu sync.Mutex
	listedBy map[string]int32
}

func newSaramaConfig(cfg *Config) (*sarama.Config, error) {
	version, err := sarama.ParseKafkaVersion(cfg.ProtocolVersion)
	if err != nil {
		return nil, fmt.Errorf("protocol_version: %w", err)
	}
	sc := sarama.NewConfig()
	sc.ClientID = cfg.ClientID
	sc.Version = version
	timeout := cfg.requestTimeout()
	sc.Net.DialTimeout = timeout
	sc.Net.ReadTimeout = timeout
	sc.Net.WriteTimeout = timeout
	// Full metadata is what tells the client every broker (groups live on
	// all of them) and it fails fast when no broker answers. It is refreshed
	// rarely: leadership changes are caught by the errors they cause.
	sc.Metadata.Full = true
	sc.Metadata.RefreshFrequency = 5 * time.Minute
	// Asking for a deleted topic's leader must not bring the topic back.
	sc.Metadata.AllowAutoTopicCreation = false
	sc.Metadata.Retry.Max = 1
	sc.Metadata.Retry.Backoff = 100 * time.Millisecond
	if err := configureSecurity(sc, cfg.Auth, cfg.TLS); err != nil {
		return nil, err
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("kafka client configuration: %w", err)
	}
	return sc, nil
}

func newSaramaCluster(cfg *Config, logger *zap.Logger, metrics *requestMetrics) (*saramaCluster, error) {
	sc, err := newSaramaConfig(cfg)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	warnInsecureSecurity(cfg, logger)
	return &saramaCluster{brokers: cfg.Brokers, config: sc, logger: logger, metrics: metrics}, nil
}

// connected returns a live client, connecting first if needed. The dial
// happens outside the lock; a racing second connection is closed.
func (c *saramaCluster) connected() (sarama.Client, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClusterClosed
	}
	existing := c.client
	c.mu.Unlock()
	if existing != nil && !existing.Closed() {
		return existing, nil
	}
	fresh, err := sarama.NewClient(c.brokers, c.config)
	if err != nil {
		return nil, fmt.Errorf("connect to brokers %v (%s): %w", c.brokers, securitySummary(c.config), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = fresh.Close()
		return nil, errClusterClosed
	}
	if c.client != nil && c.client != existing && !c.client.Closed() {
		_ = fresh.Close()
		return c.client, nil
	}
	if c.client != nil {
		_ = c.client.Close()
	}
	c.client = fresh
	return fresh, nil
}

func (c *saramaCluster) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.client == nil {
		return nil
	}
	err := c.client.Close()
	c.client = nil
	if errors.Is(err, sarama.ErrClosedClient) {
		return nil
	}
	return err
}

// observe counts a request and, when it timed out, closes the broker's
// connection: sarama keeps a connection open after a read timeout, and a
// broker that never answered one request answers none after it on that
// connection (responses come in order). The next request reconnects.
func (c *saramaCluster) observe(ctx context.Context, b *sarama.Broker, api string, err error) {
	c.metrics.request(ctx, api, err)
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		c.logger.Debug("closing the connection of a broker that did not answer in time",
			zap.Int32("broker", b.ID()), zap.String("api", api), zap.Error(err))
		_ = b.Close()
	}
}

// perBroker runs fn once per broker concurrently and waits for all of them.
// The brokers' own read deadlines bound each call; ctx is checked before
// each request is sent.
func perBroker[T any](ctx context.Context, work map[*sarama.Broker]T, fn func(*sarama.Broker, T) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for broker, item := range work {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = fmt.Errorf("broker %d (%s): %w", broker.ID(), broker.Addr(), ctxErr)
			} else {
				err = fn(broker, item)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *saramaCluster) consumerGroups(ctx context.Context) ([]string, error) {
	client, err := c.connected()
	if err != nil {
		return nil, err
	}
	brokers := client.Brokers()
	if len(brokers) == 0 {
		return nil, errors.New("list groups: no brokers known")
	}
	work := make(map[*sarama.Broker]struct{}, len(brokers))
	for _, b := range brokers {
		work[b] = struct{}{}
	}
	var (
		mu       sync.Mutex
		groups   = map[string]struct{}{}
		listedBy = map[string]int32{}
		twice    = map[string]bool{}
	)
	err = perBroker(ctx, work, func(b *sarama.Broker, _ struct{}) error {
		if err := b.Open(client.Config()); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
			return fmt.Errorf("list groups on broker %d: connect: %w", b.ID(), err)
		}
		req := &sarama.ListGroupsRequest{}
		if c.config.Version.IsAtLeast(sarama.V2_6_0_0) {
			req.Version = 4
		}
		resp, err := b.ListGroups(req)
		c.observe(ctx, b, "ListGroups", err)
		if err != nil {
			return fmt.Errorf("list groups on broker %d: %w", b.ID(), err)
		}
		if !errors.Is(resp.Err, sarama.ErrNoError) {
			return fmt.Errorf("list groups on broker %d: %w", b.ID(), resp.Err)
		}
		mu.Lock()
		defer mu.Unlock()
		for id, protocolType := range resp.Groups {
			// Groups with only committed offsets have no protocol type;
			// Connect workers and share groups have no consumer offsets.
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
	c.listedMu.Unlock()
	out := make([]string, 0, len(groups))
	for g := range groups {
		out = append(out, g)
	}
	sort.Strings(out)
	return out, err
}

// committedOffsets sends one OffsetFetch per coordinator carrying all its
// groups when the protocol allows it (v8, Kafka 3.0+), and one per group
// otherwise or when the batched request is refused.
func (c *saramaCluster) committedOffsets(ctx context.Context, groups []string) (map[string]map[topicPartition]int64, error) {
	client, err := c.connected()
	if err != nil {
		return nil, err
	}
	byCoordinator, coordinatorErr := c.groupsByCoordinator(client, groups)
	errs := []error{coordinatorErr}
	var (
		mu  sync.Mutex
		out = make(map[string]map[topicPartition]int64, len(groups))
	)
	record := func(group string, blocks map[string]map[int32]*sarama.OffsetFetchResponseBlock) error {
		n := 0
		for _, partitions := range blocks {
			n += len(partitions)
		}
		offsets := make(map[topicPartition]int64, n)
		var errs []error
		for topic, partitions := range blocks {
			for partition, block := range partitions {
				if !errors.Is(block.Err, sarama.ErrNoError) {
					errs = append(errs, topicError(topic, "Describe", fmt.Errorf("committed offset of group %q on %s/%d: %w", group, topic, partition, block.Err)))
					continue
				}
				if block.Offset < 0 {
					continue // no commit on this partition
				}
				offsets[topicPartition{topic, partition}] = block.Offset
			}
		}
		mu.Lock()
		out[group] = offsets
		mu.Unlock()
		return errors.Join(errs...)
	}
	batched := c.config.Version.IsAtLeast(sarama.V3_0_0_0)
	err = perBroker(ctx, byCoordinator, func(b *sarama.Broker, groups []string) error {
		if batched && len(groups) > 1 {
			err := c.offsetFetchBatch(ctx, client, b, groups, record)
			if err == nil || !errors.Is(err, errBatchUnsupported) {
				return err
			}
			c.logger.Debug("broker refused a batched OffsetFetch; falling back to one request per group",
				zap.Int32("broker", b.ID()), zap.Error(err))
		}
		var errs []error
		for _, g := range groups {
			if err := ctx.Err(); err != nil {
				errs = append(errs, fmt.Errorf("fetch committed offsets of group %q: %w", g, err))
				break
			}
			req := sarama.NewOffsetFetchRequest(c.config.Version, g, nil)
			if req.Version >= 8 {
				// One group per request: build the v7 shape so a broker
				// without v8 reads it as well.
				req = &sarama.OffsetFetchRequest{Version: 7, ConsumerGroup: g}
			}
			resp, err := b.FetchOffset(req)
			c.observe(ctx, b, "OffsetFetch", err)
			if err != nil {
				errs = append(errs, fmt.Errorf("fetch committed offsets of group %q from coordinator %d: %w", g, b.ID(), err))
				continue
			}
			if !errors.Is(resp.Err, sarama.ErrNoError) {
				c.refreshCoordinatorOn(client, g, resp.Err)
				errs = append(errs, groupError(g, fmt.Errorf("fetch committed offsets of group %q from coordinator %d: %w", g, b.ID(), resp.Err)))
				continue
			}
			if err := record(g, resp.Blocks); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
	if err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

var errBatchUnsupported = errors.New("batched OffsetFetch unsupported")

func (c *saramaCluster) offsetFetchBatch(
	ctx context.Context,
	client sarama.Client,
	b *sarama.Broker,
	groups []string,
	record func(string, map[string]map[int32]*sarama.OffsetFetchResponseBlock) error,
) error {
	req := &sarama.OffsetFetchRequest{Version: 8}
	for _, g := range groups {
		// Nil partitions: every partition the group has committed on.
		req.Groups = append(req.Groups, sarama.OffsetFetchRequestGroup{GroupId: g})
	}
	resp, err := b.FetchOffset(req)
	c.observe(ctx, b, "OffsetFetch", err)
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
			c.refreshCoordinatorOn(client, g.GroupId, g.Err)
			errs = append(errs, groupError(g.GroupId, fmt.Errorf("fetch committed offsets of group %q from coordinator %d: %w", g.GroupId, b.ID(), g.Err)))
			continue
		}
		if err := record(g.GroupId, g.Blocks); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *saramaCluster) refreshCoordinatorOn(client sarama.Client, group string, kerr sarama.KError) {
	switch kerr {
	case sarama.ErrNotCoordinatorForConsumer, sarama.ErrConsumerCoordinatorNotAvailable, sarama.ErrOffsetsLoadInProgress:
		// The next scrape asks again; refreshing now points it at the right
		// broker, and the listing that named the wrong one is not trusted
		// for this group until the next listing.
		c.listedMu.Lock()
		delete(c.listedBy, group)
		c.listedMu.Unlock()
		if err := client.RefreshCoordinator(group); err != nil {
			c.logger.Debug("refresh coordinator", zap.String("group", group), zap.Error(err))
		}
	}
}

// groupsByCoordinator groups the groups by their coordinator broker: the
// broker that listed the group, else the client's answer, which it caches,
// so that only a group missing from the listing and not seen before (or
// whose coordinator moved) costs a FindCoordinator request.
func (c *saramaCluster) groupsByCoordinator(client sarama.Client, groups []string) (map[*sarama.Broker][]string, error) {
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
		// Network I/O on a cache miss: no lock held.
		coordinator, err := client.Coordinator(g)
		if err != nil {
			errs = append(errs, groupError(g, fmt.Errorf("find coordinator of group %q: %w", g, err)))
			continue
		}
		out[coordinator] = append(out[coordinator], g)
	}
	return out, errors.Join(errs...)
}

// byLeader groups partitions by their leader broker. Partitions whose leader
// cannot be found are reported in the error and left out.
func (c *saramaCluster) byLeader(client sarama.Client, partitions []topicPartition) (map[*sarama.Broker][]topicPartition, error) {
	var errs []error
	out := map[*sarama.Broker][]topicPartition{}
	failedTopics := map[string]bool{}
	for _, tp := range partitions {
		if failedTopics[tp.topic] {
			continue
		}
		leader, err := client.Leader(tp.topic, tp.partition)
		if err != nil {
			if errors.Is(err, sarama.ErrUnknownTopicOrPartition) || errors.Is(err, sarama.ErrLeaderNotAvailable) ||
				errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
				// Do not ask again for every partition of a missing (or
				// forbidden) topic.
				failedTopics[tp.topic] = true
			}
			errs = append(errs, topicError(tp.topic, "Describe", fmt.Errorf("find leader of %s/%d: %w", tp.topic, tp.partition, err)))
			continue
		}
		out[leader] = append(out[leader], tp)
	}
	return out, errors.Join(errs...)
}

func (c *saramaCluster) endOffsets(ctx context.Context, partitions []topicPartition) (offsetRead, error) {
	return c.listOffsets(ctx, partitions, sarama.OffsetNewest)
}

func (c *saramaCluster) startOffsets(ctx context.Context, partitions []topicPartition) (offsetRead, error) {
	return c.listOffsets(ctx, partitions, sarama.OffsetOldest)
}

// listOffsets sends ONE ListOffsets request per leader broker carrying all of
// its partitions.
func (c *saramaCluster) listOffsets(ctx context.Context, partitions []topicPartition, which int64) (offsetRead, error) {
	read := offsetRead{offsets: make(map[topicPartition]int64, len(partitions))}
	client, err := c.connected()
	if err != nil {
		return read, err
	}
	byLeader, leaderErr := c.byLeader(client, partitions)
	var (
		mu    sync.Mutex
		stale = map[string]struct{}{}
	)
	read.sent = time.Now()
	err = perBroker(ctx, byLeader, func(b *sarama.Broker, tps []topicPartition) error {
		req := sarama.NewOffsetRequest(c.config.Version)
		for _, tp := range tps {
			req.AddBlock(tp.topic, tp.partition, which, 1)
		}
		resp, err := b.GetAvailableOffsets(req)
		c.observe(ctx, b, "ListOffsets", err)
		if err != nil {
			return fmt.Errorf("list offsets from broker %d: %w", b.ID(), err)
		}
		var errs []error
		mu.Lock()
		defer mu.Unlock()
		for _, tp := range tps {
			block := resp.GetBlock(tp.topic, tp.partition)
			if block == nil {
				errs = append(errs, fmt.Errorf("list offsets of %s/%d from broker %d: no answer", tp.topic, tp.partition, b.ID()))
				continue
			}
			if !errors.Is(block.Err, sarama.ErrNoError) {
				errs = append(errs, topicError(tp.topic, "Describe", fmt.Errorf("list offsets of %s/%d from broker %d: %w", tp.topic, tp.partition, b.ID(), block.Err)))
				stale[tp.topic] = struct{}{}
				continue
			}
			offset := block.Offset
			if req.Version == 0 && len(block.Offsets) > 0 {
				offset = block.Offsets[0]
			}
			read.offsets[tp] = offset
		}
		return errors.Join(errs...)
	})
	read.received = time.Now()
	if len(stale) > 0 {
		// Leadership moved or the topic changed: the next read should see
		// fresh metadata.
		topics := make([]string, 0, len(stale))
		for t := range stale {
			topics = append(topics, t)
		}
		if refreshErr := client.RefreshMetadata(topics...); refreshErr != nil {
			c.logger.Debug("refresh metadata", zap.Strings("topics", topics), zap.Error(refreshErr))
		}
	}
	return read, errors.Join(leaderErr, err)
}

// recordTimestamps fetches the record at each offset with a minimal Fetch:
// one request per leader broker per round, where a round holds at most one
// offset per partition (a Fetch names each partition once).
func (c *saramaCluster) recordTimestamps(ctx context.Context, records []recordAt) (map[recordAt]recordTimestamp, error) {
	out := make(map[recordAt]recordTimestamp, len(records))
	if len(records) == 0 {
		return out, nil
	}
	client, err := c.connected()
	if err != nil {
		return out, err
	}
	var rounds [][]recordAt
	seen := map[topicPartition]int{} // partition -> rounds it already appears in
	for _, r := range records {
		i := seen[r.topicPartition]
		seen[r.topicPartition] = i + 1
		if i == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[i] = append(rounds[i], r)
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	for _, round := range rounds {
		tps := make([]topicPartition, len(round))
		offsetOf := make(map[topicPartition]int64, len(round))
		for i, r := range round {
			tps[i] = r.topicPartition
			offsetOf[r.topicPartition] = r.offset
		}
		byLeader, err := c.byLeader(client, tps)
		if err != nil {
			errs = append(errs, err)
		}
		err = perBroker(ctx, byLeader, func(b *sarama.Broker, tps []topicPartition) error {
			// A partition whose batch does not fit the limits comes back
			// empty unless it is first in the response (KIP-74), so the
			// empty ones go again, until a request makes no progress.
			pending := tps
			for len(pending) > 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("fetch records from broker %d: %w", b.ID(), err)
				}
				req := c.newFetchRequest()
				for _, tp := range pending {
					req.AddBlock(tp.topic, tp.partition, offsetOf[tp], fetchBytesPerPartition, -1)
				}
				resp, err := b.Fetch(req)
				c.observe(ctx, b, "Fetch", err)
				if err != nil {
					return fmt.Errorf("fetch records from broker %d: %w", b.ID(), err)
				}
				var (
					errs  []error
					again []topicPartition
				)
				mu.Lock()
				for _, tp := range pending {
					at := recordAt{tp, offsetOf[tp]}
					block := resp.GetBlock(tp.topic, tp.partition)
					if block == nil {
						errs = append(errs, fmt.Errorf("fetch record %s/%d@%d from broker %d: no answer", tp.topic, tp.partition, at.offset, b.ID()))
						continue
					}
					if errors.Is(block.Err, sarama.ErrOffsetOutOfRange) {
						continue // deleted by retention, or not written yet
					}
					if !errors.Is(block.Err, sarama.ErrNoError) {
						errs = append(errs, topicError(tp.topic, "Read", fmt.Errorf("fetch record %s/%d@%d from broker %d: %w", tp.topic, tp.partition, at.offset, b.ID(), block.Err)))
						continue
					}
					if ts, ok := firstRecordAtOrAfter(block, at.offset); ok {
						out[at] = ts
					} else if block.HighWaterMarkOffset > at.offset {
						again = append(again, tp)
					}
				}
				mu.Unlock()
				if len(errs) > 0 {
					return errors.Join(errs...)
				}
				if len(again) == len(pending) {
					return fmt.Errorf("fetch records from broker %d: %d partitions returned no record below their high watermark", b.ID(), len(again))
				}
				pending = again
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// fetchBytesPerPartition is Kafka's default max.message.bytes: a batch up to
// that size fits, so one record's timestamp never needs a second read of the
// same partition. The response limit (newFetchRequest) bounds the memory of a
// request; partitions it cut off are asked again.
const fetchBytesPerPartition = 1 << 20

func (c *saramaCluster) newFetchRequest() *sarama.FetchRequest {
	req := &sarama.FetchRequest{MaxWaitTime: 0, MinBytes: 1, MaxBytes: 8 << 20, Isolation: sarama.ReadUncommitted}
	v := c.config.Version
	switch {
	case v.IsAtLeast(sarama.V2_3_0_0):
		req.Version = 11
	case v.IsAtLeast(sarama.V2_1_0_0):
		req.Version = 10
	case v.IsAtLeast(sarama.V0_11_0_0):
		req.Version = 4
	case v.IsAtLeast(sarama.V0_10_0_0):
		req.Version = 2
	}
	return req
}

// firstRecordAtOrAfter finds the first data record with offset >= want and
// returns its timestamp (the batch's append time under LogAppendTime).
func firstRecordAtOrAfter(block *sarama.FetchResponseBlock, want int64) (recordTimestamp, bool) {
	for _, records := range block.RecordsSet {
		if records == nil {
			continue
		}
		if batch := records.RecordBatch; batch != nil {
			if batch.Control {
				continue
			}
			for _, r := range batch.Records {
				offset := batch.FirstOffset + r.OffsetDelta
				if offset < want {
					continue
				}
				ts := batch.FirstTimestamp.Add(r.TimestampDelta)
				if batch.LogAppendTime {
					ts = batch.MaxTimestamp
				}
				return recordTimestamp{offset: offset, timestamp: ts.UnixNano()}, true
			}
		}
		if set := records.MsgSet; set != nil {
			for _, mb := range set.Messages {
				if mb.Offset < want || mb.Msg == nil {
					continue
				}
				if len(mb.Messages()) > 0 {
					for _, inner := range mb.Messages() {
						if inner.Offset >= want && inner.Msg != nil {
							return recordTimestamp{offset: inner.Offset, timestamp: inner.Msg.Timestamp.UnixNano()}, true
						}
					}
					continue
				}
				return recordTimestamp{offset: mb.Offset, timestamp: mb.Msg.Timestamp.UnixNano()}, true
			}
		}
	}
	return recordTimestamp{}, false
}
