package kafka

import (
	"errors"
	"fmt"
	"strings"
)

// SASL mechanisms, in Kafka's spelling (what the SASL handshake sends).
const (
	SASLPlain       = "PLAIN"
	SASLSCRAMSHA256 = "SCRAM-SHA-256"
	SASLSCRAMSHA512 = "SCRAM-SHA-512"
)

// SASLMechanism is a configured mechanism in Kafka's spelling: Kafka's names
// are upper case, and a lower-case `scram-sha-512` means the same thing.
func SASLMechanism(configured string) string {
	return strings.ToUpper(strings.TrimSpace(configured))
}

// ValidateSASL checks SASL credentials and names the offending key
// (mechanism, username, password, version), as the configuration spells
// them. The password is never part of a message.
func ValidateSASL(mechanism, username, password string, handshakeVersion int) error {
	var errs []error
	switch SASLMechanism(mechanism) {
	case SASLPlain, SASLSCRAMSHA256, SASLSCRAMSHA512:
	case "":
		errs = append(errs, fmt.Errorf("mechanism: must be set to %s, %s or %s", SASLPlain, SASLSCRAMSHA256, SASLSCRAMSHA512))
	default:
		errs = append(errs, fmt.Errorf("mechanism: %q is not supported; use %s, %s or %s", mechanism, SASLPlain, SASLSCRAMSHA256, SASLSCRAMSHA512))
	}
	if username == "" {
		errs = append(errs, errors.New("username: must be set"))
	}
	if password == "" {
		errs = append(errs, errors.New("password: must be set"))
	}
	if handshakeVersion != 0 && handshakeVersion != 1 {
		errs = append(errs, fmt.Errorf("version: must be 0 or 1, got %d", handshakeVersion))
	}
	return errors.Join(errs...)
}
