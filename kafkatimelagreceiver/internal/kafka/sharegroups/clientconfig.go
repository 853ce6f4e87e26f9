package sharegroups

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramacluster"
)

// The share-group client is built from the same settings as the cluster's
// Kafka client: one block of the receiver's configuration (brokers, TLS,
// SASL, Kerberos, timeouts, metadata) reaches both. This file is the only
// one that knows where those settings are defined.
type (
	// Settings are what New needs to reach a cluster.
	Settings = saramacluster.Settings
	// SASL is SASL authentication with a username and password, or with
	// bearer tokens.
	SASL = saramacluster.SASL
	// TokenSource supplies OAUTHBEARER tokens, shared with the cluster's
	// client so that one grant serves both.
	TokenSource = saramacluster.TokenSource
)

// minVersion is the first Kafka protocol version whose brokers serve share
// groups to admin clients: ShareGroupDescribe v1 and
// DescribeShareGroupOffsets (Kafka 4.1).
const minVersion = "4.1.0"

// versionServesShareGroups tells whether the configured protocol version
// (in any spelling the receiver accepts) is minVersion or later.
func versionServesShareGroups(protocolVersion string) bool {
	return saramacluster.VersionAtLeast(protocolVersion, minVersion)
}
