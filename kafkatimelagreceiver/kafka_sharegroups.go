package kafkatimelagreceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/sharegroups"
)

// newShareGroups builds the share-group reader from the same client
// settings as the cluster, sharing its tokens, with the same request
// observer. It connects lazily.
func newShareGroups(ctx context.Context, cfg *Config, host component.Host, logger *zap.Logger, observer kafka.RequestObserver, tokens clientsettings.TokenSource) (*sharegroups.Client, error) {
	s, err := cfg.sharingSettings(ctx, host, logger, observer, tokens)
	if err != nil {
		return nil, err
	}
	return sharegroups.New(s)
}

// startShareGroups builds the share-group client when some share-group
// metric is on. It connects lazily, and sends nothing while the cluster's
// listing names no share group.
func (s *timeLagScraper) startShareGroups(ctx context.Context, host component.Host) error {
	if !s.wants.ShareGroups {
		return nil
	}
	c, err := newShareGroups(ctx, s.cfg, host, s.logger, s.telemetry, s.tokens)
	if err != nil {
		return err
	}
	s.shares = c
	s.reader.Shares.Client = c
	return nil
}
