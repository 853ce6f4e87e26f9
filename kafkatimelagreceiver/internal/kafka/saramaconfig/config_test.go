package saramaconfig

import (
	"regexp"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
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

// TestVersionPatternIsParseVersion: the chart's pattern of protocol_version
// accepts exactly the spellings ParseVersion reads.
func TestVersionPatternIsParseVersion(t *testing.T) {
	pattern := regexp.MustCompile(VersionPattern)
	for _, spelling := range []string{
		"3.7.0", "3.7", "v3.7", " 3.7.0 ", "2.8.1", "4.1.0", "4.3.1", "10.0", "1.1.0", "2.3.0",
		"0.10.2", "0.10.2.1", "v0.11.0", "0.8.2.2", "0.11.0.0", "0.9.0", "00.10.2", "03.7.0",
		"", "v", "3", "three", "3.7.0.1.2", "3.7.0.1", "0.10", "0", "3.x.0", "-3.7.0", "+3.7.0", "3..0", "3.7.", "v 3.7", "vv3.7", "3.7.0\n",
	} {
		require.Equal(t, CheckVersion(spelling) == nil, pattern.MatchString(spelling), "%q: CheckVersion says %v", spelling, CheckVersion(spelling))
	}
}

func TestCheckVersion(t *testing.T) {
	require.NoError(t, CheckVersion("3.0.0"))
	require.NoError(t, CheckVersion("4.0.0"))
	require.Error(t, CheckVersion("three"))
	require.Error(t, CheckVersion(""))
}

// TestClientNeutralVersionsAgreeWithSarama: the share-group client reads
// protocol versions without sarama (clientsettings.ParseVersion); it
// accepts exactly the spellings sarama's client does, and orders them as
// sarama does.
func TestClientNeutralVersionsAgreeWithSarama(t *testing.T) {
	spellings := []string{
		"3.7.0", "3.7", "v3.7", " 3.7.0 ", "2.8.1", "4.1.0", "4.3.1", "10.0", "1.1.0", "2.3.0",
		"0.10.2", "0.10.2.1", "v0.11.0", "0.8.2.2", "0.11.0.0",
		"", "v", "3", "three", "3.7.0.1.2", "3.7.0.1", "03.7.0", "0.10", "0", "3.x.0", "-3.7.0", "+3.7.0", "3..0", "3.7.", "v 3.7",
	}
	for _, spelling := range spellings {
		saramaVersion, saramaErr := ParseVersion(spelling)
		neutral, err := clientsettings.ParseVersion(spelling)
		require.Equal(t, saramaErr == nil, err == nil, "%q: sarama says %v, clientsettings %v", spelling, saramaErr, err)
		if err != nil {
			continue
		}
		require.Equal(t, saramaVersion.String(), neutral.String(), spelling)
		for _, other := range spellings {
			otherSarama, saramaErr := ParseVersion(other)
			if saramaErr != nil {
				continue
			}
			require.Equal(t, saramaVersion.IsAtLeast(otherSarama), clientsettings.VersionAtLeast(spelling, other), "%q at least %q", spelling, other)
		}
	}
}
