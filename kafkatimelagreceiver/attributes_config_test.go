package kafkatimelagreceiver

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// An attribute listed twice under a metric's `attributes` made the list as
// long as the metric's full set while it lacked one: `[group, group,
// topic]` for kafka.consumer_group.lag kept `partition`, contrary to the
// configuration. Such a list is refused, naming the metric and attribute.
func TestMetricAttributeListedTwiceIsRefused(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes = []metadata.KafkaConsumerGroupLagMetricAttributeKey{
		metadata.KafkaConsumerGroupLagMetricAttributeKeyGroup,
		metadata.KafkaConsumerGroupLagMetricAttributeKeyGroup,
		metadata.KafkaConsumerGroupLagMetricAttributeKeyTopic,
	}
	err := cfg.Validate()
	require.ErrorContains(t, err, `metrics::kafka.consumer_group.lag::attributes: "group" is listed twice`)

	cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes = cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes[1:]
	require.NoError(t, cfg.Validate(), "each once: fine")
}
