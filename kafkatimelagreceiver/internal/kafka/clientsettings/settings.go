// Package clientsettings is what every Kafka client of the receiver is
// built from, whatever its library: the settings that reach a cluster, the
// authentication they carry and its validation, the OAUTHBEARER tokens the
// clients share, and the protocol versions as the configuration spells
// them. It imports no Kafka client: saramaconfig and saslauth turn the
// settings into sarama's configuration, sharegroups into franz-go's.
package clientsettings

import (
	"time"

	"go.opentelemetry.io/collector/config/configtls"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Settings are what a client needs to reach a cluster.
type Settings struct {
	Brokers  []string
	ClientID string
	// ProtocolVersion is the highest Kafka protocol version to speak, in
	// any spelling configkafka accepts ("3.0.0", "3.0", "v3.0").
	ProtocolVersion string
	// RequestTimeout is the read and write deadline of each request, and
	// bounds fetching a token. The receiver's configuration sets it, as
	// every duration here, and checks it is positive.
	RequestTimeout time.Duration
	// DialTimeout bounds opening a connection, TLS handshake included.
	DialTimeout time.Duration
	// ConnIdleTimeout closes a broker's connection that has carried no
	// request for longer, before it carries the next one: brokers
	// (connections.max.idle.ms), load balancers and NAT drop idle
	// connections without telling the client. Zero means never.
	ConnIdleTimeout time.Duration
	// RackID, when set, is sent with record reads so that the leader can
	// point them at a replica in the same rack (KIP-392).
	RackID string
	// Metadata tunes the client's metadata requests.
	Metadata Metadata
	// TLS encrypts connections; nil means plaintext, and so does
	// `insecure: true` without a CA, as in contrib's configkafka.
	TLS *configtls.ClientConfig
	// SASL authenticates connections; nil means no SASL.
	SASL *SASL
	// Kerberos authenticates connections with SASL/GSSAPI; nil means none.
	// At most one of SASL and Kerberos is set.
	Kerberos *Kerberos
	// Logger is told of insecure settings and of recoveries; nil means none.
	Logger *zap.Logger
	// Observer is told of every request sent, from several goroutines at
	// once; nil means none.
	Observer kafka.RequestObserver
}

// Metadata tunes the client's metadata requests.
type Metadata struct {
	// RefreshInterval is how often the client refreshes the metadata of the
	// whole cluster; zero turns the background refresh off.
	RefreshInterval time.Duration
	// RetryMax and RetryBackoff are how many times, and after how long, a
	// metadata or coordinator lookup is retried when the cluster has no
	// answer yet (a leader election, brokers starting).
	RetryMax     int
	RetryBackoff time.Duration
}

// Plaintext tells whether the settings leave connections unencrypted: no
// TLS, or `insecure: true` without a CA.
func (s Settings) Plaintext() bool {
	return s.TLS == nil || (s.TLS.Insecure && s.TLS.CAFile == "" && s.TLS.CAPem == "")
}

// WarnInsecure logs, once at start, settings that expose the credentials or
// the connection.
func WarnInsecure(s Settings, logger *zap.Logger) {
	if mechanism := Mechanism(s.SASL, s.Kerberos); mechanism != "" && s.Plaintext() {
		logger.Warn("SASL is configured without TLS: the credentials (in the clear with PLAIN; bearer tokens can be replayed until they expire) and all metadata cross the network unencrypted",
			zap.String("mechanism", mechanism))
	}
	if s.TLS != nil && s.TLS.InsecureSkipVerify {
		logger.Warn("tls::insecure_skip_verify is set: the brokers' certificates are not verified, so a man in the middle can read the credentials and the data")
	}
}
