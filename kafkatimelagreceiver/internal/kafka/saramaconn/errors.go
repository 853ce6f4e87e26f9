package saramaconn

import (
	"errors"

	"github.com/IBM/sarama"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Authorization types a broker's refusal to let the principal see a group or
// topic, so that callers recognise ACL denials without reading messages.
func Authorization(err error) error {
	if errors.Is(err, sarama.ErrGroupAuthorizationFailed) || errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		return &kafka.AuthorizationError{Err: err}
	}
	return err
}

// ClusterAuthorization types a refusal of a request about the whole
// cluster, which a principal without cluster permissions is refused.
func ClusterAuthorization(err error) error {
	if errors.Is(err, sarama.ErrClusterAuthorizationFailed) {
		return &kafka.AuthorizationError{Err: err}
	}
	return Authorization(err)
}

// GroupError is err about the group (kafka.GroupError).
func GroupError(group string, err error) error {
	return &kafka.GroupError{Group: group, Err: err}
}

// TopicError is err of an operation on the topic (kafka.TopicError).
func TopicError(topic, operation string, err error) error {
	return &kafka.TopicError{Topic: topic, Operation: operation, Err: err}
}
