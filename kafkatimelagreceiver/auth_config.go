package kafkatimelagreceiver

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/oauthbearer"
)

// AuthConfig authenticates the receiver to the brokers: the `auth` block of
// contrib's configkafka client configuration (v0.165.1), so that a block
// written for the kafka receiver or exporter can be copied here. Secrets
// are opaque strings here (plain strings in configkafka), so they are never
// printed.
type AuthConfig struct {
	// SASL, when set, authenticates every connection with SASL.
	SASL *SASLConfig `mapstructure:"sasl"`
	// Kerberos, when set, authenticates every connection with SASL/GSSAPI.
	Kerberos *KerberosConfig `mapstructure:"kerberos"`
}

// Validate: confmap prefixes the error with `auth`.
func (a AuthConfig) Validate() error {
	if a.SASL != nil && a.Kerberos != nil {
		return errors.New("only one of sasl or kerberos authentication can be configured")
	}
	return nil
}

// SASLConfig is SASL authentication with a username and password
// (PLAIN, SCRAM) or a bearer token (OAUTHBEARER, AWS_MSK_IAM_OAUTHBEARER).
type SASLConfig struct {
	// Mechanism is PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or
	// AWS_MSK_IAM_OAUTHBEARER, in any case.
	Mechanism string `mapstructure:"mechanism"`
	Username  string `mapstructure:"username"`
	// Password is opaque so that it is never printed, logged or marshaled.
	Password configopaque.String `mapstructure:"password"`
	// Version is the SASL handshake version: 1 (the default, Kafka 1.0+) or
	// 0 (for brokers that only speak the pre-KIP-152 handshake). Not a
	// configkafka key since v0.159.0 (franz-go negotiates it); kept for
	// configurations written for this receiver.
	Version int `mapstructure:"version"`
	// AWSMSK configures AWS_MSK_IAM_OAUTHBEARER.
	AWSMSK AWSMSKConfig `mapstructure:"aws_msk"`
	// OAuthBearerTokenSource names the collector extension that supplies
	// the OAUTHBEARER tokens (an oauth2client, azure_auth or bearertokenauth
	// extension), as in configkafka.
	OAuthBearerTokenSource component.ID `mapstructure:"oauthbearer_token_source,omitempty"`
	// OAuthBearer is this receiver's own: an OAuth2 client-credentials grant
	// that supplies OAUTHBEARER tokens without an extension, and the SASL
	// extensions to send with the tokens.
	OAuthBearer *OAuthBearerConfig `mapstructure:"oauthbearer"`
}

// AWSMSKConfig is configkafka's `aws_msk` block.
type AWSMSKConfig struct {
	// Region is the AWS region of the MSK cluster; tokens are signed for it.
	Region string `mapstructure:"region"`
}

// OAuthBearerConfig supplies OAUTHBEARER tokens from the identity
// provider's token endpoint (client-credentials grant, RFC 6749 4.4), with
// the keys of contrib's oauth2client extension.
type OAuthBearerConfig struct {
	TokenURL string `mapstructure:"token_url"`
	ClientID string `mapstructure:"client_id"`
	// ClientSecret is opaque so that it is never printed, logged or marshaled.
	ClientSecret   configopaque.String `mapstructure:"client_secret"`
	Scopes         []string            `mapstructure:"scopes"`
	EndpointParams url.Values          `mapstructure:"endpoint_params"`
	// Extensions are SASL extensions (KIP-342) sent with every token, such
	// as Confluent Cloud's logicalCluster and identityPoolId. They work
	// with oauthbearer_token_source too.
	Extensions map[string]string `mapstructure:"extensions"`
}

// Unmarshal defaults the handshake version to 1 before the user's keys are
// applied: Kafka 4.0 dropped the v0 handshake and every broker since 1.0
// speaks v1. An explicit `version: 0` still wins.
func (c *SASLConfig) Unmarshal(conf *confmap.Conf) error {
	c.Version = 1
	return conf.Unmarshal(c)
}

// Validate names the offending key; confmap prefixes it with auth::sasl.
// Keys the mechanism does not use are refused, so that no credential is
// silently left unused.
func (c *SASLConfig) Validate() error {
	errs := []error{kafka.ValidateSASL(c.Mechanism, c.Username, string(c.Password), c.Version)}
	mechanism := kafka.SASLMechanism(c.Mechanism)
	hasSource := c.OAuthBearerTokenSource != component.ID{}
	hasGrant := c.OAuthBearer != nil && c.OAuthBearer.TokenURL != ""
	switch mechanism {
	case kafka.SASLAWSMSKIAM:
		if c.AWSMSK.Region == "" {
			errs = append(errs, fmt.Errorf("aws_msk::region: must be set for %s", mechanism))
		}
	case kafka.SASLOAuthBearer:
		switch {
		case !hasSource && !hasGrant:
			errs = append(errs, fmt.Errorf("oauthbearer_token_source: must name the extension that supplies the tokens (or set oauthbearer::token_url) for %s", mechanism))
		case hasSource && hasGrant:
			errs = append(errs, errors.New("oauthbearer_token_source: set it or oauthbearer::token_url, not both"))
		}
	}
	if mechanism != kafka.SASLAWSMSKIAM && c.AWSMSK.Region != "" {
		errs = append(errs, fmt.Errorf("aws_msk::region: used only by %s; remove it", kafka.SASLAWSMSKIAM))
	}
	if mechanism != kafka.SASLOAuthBearer && hasSource {
		errs = append(errs, fmt.Errorf("oauthbearer_token_source: used only by %s; remove it", kafka.SASLOAuthBearer))
	}
	if c.OAuthBearer != nil {
		errs = append(errs, c.OAuthBearer.validate(mechanism))
	}
	return errors.Join(errs...)
}

// validate names the offending key under oauthbearer.
func (o *OAuthBearerConfig) validate(mechanism string) error {
	if mechanism != kafka.SASLOAuthBearer {
		return fmt.Errorf("oauthbearer: used only by %s; remove it", kafka.SASLOAuthBearer)
	}
	return oauthbearer.ValidateGrant(oauthbearer.Grant{TokenURL: o.TokenURL, ClientID: o.ClientID, HasClientSecret: o.ClientSecret != "",
		Scopes: o.Scopes, EndpointParams: o.EndpointParams, Extensions: o.Extensions})
}

// KerberosConfig is configkafka's `auth::kerberos` block: SASL/GSSAPI.
type KerberosConfig struct {
	ServiceName string `mapstructure:"service_name"`
	Realm       string `mapstructure:"realm"`
	// UseKeyTab asks for keytab_file to be set. As in configkafka, the
	// keytab is used whenever keytab_file is set.
	UseKeyTab bool   `mapstructure:"use_keytab"`
	Username  string `mapstructure:"username"`
	// Password is opaque so that it is never printed, logged or marshaled.
	Password   configopaque.String `mapstructure:"password"`
	ConfigPath string              `mapstructure:"config_file"`
	KeyTabPath string              `mapstructure:"keytab_file"`
	// DisablePAFXFAST turns off PA-FX-FAST negotiation, which some KDCs
	// (Active Directory) do not speak.
	DisablePAFXFAST bool `mapstructure:"disable_fast_negotiation"`
}

// Validate names the offending key; confmap prefixes it with auth::kerberos.
func (k *KerberosConfig) Validate() error {
	var errs []error
	if k.UseKeyTab && k.KeyTabPath == "" {
		errs = append(errs, errors.New("keytab_file: must be set when use_keytab is true"))
	}
	errs = append(errs, kafka.ValidateKerberos(k.ServiceName, k.Realm, k.Username, string(k.Password), k.ConfigPath, k.KeyTabPath))
	errs = append(errs, k.checkFiles())
	return errors.Join(errs...)
}

// checkFiles reports a krb5.conf or keytab that cannot be read, so that it
// shows when the configuration is validated rather than at the first
// connection.
func (k *KerberosConfig) checkFiles() error {
	var errs []error
	for _, file := range []struct{ key, path string }{
		{"config_file", k.ConfigPath},
		{"keytab_file", k.KeyTabPath},
	} {
		if file.path == "" {
			continue
		}
		if f, err := os.Open(file.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file.key, err))
		} else {
			_ = f.Close()
		}
	}
	return errors.Join(errs...)
}
