package sharegroups

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// franz-go's bounds on the settings below, which its client refuses to be
// built outside of.
const (
	maxConnIdle       = 15 * time.Minute
	maxMetadataAge    = time.Hour
	minMetadataAge    = 10 * time.Millisecond
	defaultMinMetaAge = 5 * time.Second
	minRequestTimeout = 100 * time.Millisecond
	maxRequestTimeout = 15 * time.Minute
)

// clientConfig is the franz-go client the settings describe.
type clientConfig struct {
	opts []kgo.Opt
	// tokens is the OAUTHBEARER mechanism, told when a broker refuses its
	// token; nil for other mechanisms.
	tokens *tokenMechanism
	// unsupported, when not nil, is why share groups cannot be read with
	// these settings (it wraps kafka.ErrShareGroupsUnsupported): no client
	// is built.
	unsupported error
	// security says how the client authenticates and encrypts, for
	// connection errors: a broker that drops a connection during SASL (as
	// some proxies and test brokers do on a wrong password) leaves only an
	// EOF, which means little without knowing that SASL was attempted.
	security string
	// callTimeout bounds each call: a coordinator lookup, a metadata
	// refresh and the request itself, each within the request timeout.
	callTimeout time.Duration
}

// translate turns the settings into franz-go options, key by key. Its
// errors name the receiver's configuration keys.
func translate(ctx context.Context, s clientsettings.Settings) (clientConfig, error) {
	if len(s.Brokers) == 0 {
		return clientConfig{}, fmt.Errorf("brokers: must be set")
	}
	if s.RequestTimeout <= 0 {
		return clientConfig{}, fmt.Errorf("timeout: must be positive, got %s", s.RequestTimeout)
	}
	requestTimeout := clamp(s.RequestTimeout, minRequestTimeout, maxRequestTimeout)
	cc := clientConfig{callTimeout: 3 * requestTimeout}
	if s.Kerberos != nil {
		// franz-go has no GSSAPI mechanism; the sarama client reads
		// everything else with Kerberos.
		cc.unsupported = fmt.Errorf("%w: auth::kerberos is configured, and the share-group client has no Kerberos (GSSAPI) mechanism", kafka.ErrShareGroupsUnsupported)
		return cc, nil
	}
	if s.ProtocolVersion != "" && !versionServesShareGroups(s.ProtocolVersion) {
		cc.unsupported = fmt.Errorf("%w: protocol_version %s is older than %s, the first whose brokers describe share groups", kafka.ErrShareGroupsUnsupported, s.ProtocolVersion, minVersion)
		return cc, nil
	}
	cc.opts = []kgo.Opt{
		kgo.SeedBrokers(s.Brokers...),
		kgo.RequestTimeoutOverhead(requestTimeout),
		kgo.RetryTimeout(cc.callTimeout),
		kgo.RequestRetries(max(s.Metadata.RetryMax, 0) + 1),
		kgo.RetryBackoffFn(func(int) time.Duration { return s.Metadata.RetryBackoff }),
		kgo.ConnIdleTimeout(connIdle(s.ConnIdleTimeout)),
	}
	cc.security = "plaintext"
	cc.opts = append(cc.opts, metadataAges(s.Metadata.RefreshInterval)...)
	if s.ClientID != "" {
		cc.opts = append(cc.opts, kgo.ClientID(s.ClientID))
	}
	if s.DialTimeout > 0 {
		cc.opts = append(cc.opts, kgo.DialTimeout(s.DialTimeout))
	}
	if s.TLS != nil {
		tc, err := s.TLS.LoadTLSConfig(ctx)
		if err != nil {
			return clientConfig{}, fmt.Errorf("tls: %w", err)
		}
		// No configuration for `insecure: true` without a CA: plaintext,
		// as for the cluster's client.
		if tc != nil {
			cc.opts = append(cc.opts, kgo.DialTLSConfig(tc))
			cc.security = "TLS"
		}
	}
	versions := maxVersions(s.ProtocolVersion)
	if s.SASL != nil {
		mechanism, tokens, err := saslMechanism(s.SASL, requestTimeout)
		if err != nil {
			return clientConfig{}, fmt.Errorf("auth::sasl: %w", err)
		}
		cc.opts = append(cc.opts, kgo.SASL(mechanism))
		cc.tokens = tokens
		cc.security += ", SASL " + s.SASL.MechanismName()
		if tokens == nil {
			cc.security += fmt.Sprintf(" as %q", s.SASL.Username)
		}
		if s.SASL.HandshakeVersion == 0 {
			// Brokers that only speak the pre-KIP-152 handshake.
			if versions == nil {
				versions = kversion.Stable()
			}
			versions.SetMaxKeyVersion(kmsg.SASLHandshake.Int16(), 0)
		}
	}
	if s.SASL == nil {
		cc.security += ", no SASL"
	}
	if versions != nil {
		cc.opts = append(cc.opts, kgo.MaxVersions(versions))
	}
	return cc, nil
}

// maxVersions are the request versions of the configured protocol version;
// nil (every version franz-go speaks, negotiated down per broker) when it is
// not set or newer than franz-go knows.
func maxVersions(protocolVersion string) *kversion.Versions {
	if protocolVersion == "" {
		return nil
	}
	if v := kversion.FromString(protocolVersion); v != nil {
		return v
	}
	return nil
}

// connIdle is the idle timeout franz-go can keep: the receiver's zero
// (never close an idle connection) and anything longer become franz-go's
// longest.
func connIdle(d time.Duration) time.Duration {
	if d <= 0 {
		return maxConnIdle
	}
	return clamp(d, minRequestTimeout, maxConnIdle)
}

// metadataAges sets how often the client refreshes its metadata: franz-go
// always refreshes in the background, so the receiver's zero (no background
// refresh) becomes its rarest.
func metadataAges(refresh time.Duration) []kgo.Opt {
	if refresh <= 0 {
		refresh = maxMetadataAge
	}
	refresh = clamp(refresh, minMetadataAge, maxMetadataAge)
	return []kgo.Opt{kgo.MetadataMaxAge(refresh), kgo.MetadataMinAge(min(defaultMinMetaAge, refresh))}
}

func clamp(d, lo, hi time.Duration) time.Duration {
	return min(max(d, lo), hi)
}
