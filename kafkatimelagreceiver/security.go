package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"
)

// SASL mechanisms the receiver speaks. The names are Kafka's, which is what
// sarama sends in the SASL handshake.
const (
	saslPlain       = "PLAIN"
	saslSCRAMSHA256 = "SCRAM-SHA-256"
	saslSCRAMSHA512 = "SCRAM-SHA-512"
)

// AuthConfig authenticates the receiver to the brokers. It has the shape of
// the `auth` block of contrib's configkafka client configuration, so that a
// block written for the kafka receiver or exporter can be copied here.
type AuthConfig struct {
	// SASL, when set, authenticates every connection with SASL.
	SASL *SASLConfig `mapstructure:"sasl"`
}

// SASLConfig is SASL authentication with a username and password.
type SASLConfig struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `mapstructure:"mechanism"`
	Username  string `mapstructure:"username"`
	// Password is opaque so that it is never printed, logged or marshaled.
	Password configopaque.String `mapstructure:"password"`
	// Version is the SASL handshake version: 1 (the default, Kafka 1.0+) or
	// 0 (for brokers that only speak the pre-KIP-152 handshake, such as
	// Azure Event Hubs). Named as in configkafka.
	Version int `mapstructure:"version"`
}

// Unmarshal defaults the handshake version to 1 before the user's keys are
// applied: configkafka leaves it at 0, but Kafka 4.0 dropped the v0
// handshake and every broker since 1.0 speaks v1. An explicit `version: 0`
// still wins.
func (c *SASLConfig) Unmarshal(conf *confmap.Conf) error {
	c.Version = 1
	return conf.Unmarshal(c)
}

// Validate names the offending key; confmap prefixes it with auth::sasl.
func (c *SASLConfig) Validate() error {
	var errs []error
	switch c.mechanism() {
	case saslPlain, saslSCRAMSHA256, saslSCRAMSHA512:
	case "":
		errs = append(errs, fmt.Errorf("mechanism: must be set to %s, %s or %s", saslPlain, saslSCRAMSHA256, saslSCRAMSHA512))
	default:
		errs = append(errs, fmt.Errorf("mechanism: %q is not supported; use %s, %s or %s", c.Mechanism, saslPlain, saslSCRAMSHA256, saslSCRAMSHA512))
	}
	if c.Username == "" {
		errs = append(errs, errors.New("username: must be set"))
	}
	if c.Password == "" {
		errs = append(errs, errors.New("password: must be set"))
	}
	if c.Version != 0 && c.Version != 1 {
		errs = append(errs, fmt.Errorf("version: must be 0 or 1, got %d", c.Version))
	}
	return errors.Join(errs...)
}

// mechanism is the configured mechanism in Kafka's spelling: Kafka's names
// are upper case, and a lower-case `scram-sha-512` means the same thing.
func (c *SASLConfig) mechanism() string {
	return strings.ToUpper(strings.TrimSpace(c.Mechanism))
}

// validateSecurity loads the TLS material now, so that a missing or
// unreadable CA, certificate or key is reported when the configuration is
// validated rather than at the first connection.
func (cfg *Config) validateSecurity() error {
	if cfg.TLS == nil {
		return nil
	}
	if _, err := cfg.TLS.LoadTLSConfig(context.Background()); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}

// configureSecurity applies the auth and tls settings to the sarama
// configuration.
func configureSecurity(sc *sarama.Config, auth AuthConfig, tlsCfg *configtls.ClientConfig) error {
	if tlsCfg != nil {
		tc, err := tlsCfg.LoadTLSConfig(context.Background())
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		// As in configkafka: `insecure: true` without a CA means plaintext,
		// and LoadTLSConfig says so by returning no configuration.
		if tc != nil {
			sc.Net.TLS.Enable = true
			sc.Net.TLS.Config = tc
		}
	}
	if auth.SASL == nil {
		return nil
	}
	s := auth.SASL
	if err := s.Validate(); err != nil {
		return fmt.Errorf("auth::sasl: %w", err)
	}
	sc.Net.SASL.Enable = true
	sc.Net.SASL.Handshake = true
	sc.Net.SASL.User = s.Username
	sc.Net.SASL.Password = string(s.Password)
	sc.Net.SASL.Version = sarama.SASLHandshakeV1
	if s.Version == 0 {
		sc.Net.SASL.Version = sarama.SASLHandshakeV0
		// A v0 broker reads the first bytes after the handshake as SASL
		// tokens: sarama refuses to send ApiVersions first.
		sc.ApiVersionsRequest = false
	}
	switch s.mechanism() {
	case saslPlain:
		sc.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case saslSCRAMSHA256:
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA256} }
	case saslSCRAMSHA512:
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA512} }
	}
	return nil
}

// warnInsecureSecurity logs, once at start, settings that expose the
// credentials or the connection.
func warnInsecureSecurity(cfg *Config, logger *zap.Logger) {
	plaintext := cfg.TLS == nil || (cfg.TLS.Insecure && cfg.TLS.CAFile == "" && cfg.TLS.CAPem == "")
	if cfg.Auth.SASL != nil && plaintext {
		logger.Warn("SASL is configured without TLS: the credentials (in the clear with PLAIN) and all metadata cross the network unencrypted",
			zap.String("mechanism", cfg.Auth.SASL.mechanism()))
	}
	if cfg.TLS != nil && cfg.TLS.InsecureSkipVerify {
		logger.Warn("tls.insecure_skip_verify is set: the brokers' certificates are not verified, so a man in the middle can read the credentials and the data")
	}
}

// scramClient adapts xdg-go/scram to sarama's SCRAMClient. sarama makes a
// new one per connection.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (c *scramClient) Begin(user, password, authzID string) error {
	client, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		// xdg-go/scram never echoes the password in this error.
		return fmt.Errorf("SCRAM: %w", err)
	}
	c.conv = client.NewConversation()
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) {
	return c.conv.Step(challenge)
}

func (c *scramClient) Done() bool {
	return c.conv.Done()
}

// resourceError is an error about one consumer group or topic. The Kafka
// access layer tags the errors it cannot attribute otherwise, so that the
// scraper can tell which groups and topics an authorization failure skipped
// without parsing messages.
type resourceError struct {
	group string // set for a consumer group
	topic string // set for a topic or one of its partitions
	op    string // the ACL operation the request needs: Describe or Read
	err   error
}

func (e *resourceError) Error() string { return e.err.Error() }
func (e *resourceError) Unwrap() error { return e.err }

// groupError tags err as being about a consumer group.
func groupError(group string, err error) error {
	return &resourceError{group: group, op: "Describe", err: err}
}

// topicError tags err as being about a topic, read with the ACL operation op.
func topicError(topic, op string, err error) error {
	return &resourceError{topic: topic, op: op, err: err}
}

// isAuthorizationError tells whether err is Kafka refusing access to a group
// or topic: a standing ACL decision, not a fault that retrying fixes.
func isAuthorizationError(err error) bool {
	return errors.Is(err, sarama.ErrGroupAuthorizationFailed) || errors.Is(err, sarama.ErrTopicAuthorizationFailed)
}

// deniedSet gathers the groups and topics one scrape (or one sample) skipped
// because an ACL denied them. It is used by one goroutine at a time.
type deniedSet struct {
	groups map[string]struct{}
	topics map[string]map[string]struct{} // topic -> ACL operations denied
}

func newDeniedSet() *deniedSet {
	return &deniedSet{groups: map[string]struct{}{}, topics: map[string]map[string]struct{}{}}
}

// filter removes the authorization failures about a named group or topic
// from err, remembering what they were about, and returns the rest: the
// errors worth failing a scrape for. A denial that names no group or topic
// stays an error, so that nothing is hidden that the warning cannot tell.
func (d *deniedSet) filter(err error) error {
	if err == nil {
		return nil
	}
	if children, ok := joinedErrors(err); ok {
		var rest []error
		for _, child := range children {
			if r := d.filter(child); r != nil {
				rest = append(rest, r)
			}
		}
		return errors.Join(rest...)
	}
	var re *resourceError
	if !isAuthorizationError(err) || !errors.As(err, &re) {
		return err
	}
	switch {
	case re.group != "":
		d.groups[re.group] = struct{}{}
	case re.topic != "":
		ops := d.topics[re.topic]
		if ops == nil {
			ops = map[string]struct{}{}
			d.topics[re.topic] = ops
		}
		ops[re.op] = struct{}{}
	default:
		return err
	}
	return nil
}

// joinedErrors returns the parts of an errors.Join result. Other errors with
// several wrapped errors (fmt.Errorf with two %w) are leaves: splitting them
// would lose their own message. A join is recognised by its message being
// exactly its parts' messages, one per line.
func joinedErrors(err error) ([]error, bool) {
	multi, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil, false
	}
	children := multi.Unwrap()
	msgs := make([]string, 0, len(children))
	for _, c := range children {
		if c != nil {
			msgs = append(msgs, c.Error())
		}
	}
	if strings.Join(msgs, "\n") != err.Error() {
		return nil, false
	}
	return children, true
}

// allowedGroups returns the groups that were not denied.
func (d *deniedSet) allowedGroups(groups []string) []string {
	if len(d.groups) == 0 {
		return groups
	}
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		if _, ok := d.groups[g]; !ok {
			out = append(out, g)
		}
	}
	return out
}

// securitySummary says how the client authenticates and encrypts, for
// connection errors: a broker that drops a connection during SASL (as some
// proxies and test brokers do on a wrong password) leaves only an EOF, which
// means little without knowing that SASL was being attempted.
func securitySummary(sc *sarama.Config) string {
	transport := "plaintext"
	if sc.Net.TLS.Enable {
		transport = "TLS"
	}
	if !sc.Net.SASL.Enable {
		return transport + ", no SASL"
	}
	return fmt.Sprintf("%s, SASL %s as %q", transport, sc.Net.SASL.Mechanism, sc.Net.SASL.User)
}

func (d *deniedSet) empty() bool {
	return len(d.groups) == 0 && len(d.topics) == 0
}

// maxNamesLogged bounds the names in the warning: a principal denied
// thousands of groups must not write a megabyte per scrape.
const maxNamesLogged = 20

// warn logs what was skipped, as one warning.
func (d *deniedSet) warn(logger *zap.Logger, what string) {
	if d.empty() {
		return
	}
	groups := sortedNames(d.groups)
	topics := make([]string, 0, len(d.topics))
	for topic, ops := range d.topics {
		topics = append(topics, topic+" ("+strings.Join(sortedNames(ops), ", ")+")")
	}
	sort.Strings(topics)
	fields := []zap.Field{
		zap.Int("groups_denied", len(groups)),
		zap.Strings("groups", truncateNames(groups)),
		zap.Int("topics_denied", len(topics)),
		zap.Strings("topics", truncateNames(topics)),
	}
	logger.Warn(what+": skipped consumer groups and topics this principal is not authorized for; "+
		"grant Describe on them (and Read on topics whose records are read for time lag) or filter them out", fields...)
}

func sortedNames(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func truncateNames(names []string) []string {
	if len(names) <= maxNamesLogged {
		return names
	}
	out := append([]string(nil), names[:maxNamesLogged]...)
	return append(out, fmt.Sprintf("... and %d more", len(names)-maxNamesLogged))
}
