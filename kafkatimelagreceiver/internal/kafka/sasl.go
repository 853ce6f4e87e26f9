package kafka

import (
	"errors"
	"fmt"
	"strings"
)

// SASL mechanisms, in the spelling of contrib's configkafka (what the
// configuration says). All but AWS_MSK_IAM_OAUTHBEARER are also what the
// SASL handshake sends; that one is OAUTHBEARER on the wire, with a token
// signed by AWS.
const (
	SASLPlain       = "PLAIN"
	SASLSCRAMSHA256 = "SCRAM-SHA-256"
	SASLSCRAMSHA512 = "SCRAM-SHA-512"
	SASLOAuthBearer = "OAUTHBEARER"
	SASLAWSMSKIAM   = "AWS_MSK_IAM_OAUTHBEARER"
)

// SASLMechanisms are the mechanisms the configuration accepts, in any case
// and with surrounding spaces (SASLMechanism).
func SASLMechanisms() []string {
	return []string{SASLPlain, SASLSCRAMSHA256, SASLSCRAMSHA512, SASLOAuthBearer, SASLAWSMSKIAM}
}

// supportedSASL is the list an error about the mechanism offers.
const supportedSASL = SASLPlain + ", " + SASLSCRAMSHA256 + ", " + SASLSCRAMSHA512 + ", " + SASLOAuthBearer + " or " + SASLAWSMSKIAM

// SASLMechanism is a configured mechanism in Kafka's spelling: Kafka's names
// are upper case, and a lower-case `scram-sha-512` means the same thing.
func SASLMechanism(configured string) string {
	return strings.ToUpper(strings.TrimSpace(configured))
}

// SASLUsesToken tells whether the mechanism authenticates with a bearer
// token rather than a username and password.
func SASLUsesToken(mechanism string) bool {
	m := SASLMechanism(mechanism)
	return m == SASLOAuthBearer || m == SASLAWSMSKIAM
}

// ValidateSASL checks the mechanism, the credentials it needs and the
// handshake version, and names the offending key (mechanism, username,
// password, version) as the configuration spells them. Credentials the
// mechanism does not use are refused rather than ignored. The password is
// never part of a message.
func ValidateSASL(mechanism, username, password string, handshakeVersion int) error {
	var errs []error
	m := SASLMechanism(mechanism)
	switch m {
	case SASLPlain, SASLSCRAMSHA256, SASLSCRAMSHA512:
		if username == "" {
			errs = append(errs, errors.New("username: must be set"))
		}
		if password == "" {
			errs = append(errs, errors.New("password: must be set"))
		}
	case SASLOAuthBearer, SASLAWSMSKIAM:
		if username != "" {
			errs = append(errs, fmt.Errorf("username: not used by %s (the token names the principal); remove it", m))
		}
		if password != "" {
			errs = append(errs, fmt.Errorf("password: not used by %s; remove it", m))
		}
		if handshakeVersion == 0 {
			errs = append(errs, fmt.Errorf("version: %s needs the version 1 handshake (KIP-152); remove `version: 0`", m))
		}
	case "":
		errs = append(errs, fmt.Errorf("mechanism: must be set to %s", supportedSASL))
	case "GSSAPI":
		errs = append(errs, fmt.Errorf("mechanism: %q is not supported here; Kerberos is configured under auth::kerberos, as in contrib", mechanism))
	default:
		errs = append(errs, fmt.Errorf("mechanism: %q is not supported; use %s", mechanism, supportedSASL))
	}
	if handshakeVersion != 0 && handshakeVersion != 1 {
		errs = append(errs, fmt.Errorf("version: must be 0 or 1, got %d", handshakeVersion))
	}
	return errors.Join(errs...)
}

// ValidateKerberos checks SASL/GSSAPI settings and names the offending key
// as contrib's configkafka `auth::kerberos` block spells it. The keytab is
// used when keytabFile is set, the password otherwise; never both.
func ValidateKerberos(serviceName, realm, username, password, configFile, keytabFile string) error {
	var errs []error
	for _, required := range []struct{ key, value string }{
		{"service_name", serviceName},
		{"realm", realm},
		{"username", username},
		{"config_file", configFile},
	} {
		if required.value == "" {
			errs = append(errs, fmt.Errorf("%s: must be set", required.key))
		}
	}
	switch {
	case keytabFile == "" && password == "":
		errs = append(errs, errors.New("password: must be set, or keytab_file"))
	case keytabFile != "" && password != "":
		errs = append(errs, errors.New("password: not used with keytab_file (the keytab is); remove one of them"))
	}
	return errors.Join(errs...)
}
