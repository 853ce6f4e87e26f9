package saramacluster

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconfig"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saslauth"
)

// The client's settings (saramaconfig) and authentication (saslauth), named
// here too for the callers that build Settings for New.
type (
	Settings    = saramaconfig.Settings
	Metadata    = saramaconfig.Metadata
	SASL        = saslauth.SASL
	Kerberos    = saslauth.Kerberos
	TokenSource = saslauth.TokenSource
)

// NewestVersion is the newest Kafka protocol version the client speaks
// (saramaconfig.NewestVersion).
func NewestVersion() string { return saramaconfig.NewestVersion() }

// CheckVersion tells whether the protocol version can be parsed.
func CheckVersion(v string) error { return saramaconfig.CheckVersion(v) }

// VersionAtLeast tells whether the protocol version v is min or later; a
// version that cannot be parsed is not.
func VersionAtLeast(v, min string) bool { return saramaconfig.VersionAtLeast(v, min) }
