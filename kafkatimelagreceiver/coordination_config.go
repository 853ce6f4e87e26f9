package kafkatimelagreceiver

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/configcheck"
)

const (
	defaultCoordinationTopic      = "otelcol-kafkatimelag-coordination"
	defaultCoordinationPartitions = 60
	defaultSessionTimeout         = 15 * time.Second
	defaultHeartbeatInterval      = 3 * time.Second
)

// kafkaTopicName is what Kafka accepts as a topic name.
var kafkaTopicName = regexp.MustCompile(configcheck.TopicPattern)

// CoordinationConfig lets several collectors share the monitored groups:
// collectors with the same GroupID join one Kafka consumer group on a small
// coordination topic, and each reports the groups whose id hashes into the
// partitions it holds. Unset GroupID: this collector reports every group.
type CoordinationConfig struct {
	// GroupID is the coordination consumer group's id; collectors with the
	// same id share the monitored groups.
	GroupID string `mapstructure:"group_id"`
	// Topic is the coordination topic. It stays empty: only its partitions
	// are dealt out among the replicas. Several collector sets (different
	// group ids) can share it.
	Topic string `mapstructure:"topic"`
	// TopicPartitions is the partition count the topic is created with,
	// which bounds the useful number of replicas and how evenly groups
	// spread. An existing topic keeps its own count. An int, as the next
	// key, so that a value too large for the Kafka request's field is
	// refused rather than wrapped when decoded.
	TopicPartitions int `mapstructure:"topic_partitions"`
	// TopicReplicationFactor is the replication factor the topic is created
	// with; -1 is the brokers' default.
	TopicReplicationFactor int `mapstructure:"topic_replication_factor"`
	// CreateTopic allows the receiver to create the topic when it is
	// missing (which needs CREATE on it).
	CreateTopic bool `mapstructure:"create_topic"`
	// SessionTimeout is how long the coordinator waits for a silent replica
	// before the others take over its groups.
	SessionTimeout time.Duration `mapstructure:"session_timeout"`
	// HeartbeatInterval is how often a replica tells the coordinator it is
	// alive, and so how soon it learns that groups move.
	HeartbeatInterval time.Duration `mapstructure:"heartbeat_interval"`
}

func defaultCoordinationConfig() CoordinationConfig {
	return CoordinationConfig{
		Topic:                  defaultCoordinationTopic,
		TopicPartitions:        defaultCoordinationPartitions,
		TopicReplicationFactor: -1,
		CreateTopic:            true,
		SessionTimeout:         defaultSessionTimeout,
		HeartbeatInterval:      defaultHeartbeatInterval,
	}
}

// enabled tells whether replicas share the groups.
func (c CoordinationConfig) enabled() bool { return c.GroupID != "" }

// validate names the offending key under coordination; its keys are
// checked only when they are used.
func (c CoordinationConfig) validate() error {
	if !c.enabled() {
		return nil
	}
	errs := []error{
		configcheck.CoordinationTopicPartitions.Check(int64(c.TopicPartitions)),
		configcheck.CoordinationTopicReplicationFactor.Check(int64(c.TopicReplicationFactor)),
		configcheck.CoordinationSessionTimeout.Check(c.SessionTimeout),
		configcheck.CoordinationHeartbeatInterval.Check(c.HeartbeatInterval),
	}
	if !kafkaTopicName.MatchString(c.Topic) || c.Topic == "." || c.Topic == ".." {
		errs = append(errs, fmt.Errorf("coordination::topic: %q is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)", c.Topic))
	}
	// A replica learns of a rebalance at its next heartbeat and must rejoin
	// within half a session timeout: a third leaves it room.
	if configcheck.CoordinationSessionTimeout.Check(c.SessionTimeout) == nil && 3*c.HeartbeatInterval > c.SessionTimeout {
		errs = append(errs, fmt.Errorf("coordination::heartbeat_interval: must be at most a third of coordination::session_timeout (%s), got %s",
			configcheck.Short(c.SessionTimeout), configcheck.Short(c.HeartbeatInterval)))
	}
	return errors.Join(errs...)
}
