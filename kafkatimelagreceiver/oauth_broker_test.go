package kafkatimelagreceiver

import (
	"bytes"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// oauthBroker makes kfake, which speaks PLAIN and SCRAM only, take
// OAUTHBEARER the way a Kafka broker with an OAuth validator does. A
// handshake for OAUTHBEARER goes on as PLAIN; the token of the
// authenticate request that follows is checked by accept, which names the
// principal it authenticates, and the request goes on as that principal's
// PLAIN login. So the token is checked here, and kfake itself tracks the
// connection's authentication (nothing but the handshake passes before it)
// and enforces the principal's ACLs. A refused token gets Kafka's answer,
// SASL_AUTHENTICATION_FAILED.
type oauthBroker struct {
	// accept returns the principal a token and its SASL extensions
	// authenticate, or false.
	accept func(token string, extensions map[string]string) (principal string, ok bool)
	// passwords are the kfake PLAIN passwords of the principals.
	passwords map[string]string

	mu       sync.Mutex
	tokens   []string // every token presented, in order
	refused  int
	lastExts map[string]string
}

func (o *oauthBroker) install(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.SASLHandshake), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if hs := req.(*kmsg.SASLHandshakeRequest); hs.Mechanism == "OAUTHBEARER" {
			hs.Mechanism = "PLAIN"
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		auth := req.(*kmsg.SASLAuthenticateRequest)
		token, exts, ok := parseOAuthBearer(auth.SASLAuthBytes)
		if !ok {
			return nil, nil, false // the test's own PLAIN or SCRAM login
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		o.tokens = append(o.tokens, token)
		o.lastExts = exts
		principal, accepted := o.accept(token, exts)
		if !accepted {
			o.refused++
			resp := auth.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := "invalid token"
			resp.ErrorMessage = &msg
			return resp, nil, true
		}
		auth.SASLAuthBytes = []byte("\x00" + principal + "\x00" + o.passwords[principal])
		return nil, nil, false
	})
}

func (o *oauthBroker) presented() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.tokens...)
}

func (o *oauthBroker) refusals() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refused
}

func (o *oauthBroker) extensions() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lastExts
}

// parseOAuthBearer reads RFC 7628's client first message:
// "n,," 0x01 "auth=Bearer " token 0x01 (key "=" value 0x01)* 0x01.
func parseOAuthBearer(msg []byte) (token string, extensions map[string]string, ok bool) {
	if !bytes.HasPrefix(msg, []byte("n,")) || !bytes.Contains(msg, []byte("\x01auth=Bearer ")) {
		return "", nil, false
	}
	extensions = map[string]string{}
	for _, kv := range strings.Split(string(msg), "\x01")[1:] {
		key, value, found := strings.Cut(kv, "=")
		switch {
		case !found:
		case key == "auth":
			token = strings.TrimPrefix(value, "Bearer ")
		default:
			extensions[key] = value
		}
	}
	return token, extensions, token != ""
}
