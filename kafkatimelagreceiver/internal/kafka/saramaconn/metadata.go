package saramaconn

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
)

// identifyAttempts bounds how many brokers Identify asks before giving up:
// a down broker costs a request timeout, and the next sample asks again.
const identifyAttempts = 3

// Identify reads the cluster id and the topics' ids with one Metadata
// request, at the highest version the broker speaks (topic ids come with
// version 10, Kafka 2.8; the cluster id with version 2). Topics the cluster
// does not know are absent without an error: the offset reads report them.
func (c *Conn) Identify(ctx context.Context, topics []string) (*kafka.Identity, error) {
	call, stop := c.Begin(ctx)
	defer stop()
	if len(topics) == 0 {
		// A Metadata request without topic names asks for every topic.
		return nil, errors.New("identify: no topics to ask about")
	}
	client, err := c.Connected(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.Metadata(ctx, call, client, topics)
	if err != nil {
		return nil, fmt.Errorf("read topic ids of %d topics: %w", len(topics), err)
	}
	return identityOf(resp)
}

// Metadata sends one Metadata request for the topics, without creating any,
// to the least loaded broker; one that does not answer is passed over for
// another, up to identifyAttempts. sarama's cache is left as it is.
func (c *Conn) Metadata(ctx context.Context, call *brokerwatch.Call, client sarama.Client, topics []string) (*sarama.MetadataResponse, error) {
	var errs []error
	// Weighing the brokers' load waits for the request each has on the
	// wire.
	candidates, err := brokerwatch.Lookup(ctx, call, func() ([]*sarama.Broker, error) { return identifyCandidates(client), nil })
	if err != nil {
		return nil, fmt.Errorf("pick a broker to ask for metadata: %w", err)
	}
	for _, b := range candidates {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := c.watch.Skipping(b.Addr()); err != nil {
			errs = append(errs, fmt.Errorf("metadata from broker %d: %w", b.ID(), err))
			continue
		}
		if err := call.GaveUpOn(b.Addr()); err != nil {
			errs = append(errs, fmt.Errorf("metadata from broker %d: %w", b.ID(), err))
			continue
		}
		resp, err := c.metadataFrom(ctx, call, b, topics)
		c.Observe(ctx, b, "Metadata", err)
		if err == nil {
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("metadata from broker %d: %w", b.ID(), err))
	}
	if len(errs) == 0 {
		return nil, errors.New("no broker to ask for metadata")
	}
	return nil, kafka.Join(errs...)
}

// metadataFrom sends one Metadata request for the topics to b, recorded as
// a wait of the call on it (brokerwatch.Call.WaitingOn).
func (c *Conn) metadataFrom(ctx context.Context, call *brokerwatch.Call, b *sarama.Broker, topics []string) (*sarama.MetadataResponse, error) {
	defer call.WaitingOn(b.Addr())()
	_ = b.Open(c.config) // already open: ErrAlreadyConnected
	req := sarama.NewMetadataRequest(c.config.Version, topics)
	req.AllowAutoTopicCreation = false
	return b.GetMetadata(req)
}

// AnsweringBroker is the least loaded broker not skipped for silence, of
// those Identify would ask, for a request any broker answers; nil: none.
func (c *Conn) AnsweringBroker(ctx context.Context, call *brokerwatch.Call, client sarama.Client) *sarama.Broker {
	candidates, _ := brokerwatch.Lookup(ctx, call, func() ([]*sarama.Broker, error) { return identifyCandidates(client), nil })
	for _, b := range candidates {
		if c.watch.Skipping(b.Addr()) == nil {
			return b
		}
	}
	return nil
}

// identifyCandidates are the brokers to ask, the least loaded first.
func identifyCandidates(client sarama.Client) []*sarama.Broker {
	first := client.LeastLoadedBroker()
	out := make([]*sarama.Broker, 0, identifyAttempts)
	if first != nil {
		out = append(out, first)
	}
	for _, b := range client.Brokers() {
		if len(out) == identifyAttempts {
			break
		}
		if b != first {
			out = append(out, b)
		}
	}
	return out
}

func identityOf(resp *sarama.MetadataResponse) (*kafka.Identity, error) {
	id := &kafka.Identity{Topics: make(map[string]kafka.TopicID, len(resp.Topics))}
	if resp.ClusterID != nil {
		id.ClusterID = *resp.ClusterID
	}
	var errs []error
	for _, t := range resp.Topics {
		switch {
		case errors.Is(t.Err, sarama.ErrNoError):
			if t.Uuid != (sarama.Uuid{}) {
				id.Topics[t.Name] = kafka.TopicID(t.Uuid)
			}
		case errors.Is(t.Err, sarama.ErrUnknownTopicOrPartition):
		default:
			errs = append(errs, TopicError(t.Name, kafka.OperationDescribe,
				fmt.Errorf("read topic id of %s: %w", t.Name, Authorization(t.Err))))
		}
	}
	return id, kafka.Join(errs...)
}

// unknownPartitions returns the partitions the cluster does not have. The
// topics the client's metadata lacks, or holds with fewer partitions than
// asked for, are asked about together in one Metadata request: asking
// sarama for each one's leader would refresh each topic on its own, with a
// retry after a backoff, one after the other, so that a read naming a
// hundred deleted topics took twenty seconds. Those the answer shows to
// exist are then refreshed into sarama's cache together; those it does not
// judge (denied, leaderless) are left to the leader lookup, which types
// its error.
func (c *Conn) unknownPartitions(ctx context.Context, call *brokerwatch.Call, client sarama.Client, partitions []kafka.TopicPartition) map[kafka.TopicPartition]bool {
	missing := missingFromMetadata(client, partitions)
	if len(missing) == 0 {
		return nil
	}
	var topics []string
	seen := map[string]bool{}
	for _, tp := range missing {
		if !seen[tp.Topic] {
			seen[tp.Topic] = true
			topics = append(topics, tp.Topic)
		}
	}
	resp, err := c.Metadata(ctx, call, client, topics)
	if err != nil {
		c.logger.Debug("metadata of topics missing from the cache", zap.Int("topics", len(topics)), zap.Error(err))
		return nil
	}
	partitionCount := map[string]int{} // of the topics the answer judges
	var existing []string
	for _, t := range resp.Topics {
		switch {
		case errors.Is(t.Err, sarama.ErrUnknownTopicOrPartition):
			partitionCount[t.Name] = 0
		case errors.Is(t.Err, sarama.ErrNoError):
			partitionCount[t.Name] = len(t.Partitions)
			existing = append(existing, t.Name)
		}
	}
	if len(existing) > 0 {
		c.refreshMetadata(ctx, call, client, existing, false)
	}
	out := map[kafka.TopicPartition]bool{}
	for _, tp := range missing {
		if n, judged := partitionCount[tp.Topic]; judged && (tp.Partition < 0 || int(tp.Partition) >= n) {
			out[tp] = true
		}
	}
	return out
}

// missingFromMetadata returns the partitions whose topic the client's
// metadata cache lacks or holds with fewer partitions (Kafka numbers them
// from 0). It sends nothing.
func missingFromMetadata(client sarama.Client, partitions []kafka.TopicPartition) []kafka.TopicPartition {
	cached, err := client.Topics()
	if err != nil {
		return nil // a closed client: the leader lookup says so
	}
	wanted := map[string]int{} // topic -> partitions in the cache, -1 when absent
	for _, tp := range partitions {
		wanted[tp.Topic] = -1
	}
	for _, topic := range cached {
		if _, ok := wanted[topic]; !ok {
			continue
		}
		// Cached topics are answered from the cache.
		if ps, err := client.Partitions(topic); err == nil {
			wanted[topic] = len(ps)
		}
	}
	var out []kafka.TopicPartition
	for _, tp := range partitions {
		if tp.Partition < 0 || int(tp.Partition) >= wanted[tp.Topic] {
			out = append(out, tp)
		}
	}
	return out
}
