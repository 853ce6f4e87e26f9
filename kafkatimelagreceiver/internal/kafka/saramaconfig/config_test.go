package saramaconfig

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

func TestProtocolVersionSpellings(t *testing.T) {
	for spelling, want := range map[string]sarama.KafkaVersion{
		"3.7.0":    sarama.V3_7_0_0,
		"3.7":      sarama.V3_7_0_0,
		"v3.7":     sarama.V3_7_0_0,
		"2.8.1":    sarama.V2_8_1_0,
		"0.10.2":   sarama.V0_10_2_0,
		"0.10.2.1": sarama.V0_10_2_1,
		"v0.11.0":  sarama.V0_11_0_0,
	} {
		got, err := ParseVersion(spelling)
		require.NoError(t, err, spelling)
		require.Equal(t, want, got, spelling)
	}
	for _, bad := range []string{"", "3", "three", "3.7.0.1.2", "v"} {
		require.Error(t, CheckVersion(bad), bad)
	}
	require.True(t, VersionAtLeast("3.0", "2.3.0"))
	require.True(t, VersionAtLeast("2.3.0", "2.3.0"))
	require.False(t, VersionAtLeast("2.2.1", "2.3.0"))
	require.False(t, VersionAtLeast("bad", "2.3.0"))
}

func TestCheckVersion(t *testing.T) {
	require.NoError(t, CheckVersion("3.0.0"))
	require.NoError(t, CheckVersion("4.0.0"))
	require.Error(t, CheckVersion("three"))
	require.Error(t, CheckVersion(""))
}
