package sharegroups

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// minVersion is the first Kafka protocol version whose brokers serve share
// groups to admin clients: ShareGroupDescribe v1 and
// DescribeShareGroupOffsets (Kafka 4.1).
const minVersion = "4.1.0"

// versionServesShareGroups tells whether the configured protocol version
// (in any spelling the receiver accepts) is minVersion or later.
func versionServesShareGroups(protocolVersion string) bool {
	return clientsettings.VersionAtLeast(protocolVersion, minVersion)
}
