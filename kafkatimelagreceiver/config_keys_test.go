package kafkatimelagreceiver

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// TestConfigErrorsNameWhatWasWritten: a misspelt key is refused with its
// path and the key meant, not the decoder's Go type; a duration without a
// unit is reported for the key written only, not for the keys that follow
// it.
func TestConfigErrorsNameWhatWasWritten(t *testing.T) {
	for _, c := range []struct {
		name string
		conf map[string]any
		want string
	}{
		{"misspelt key", map[string]any{"colection_interval": "30s"},
			"colection_interval: not a key of the receiver; did you mean collection_interval?"},
		{"misspelt nested key", map[string]any{"groups": map[string]any{"inclde": []any{"payments"}}},
			"groups::inclde: not a key of the receiver; did you mean groups::include?"},
		{"misspelt key in a block with its own decoding", map[string]any{"auth": map[string]any{"sasl": map[string]any{"mechanism": "PLAIN", "usrname": "u"}}},
			"auth::sasl::usrname: not a key of the receiver; did you mean auth::sasl::username?"},
		{"misspelt squashed key", map[string]any{"tls": map[string]any{"ca_fil": "/ca.pem"}},
			"tls::ca_fil: not a key of the receiver; did you mean tls::ca_file?"},
		{"misspelt metric", map[string]any{"metrics": map[string]any{"kafka.consumer_group.lagg": map[string]any{"enabled": false}}},
			"metrics::kafka.consumer_group.lagg: not a key of the receiver; did you mean metrics::kafka.consumer_group.lag?"},
		{"nothing near", map[string]any{"zookeeper": "zk:2181"},
			"zookeeper: not a key of the receiver (docs/configuration.md lists them)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.conf["brokers"] = []any{"kafka-1:9092"}
			cfg := createDefaultConfig().(*Config)
			require.NoError(t, cfg.Unmarshal(confmap.NewFromStringMap(c.conf)))
			require.EqualError(t, cfg.Validate(), c.want)
		})
	}

	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cfg.Unmarshal(confmap.NewFromStringMap(map[string]any{"brokers": []any{"kafka-1:9092"}, "collection_interval": 30})))
	require.EqualError(t, cfg.Validate(), "collection_interval: 30 was read as 30ns; write 30s (a duration without a unit is in nanoseconds; between 1s and 1h)",
		"sampling_interval, not written, keeps its default rather than following a collection_interval out of range")

	cfg = createDefaultConfig().(*Config)
	require.NoError(t, cfg.Unmarshal(confmap.NewFromStringMap(map[string]any{"brokers": []any{"kafka-1:9092"}, "collection_interval": "5s"})))
	require.Equal(t, cfg.CollectionInterval, cfg.SamplingInterval, "a sampling_interval not written follows a shorter collection_interval")
}
