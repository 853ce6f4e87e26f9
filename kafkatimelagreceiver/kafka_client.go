package kafkatimelagreceiver

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramacluster"
)

// clusterSettings translates the configuration into the Kafka client's.
func (cfg *Config) clusterSettings(logger *zap.Logger, observer kafka.RequestObserver) saramacluster.Settings {
	s := saramacluster.Settings{
		Brokers:         cfg.Brokers,
		ClientID:        cfg.ClientID,
		ProtocolVersion: cfg.ProtocolVersion,
		RequestTimeout:  cfg.requestTimeout(),
		TLS:             cfg.TLS,
		Logger:          logger,
		Observer:        observer,
	}
	if sasl := cfg.Auth.SASL; sasl != nil {
		s.SASL = &saramacluster.SASL{
			Mechanism:        kafka.SASLMechanism(sasl.Mechanism),
			Username:         sasl.Username,
			Password:         string(sasl.Password),
			HandshakeVersion: sasl.Version,
		}
	}
	return s
}

// newCluster builds the Kafka access layer, which connects lazily: a
// cluster that is down does not stop the collector.
func newCluster(cfg *Config, logger *zap.Logger, observer kafka.RequestObserver) (kafka.Cluster, error) {
	return saramacluster.New(cfg.clusterSettings(logger, observer))
}

// newMembership joins the replicas sharing the monitored groups, in the
// background: a cluster that is down does not stop the collector.
func newMembership(cfg *Config, logger *zap.Logger) (kafka.Membership, error) {
	c := cfg.Coordination
	return saramacluster.NewMembership(cfg.clusterSettings(logger, nil), saramacluster.MembershipSettings{
		GroupID:           c.GroupID,
		Topic:             c.Topic,
		Partitions:        c.TopicPartitions,
		ReplicationFactor: c.TopicReplicationFactor,
		CreateTopic:       c.CreateTopic,
		SessionTimeout:    c.SessionTimeout,
		HeartbeatInterval: c.HeartbeatInterval,
	})
}

// validateClient checks what only the Kafka client can tell: the protocol
// version, and the TLS material, loaded now so that a missing or unreadable
// CA, certificate or key is reported when the configuration is validated
// rather than at the first connection.
func (cfg *Config) validateClient() error {
	if err := saramacluster.CheckVersion(cfg.ProtocolVersion); err != nil {
		return fmt.Errorf("protocol_version: %q is not a Kafka version: %w", cfg.ProtocolVersion, err)
	}
	if cfg.Coordination.enabled() {
		if err := saramacluster.CheckMembershipVersion(cfg.ProtocolVersion); err != nil {
			return fmt.Errorf("coordination.group_id: %w", err)
		}
	}
	if cfg.TLS == nil {
		return nil
	}
	if _, err := cfg.TLS.LoadTLSConfig(context.Background()); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}
