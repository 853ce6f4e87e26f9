package saramacluster

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconfig"
)

// NewestVersion is the newest Kafka protocol version the client speaks
// (saramaconfig.NewestVersion).
func NewestVersion() string { return saramaconfig.NewestVersion() }

// CheckVersion tells whether the protocol version can be parsed.
func CheckVersion(v string) error { return saramaconfig.CheckVersion(v) }

// VersionAtLeast tells whether the protocol version v is min or later; a
// version that cannot be parsed is not.
func VersionAtLeast(v, min string) bool { return saramaconfig.VersionAtLeast(v, min) }
