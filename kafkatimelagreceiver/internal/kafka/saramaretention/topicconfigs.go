// Package saramaretention reads, with sarama, what bounds the partitions'
// logs: the topics' retention configs (DescribeConfigs) and the sizes of
// the partitions' logs (DescribeLogDirs). Its calls go through a
// saramaconn.Conn, which gives each its deadline.
package saramaretention

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
)

// Retention reads the topics' retention and the partitions' sizes on a
// connection.
type Retention struct {
	conn *saramaconn.Conn
}

// New reads the retention and the sizes on conn, which it does not close.
func New(conn *saramaconn.Conn) *Retention {
	return &Retention{conn: conn}
}

// retentionConfigs are the only configs asked for: the response carries
// seven entries per topic, not the topic's hundred. local.retention.ms and
// local.retention.bytes are not among them: with tiered storage they bound
// the brokers' copy only, and a consumer still reads what they delete.
var retentionConfigs = []string{"cleanup.policy", "retention.ms", "retention.bytes", "remote.storage.enable",
	"message.timestamp.type", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms"}

// maxTopicsPerDescribeConfigs bounds the topics of one DescribeConfigs, as
// OffsetFetch and DescribeGroups are bounded: each answers in about 150
// bytes, so one request stays far below any response limit.
const maxTopicsPerDescribeConfigs = 1000

// TopicRetention reads cleanup.policy, retention.ms, retention.bytes and
// remote.storage.enable of the topics with DescribeConfigs. Any broker
// answers for a topic: the topics go to one broker (the least loaded that
// is not skipped for not answering), in requests of at most
// maxTopicsPerDescribeConfigs, one after the other.
func (c *Retention) TopicRetention(ctx context.Context, topics []string) (map[string]kafka.TopicRetention, error) {
	call, stop := c.conn.Begin(ctx)
	defer stop()
	out := make(map[string]kafka.TopicRetention, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	client, err := c.conn.Connected(ctx)
	if err != nil {
		return out, err
	}
	b := c.conn.AnsweringBroker(ctx, call, client)
	if b == nil {
		return out, errors.New("describe topic configs: no broker that answers")
	}
	_ = b.Open(c.conn.Config()) // already open: ErrAlreadyConnected
	var mu sync.Mutex
	err = saramaconn.PerBroker(ctx, c.conn, call, map[*sarama.Broker][]string{b: topics}, func(b *sarama.Broker, topics []string) error {
		var errs []error
		for start := 0; start < len(topics); start += maxTopicsPerDescribeConfigs {
			if err := ctx.Err(); err != nil {
				errs = append(errs, fmt.Errorf("describe configs of %d topics: %w", len(topics)-start, err))
				break
			}
			chunk := topics[start:min(start+maxTopicsPerDescribeConfigs, len(topics))]
			found, err := c.describeRetention(ctx, call, b, chunk)
			errs = append(errs, err)
			mu.Lock()
			for topic, r := range found {
				out[topic] = r
			}
			mu.Unlock()
		}
		return kafka.Join(errs...)
	})
	return out, err
}

func (c *Retention) describeRetention(ctx context.Context, call *brokerwatch.Call, b *sarama.Broker, topics []string) (map[string]kafka.TopicRetention, error) {
	req := &sarama.DescribeConfigsRequest{Version: 1}
	for _, t := range topics {
		req.Resources = append(req.Resources, &sarama.ConfigResource{Type: sarama.TopicResource, Name: t, ConfigNames: retentionConfigs})
	}
	resp, err := b.DescribeConfigs(req)
	c.conn.Observe(ctx, b, "DescribeConfigs", err)
	if err != nil {
		return nil, fmt.Errorf("describe configs of %d topics on broker %d: %w", len(topics), b.ID(), err)
	}
	out := make(map[string]kafka.TopicRetention, len(resp.Resources))
	var errs []error
	for _, res := range resp.Resources {
		if res == nil {
			continue
		}
		if kerr := sarama.KError(res.ErrorCode); !errors.Is(kerr, sarama.ErrNoError) {
			errs = append(errs, saramaconn.TopicError(res.Name, kafka.OperationDescribeConfigs, fmt.Errorf("describe configs of topic %q on broker %d: %w %s", res.Name, b.ID(), saramaconn.Authorization(kerr), res.ErrorMsg)))
			continue
		}
		r, err := retentionOf(res.Configs)
		if err != nil {
			errs = append(errs, saramaconn.TopicError(res.Name, kafka.OperationDescribeConfigs, fmt.Errorf("topic %q: %w", res.Name, err)))
			continue
		}
		out[res.Name] = r
	}
	for _, t := range topics {
		if _, ok := out[t]; !ok && !errorNames(errs, t) {
			errs = append(errs, saramaconn.TopicError(t, kafka.OperationDescribeConfigs, fmt.Errorf("describe configs of topic %q on broker %d: no answer", t, b.ID())))
		}
	}
	return out, kafka.Join(errs...)
}

// retentionOf reads the configs; one the broker leaves out takes Kafka's
// default (delete, 7 days, no size bound, not tiered, CreateTime, stamps
// unbounded): brokers before tiered storage (Kafka 3.6) do not know
// remote.storage.enable, nor those before KIP-937 (3.6) the timestamp
// bounds.
func retentionOf(configs []*sarama.ConfigEntry) (kafka.TopicRetention, error) {
	r := kafka.TopicRetention{Delete: true, RetentionMs: 7 * 24 * 3600 * 1000, RetentionBytes: -1}
	before, after := int64(math.MaxInt64), int64(math.MaxInt64)
	for _, e := range configs {
		if e == nil {
			continue
		}
		switch e.Name {
		case "cleanup.policy":
			r.Delete = kafka.CleanupPolicyDeletes(e.Value)
			r.Compact = kafka.CleanupPolicyCompacts(e.Value)
		case "message.timestamp.type":
			switch e.Value {
			case "LogAppendTime":
				r.LogAppendTime = true
			case "CreateTime":
			default:
				return r, fmt.Errorf("%s: %q is neither CreateTime nor LogAppendTime", e.Name, e.Value)
			}
		case "message.timestamp.before.max.ms", "message.timestamp.after.max.ms":
			v, err := strconv.ParseInt(e.Value, 10, 64)
			if err != nil || v < 0 {
				return r, fmt.Errorf("%s: %q is not a number of milliseconds", e.Name, e.Value)
			}
			if e.Name == "message.timestamp.before.max.ms" {
				before = v
			} else {
				after = v
			}
		case "remote.storage.enable":
			v, err := strconv.ParseBool(e.Value)
			if err != nil {
				return r, fmt.Errorf("%s: %q is not true or false", e.Name, e.Value)
			}
			r.RemoteStorage = v
		case "retention.ms", "retention.bytes":
			v, err := strconv.ParseInt(e.Value, 10, 64)
			if err != nil {
				return r, fmt.Errorf("%s: %q is not a number", e.Name, e.Value)
			}
			if e.Name == "retention.ms" {
				r.RetentionMs = v
			} else {
				r.RetentionBytes = v
			}
		}
	}
	r.StampBoundMs = kafka.StampBound(before, after)
	return r, nil
}

// errorNames tells whether one of errs is about topic.
func errorNames(errs []error, topic string) bool {
	for _, err := range errs {
		var te *kafka.TopicError
		if errors.As(err, &te) && te.Topic == topic {
			return true
		}
	}
	return false
}
