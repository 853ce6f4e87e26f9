package kafkatimelagreceiver

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// NewFactory returns the factory of the kafka_time_lag receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		receiver.WithMetrics(createMetricsReceiver, metadata.MetricsStability),
	)
}

func createDefaultConfig() component.Config {
	controller := scraperhelper.NewDefaultControllerConfig()
	controller.CollectionInterval = defaultCollectionInterval
	return &Config{
		ControllerConfig:            controller,
		MetricsBuilderConfig:        emit.DefaultMetricsBuilderConfig(),
		ClientID:                    defaultClientID,
		ProtocolVersion:             defaultProtocolVersion(),
		Metadata:                    newDefaultMetadataConfig(),
		UseLeaderEpoch:              true,
		ConnIdleTimeout:             defaultConnIdleTimeout,
		DialTimeout:                 defaultDialTimeout,
		SamplingInterval:            defaultSamplingInterval,
		MaxSamples:                  defaultMaxSamples,
		MaxRecordReadsPerScrape:     defaultRecordReads,
		TimestampSource:             defaultTimestampSource,
		MaxRecordReadBytesPerScrape: defaultRecordReadBytes,
		StorageInterval:             defaultStorageInterval,
		RateWindow:                  defaultRateWindow,
		Groups:                      FilterConfig{Include: []string{".*"}},
		Topics:                      FilterConfig{Include: []string{".*"}, Exclude: []string{"^__.*"}},
		Status:                      StatusConfig{Window: defaultStatusWindow},
		Coordination:                defaultCoordinationConfig(),
	}
}

func createMetricsReceiver(
	_ context.Context,
	settings receiver.Settings,
	cfg component.Config,
	next consumer.Metrics,
) (receiver.Metrics, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, errors.New("kafka_time_lag: configuration is not a *Config")
	}
	push, err := emit.NewPush(settings, next)
	if err != nil {
		return nil, err
	}
	s, err := newTimeLagScraper(c, settings, push)
	if err != nil {
		return nil, err
	}
	sc, err := scraper.NewMetrics(s.scrape, scraper.WithStart(s.start), scraper.WithShutdown(s.shutdown))
	if err != nil {
		return nil, err
	}
	watched, err := s.watchExports(next)
	if err != nil {
		return nil, err
	}
	controller, err := scraperhelper.NewMetricsController(&c.ControllerConfig, settings, watched, scraperhelper.AddMetricsScraper(metadata.Type, sc))
	if err != nil {
		return nil, err
	}
	return &timeLagReceiver{Metrics: controller, scraper: s}, nil
}
