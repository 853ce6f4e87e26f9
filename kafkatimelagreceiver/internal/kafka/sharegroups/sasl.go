package sharegroups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// saslMechanism is franz-go's mechanism for the settings, and for the token
// mechanisms the adapter told when a broker refuses a token. Its errors name
// the key under auth::sasl.
func saslMechanism(s *clientsettings.SASL, requestTimeout time.Duration) (sasl.Mechanism, *tokenMechanism, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	switch s.MechanismName() {
	case kafka.SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil, nil
	case kafka.SASLSCRAMSHA256:
		return boundedSCRAM{scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()}, nil, nil
	case kafka.SASLSCRAMSHA512:
		return boundedSCRAM{scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()}, nil, nil
	}
	// OAUTHBEARER, and AWS_MSK_IAM_OAUTHBEARER: OAUTHBEARER on the wire
	// with a token AWS signed.
	t := &tokenMechanism{Presenter: clientsettings.NewPresenter(s, requestTimeout)}
	t.Mechanism = oauth.Oauth(t.auth)
	return t, t, nil
}

// boundedSCRAM refuses a server-first message asking for more PBKDF2
// iterations than Kafka allows (franz-go's own bound is 64 times higher).
type boundedSCRAM struct{ sasl.Mechanism }

func (b boundedSCRAM) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	session, first, err := b.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	return &boundedSCRAMSession{Session: session}, first, nil
}

type boundedSCRAMSession struct {
	sasl.Session
	answered bool
}

func (s *boundedSCRAMSession) Challenge(resp []byte) (bool, []byte, error) {
	if !s.answered {
		// The first challenge is the server-first message.
		s.answered = true
		if err := kafka.CheckSCRAMIterations(string(resp)); err != nil {
			return false, nil, err
		}
	}
	return s.Session.Challenge(resp)
}

// tokenMechanism is OAUTHBEARER with the tokens of a TokenSource shared
// with the cluster's client, through a Presenter, so that a refusal drops
// the token presented last for both clients.
type tokenMechanism struct {
	sasl.Mechanism
	*clientsettings.Presenter
}

func (t *tokenMechanism) auth(ctx context.Context) (oauth.Auth, error) {
	// franz-go passes the dial's context, which may have no deadline: the
	// Presenter bounds it.
	token, extensions, err := t.Token(ctx)
	if err != nil {
		return oauth.Auth{}, err
	}
	return oauth.Auth{Token: token, Extensions: extensions}, nil
}
