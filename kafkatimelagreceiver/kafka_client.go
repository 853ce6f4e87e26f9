package kafkatimelagreceiver

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/membership"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramacluster"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/oauthbearer"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
)

const (
	// minProtocolVersion is the oldest protocol version whose requests the
	// receiver sends: topics' retention is read with DescribeConfigs v1
	// (Kafka 1.1). Below 0.11 no record timestamp is read, and below 0.10.2
	// the committed offsets of all topics cannot be asked for, so nothing at
	// all is reported, without an error.
	minProtocolVersion = "1.1.0"
	// rackAwareVersion is the first protocol version whose Fetch carries the
	// client's rack (KIP-392).
	rackAwareVersion = "2.3.0"
)

// checkProtocolVersion checks what only the Kafka client can tell: that it
// can speak the protocol version, and rack-aware fetches and coordination
// at that version.
func (cfg *Config) checkProtocolVersion() error {
	if cfg.ProtocolVersion == "" {
		return fmt.Errorf("protocol_version: must be set (default %s): the Kafka client needs the highest version to speak", defaultProtocolVersion())
	}
	if err := saramacluster.CheckVersion(cfg.ProtocolVersion); err != nil {
		return fmt.Errorf("protocol_version: %q is not a Kafka version: %w", cfg.ProtocolVersion, err)
	}
	if !saramacluster.VersionAtLeast(cfg.ProtocolVersion, minProtocolVersion) {
		return fmt.Errorf("protocol_version: must be %s or later, the oldest the receiver's requests work at, got %s", minProtocolVersion, cfg.ProtocolVersion)
	}
	if cfg.RackID != "" && !saramacluster.VersionAtLeast(cfg.ProtocolVersion, rackAwareVersion) {
		return fmt.Errorf("rack_id: needs protocol_version %s or later (Fetch v11, KIP-392), got %s", rackAwareVersion, cfg.ProtocolVersion)
	}
	if cfg.Coordination.enabled() {
		if err := membership.CheckVersion(cfg.ProtocolVersion); err != nil {
			return fmt.Errorf("coordination::group_id: %w", err)
		}
	}
	return nil
}

// clusterSettings translates the configuration into the Kafka client's,
// key by key. host supplies the extension that oauthbearer_token_source
// names; it may be nil otherwise.
func (cfg *Config) clusterSettings(ctx context.Context, host component.Host, logger *zap.Logger, observer kafka.RequestObserver) (clientsettings.Settings, error) {
	return cfg.settings(ctx, host, logger, observer, nil)
}

// settings are clusterSettings with the OAUTHBEARER tokens of shared when
// not nil, rather than a token source of their own.
func (cfg *Config) settings(ctx context.Context, host component.Host, logger *zap.Logger, observer kafka.RequestObserver, shared clientsettings.TokenSource) (clientsettings.Settings, error) {
	s := clientsettings.Settings{
		Brokers:         cfg.Brokers,
		ClientID:        cfg.ClientID,
		ProtocolVersion: cfg.ProtocolVersion,
		RequestTimeout:  cfg.requestTimeout(),
		DialTimeout:     cfg.DialTimeout,
		ConnIdleTimeout: cfg.ConnIdleTimeout,
		RackID:          cfg.RackID,
		Metadata: clientsettings.Metadata{
			RefreshInterval: cfg.Metadata.RefreshInterval,
			RetryMax:        cfg.Metadata.Retry.Max,
			RetryBackoff:    cfg.Metadata.Retry.Backoff,
		},
		TLS:      cfg.TLS,
		Logger:   logger,
		Observer: observer,
	}
	if !cfg.Metadata.Full {
		logger.Info("metadata::full: false has no effect, as in contrib since v0.159.0: the receiver reads the whole cluster's metadata, which is what tells it every broker")
	}
	if k := cfg.Auth.Kerberos; k != nil {
		s.Kerberos = &clientsettings.Kerberos{
			ServiceName: k.ServiceName,
			Realm:       k.Realm,
			Username:    k.Username,
			Password:    string(k.Password),
			KeytabFile:  k.KeyTabPath,
			ConfigFile:  k.ConfigPath,
			DisableFAST: k.DisablePAFXFAST,
		}
	}
	sasl := cfg.Auth.SASL
	if sasl == nil {
		return s, nil
	}
	s.SASL = &clientsettings.SASL{
		Mechanism:        kafka.SASLMechanism(sasl.Mechanism),
		Username:         sasl.Username,
		Password:         string(sasl.Password),
		HandshakeVersion: sasl.Version,
	}
	if !kafka.SASLUsesToken(sasl.Mechanism) {
		return s, nil
	}
	if sasl.OAuthBearer != nil {
		s.SASL.Extensions = sasl.OAuthBearer.Extensions
	}
	if shared != nil {
		s.SASL.Tokens = shared
		return s, nil
	}
	source, err := cfg.tokenSource(ctx, host, logger)
	if err != nil {
		return s, err
	}
	s.SASL.Tokens = oauthbearer.NewCache(source, cfg.requestTimeout())
	return s, nil
}

// tokenSource is where the OAUTHBEARER tokens come from.
func (cfg *Config) tokenSource(ctx context.Context, host component.Host, logger *zap.Logger) (oauthbearer.Source, error) {
	sasl := cfg.Auth.SASL
	origin := oauthbearer.Origin{
		AWSMSKIAM: kafka.SASLMechanism(sasl.Mechanism) == kafka.SASLAWSMSKIAM,
		AWSRegion: sasl.AWSMSK.Region,
		Extension: sasl.OAuthBearerTokenSource,
	}
	if host != nil {
		origin.Extensions = host.GetExtensions()
	}
	if g := sasl.OAuthBearer; g != nil {
		origin.Grant = &clientcredentials.Config{ClientID: g.ClientID, ClientSecret: string(g.ClientSecret), TokenURL: g.TokenURL, Scopes: g.Scopes, EndpointParams: g.EndpointParams}
	}
	source, err := oauthbearer.SourceOf(ctx, origin, logger)
	if err != nil {
		return nil, fmt.Errorf("auth::sasl::%w", err)
	}
	return source, nil
}

// newCluster builds the Kafka access layer, which connects lazily: a
// cluster that is down does not stop the collector.
func newCluster(ctx context.Context, cfg *Config, host component.Host, logger *zap.Logger, observer kafka.RequestObserver) (*saramacluster.Cluster, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	s, err := cfg.clusterSettings(ctx, host, logger, observer)
	if err != nil {
		return nil, err
	}
	return saramacluster.New(s)
}

// newMembership joins the replicas sharing the monitored groups, in the
// background: a cluster that is down does not stop the collector. It
// connects with the same client settings as the cluster, sharing its
// tokens, without a request observer: coordination traffic is not the
// scrape's.
func newMembership(ctx context.Context, cfg *Config, host component.Host, logger *zap.Logger, tokens clientsettings.TokenSource) (kafka.Membership, error) {
	s, err := cfg.sharingSettings(ctx, host, logger, nil, tokens)
	if err != nil {
		return nil, err
	}
	c := cfg.Coordination
	return membership.New(s, membership.Settings{
		GroupID:           c.GroupID,
		Topic:             c.Topic,
		Partitions:        int32(c.TopicPartitions),        // validated: 1 to 10000
		ReplicationFactor: int16(c.TopicReplicationFactor), // validated: -1 or 1 to 32767
		CreateTopic:       c.CreateTopic,
		SessionTimeout:    c.SessionTimeout,
		HeartbeatInterval: c.HeartbeatInterval,
		PartitionOf:       ownership.PartitionOf,
		// The first scrape, not yet a member, reads the loads
		// (weighBeforeJoining): it starts after the initial delay and
		// ends within its timeout, bounded by the collection interval.
		LoadsWait: cfg.InitialDelay + cfg.CollectionInterval,
	})
}

// sharingSettings are the cluster's client settings for another client of
// the same cluster, sharing tokens, the cluster's OAUTHBEARER tokens when
// not nil: one grant serves every client, and a token the brokers refused
// to one is dropped for all.
func (cfg *Config) sharingSettings(ctx context.Context, host component.Host, logger *zap.Logger, observer kafka.RequestObserver, tokens clientsettings.TokenSource) (clientsettings.Settings, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	return cfg.settings(ctx, host, logger, observer, tokens)
}
