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
