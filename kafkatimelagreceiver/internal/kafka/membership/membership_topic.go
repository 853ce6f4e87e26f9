package membership

import (
	"errors"
	"fmt"

	"github.com/IBM/sarama"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
)

// ensureTopic returns the coordination topic's partition count, creating
// the topic first when it is missing and that is allowed.
func (m *Member) ensureTopic(client sarama.Client) (int32, error) {
	topic := m.settings.Topic
	partitions, err := client.Partitions(topic)
	if err == nil {
		if n := int32(len(partitions)); n != m.settings.Partitions {
			m.logger.Debug("coordination topic has another partition count than configured; using the topic's",
				zap.String("topic", topic), zap.Int32("partitions", n), zap.Int32("configured", m.settings.Partitions))
		}
		return int32(len(partitions)), nil
	}
	if !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return 0, fmt.Errorf("coordination topic %q: %w", topic, saramaconn.ClusterAuthorization(err))
	}
	if !m.settings.CreateTopic {
		return 0, fmt.Errorf("coordination topic %q does not exist and coordination::create_topic is false: create it with %d partitions", topic, m.settings.Partitions)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return 0, fmt.Errorf("create coordination topic %q: find the controller: %w", topic, err)
	}
	// The admin shares the client, which Close closes: the admin is not
	// closed on its own.
	err = admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions:     m.settings.Partitions,
		ReplicationFactor: m.settings.ReplicationFactor,
	}, false)
	switch {
	case err == nil:
		m.logger.Info("coordination: created the coordination topic",
			zap.String("topic", topic), zap.Int32("partitions", m.settings.Partitions))
	case errors.Is(err, sarama.ErrTopicAlreadyExists):
		// A peer created it first.
	default:
		return 0, fmt.Errorf("create coordination topic %q (needs CREATE on the topic or the cluster, or create it yourself with %d partitions): %w",
			topic, m.settings.Partitions, saramaconn.ClusterAuthorization(err))
	}
	if err := client.RefreshMetadata(topic); err != nil {
		return 0, fmt.Errorf("coordination topic %q: %w", topic, err)
	}
	partitions, err = client.Partitions(topic)
	if err != nil {
		return 0, fmt.Errorf("coordination topic %q: %w", topic, err)
	}
	return int32(len(partitions)), nil
}
