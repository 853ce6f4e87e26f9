package kafkatimelagreceiver

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

const (
	defaultCoordinationTopic      = "otelcol-kafkatimelag-coordination"
	defaultCoordinationPartitions = 60
	defaultSessionTimeout         = 15 * time.Second
	defaultHeartbeatInterval      = 3 * time.Second
	// maxCoordinationPartitions bounds what one replica may be handed: each
	// held partition is a paused claim in the Kafka client.
	maxCoordinationPartitions = 10000
)

// kafkaTopicName is what Kafka accepts as a topic name.
var kafkaTopicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

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
	// spread. An existing topic keeps its own count.
	TopicPartitions int32 `mapstructure:"topic_partitions"`
	// TopicReplicationFactor is the replication factor the topic is created
	// with; -1 is the brokers' default.
	TopicReplicationFactor int16 `mapstructure:"topic_replication_factor"`
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

// Validate: confmap prefixes the error with coordination.
func (c CoordinationConfig) Validate() error {
	if !c.enabled() {
		return nil
	}
	var errs []error
	if !kafkaTopicName.MatchString(c.Topic) || c.Topic == "." || c.Topic == ".." {
		errs = append(errs, fmt.Errorf("topic: %q is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)", c.Topic))
	}
	if c.TopicPartitions < 1 || c.TopicPartitions > maxCoordinationPartitions {
		errs = append(errs, fmt.Errorf("topic_partitions: must be between 1 and %d, got %d", maxCoordinationPartitions, c.TopicPartitions))
	}
	if c.TopicReplicationFactor != -1 && c.TopicReplicationFactor < 1 {
		errs = append(errs, fmt.Errorf("topic_replication_factor: must be -1 (the brokers' default) or at least 1, got %d", c.TopicReplicationFactor))
	}
	if c.SessionTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("session_timeout: must be at least 1ms, got %s", c.SessionTimeout))
	}
	// A replica learns of a rebalance at its next heartbeat and must rejoin
	// within half a session timeout: a third leaves it room.
	if c.HeartbeatInterval < time.Millisecond || 3*c.HeartbeatInterval > c.SessionTimeout {
		errs = append(errs, fmt.Errorf("heartbeat_interval: must be at least 1ms and at most a third of session_timeout (%s), got %s",
			c.SessionTimeout, c.HeartbeatInterval))
	}
	return errors.Join(errs...)
}
