package kafkatimelagreceiver

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramacluster"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/sharegroups"
)

// newShareGroups builds the share-group reader from the same client
// settings as the cluster, with the same request observer. tokens, when not
// nil, are the cluster's OAUTHBEARER tokens: shared, so that one grant
// serves both clients and a token the brokers refused to either is dropped
// for both. It connects lazily.
func newShareGroups(ctx context.Context, cfg *Config, host component.Host, logger *zap.Logger, observer kafka.RequestObserver, tokens saramacluster.TokenSource) (*sharegroups.Client, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	s, err := cfg.clusterSettings(ctx, host, logger, observer)
	if err != nil {
		return nil, err
	}
	if s.SASL != nil && s.SASL.Tokens != nil && tokens != nil {
		s.SASL.Tokens = tokens
	}
	return sharegroups.New(s)
}

// shareGroupsNotice says once why share groups are not read (an older
// cluster or protocol_version, Kerberos), rather than failing every scrape
// for it; it says so again only when the reason changes. It is used by one
// goroutine at a time.
type shareGroupsNotice struct {
	logger *zap.Logger
	said   string
}

// filter returns err unless it only says that share groups cannot be read,
// which it logs once instead.
func (n *shareGroupsNotice) filter(err error) error {
	if !errors.Is(err, kafka.ErrShareGroupsUnsupported) {
		if err == nil {
			n.said = ""
		}
		return err
	}
	if reason := err.Error(); reason != n.said {
		n.said = reason
		n.logger.Info("share groups are not monitored; consumer groups are", zap.String("reason", reason))
	}
	return nil
}
