package kafkatimelagreceiver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

const (
	oauthClientSecret  = "idp-Client-Secret-61"
	oauthPrincipalPass = "kfake-side-Pa55-3"
)

// testIdP is an identity provider's token endpoint for the
// client-credentials grant; issue makes the n-th token (from 1) and says
// how long it lives.
type testIdP struct {
	url    string
	grants atomic.Int32
}

func newTestIdP(t *testing.T, issue func(n int32) (token string, expiresIn int)) *testIdP {
	t.Helper()
	idp := &testIdP{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		w.Header().Set("Content-Type", "application/json")
		if id != secMonitorUser || secret != oauthClientSecret || r.PostForm.Get("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		token, expiresIn := issue(idp.grants.Add(1))
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": expiresIn})
	}))
	t.Cleanup(srv.Close)
	idp.url = srv.URL + "/oauth2/token"
	return idp
}

// newOAuthTestKafka is a cluster that takes OAUTHBEARER tokens accept
// approves as the monitoring principal; the test's client is a PLAIN
// superuser.
func newOAuthTestKafka(t *testing.T, brokers int, ob *oauthBroker, opts ...kfake.Opt) *testKafka {
	t.Helper()
	ob.passwords = map[string]string{secMonitorUser: oauthPrincipalPass}
	opts = append([]kfake.Opt{
		kfake.EnableSASL(),
		kfake.Superuser(kafka.SASLPlain, secAdminUser, secAdminPassword),
		kfake.User(kafka.SASLPlain, secMonitorUser, oauthPrincipalPass),
	}, opts...)
	k := newSecureTestKafka(t, brokers, []kgo.Opt{kgo.SASL(saslMechanismFor(t, kafka.SASLPlain, secAdminUser, secAdminPassword))}, opts...)
	ob.install(k.Cluster)
	return k
}

// extensionHost is a collector host with the given extensions.
type extensionHost map[component.ID]component.Component

func (h extensionHost) GetExtensions() map[component.ID]component.Component { return h }

func clientCredentialsConfig(k *testKafka, tokenURL string) *Config {
	cfg := k.testConfig()
	cfg.Timeout = 5 * time.Second
	cfg.Auth.SASL = &SASLConfig{Mechanism: kafka.SASLOAuthBearer, Version: 1, OAuthBearer: &OAuthBearerConfig{
		TokenURL:       tokenURL,
		ClientID:       secMonitorUser,
		ClientSecret:   oauthClientSecret,
		Scopes:         []string{"kafka"},
		EndpointParams: url.Values{"audience": {"kafka-cluster"}},
		Extensions:     map[string]string{"logicalCluster": "lkc-1", "identityPoolId": "pool-2"},
	}}
	return cfg
}

// TestOAuthBearerClientCredentialsAgainstKafka: the receiver gets a token
// from the identity provider with its client credentials and logs in with
// it, with the SASL extensions, on every broker: one grant for all of them.
func TestOAuthBearerClientCredentialsAgainstKafka(t *testing.T) {
	idp := newTestIdP(t, func(n int32) (string, int) { return fmt.Sprintf("cc-token-%d", n), 3600 })
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		return secMonitorUser, strings.HasPrefix(token, "cc-token-")
	}}
	k := newOAuthTestKafka(t, 3, ob)
	secFixture(k)

	cfg := clientCredentialsConfig(k, idp.url)
	require.NoError(t, confmap.Validate(cfg))
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	requireBillingLag(t, s)

	require.EqualValues(t, 1, idp.grants.Load(), "one token for every connection")
	presented := ob.presented()
	require.NotEmpty(t, presented)
	for _, tok := range presented {
		require.Equal(t, "cc-token-1", tok)
	}
	require.Equal(t, map[string]string{"logicalCluster": "lkc-1", "identityPoolId": "pool-2"}, ob.extensions())
	require.Equal(t, 1, logs.FilterMessageSnippet("token_url is plain http").Len())
	require.Equal(t, 1, logs.FilterMessageSnippet("without TLS").Len())
	requireNoSecretLogged(t, logs, oauthClientSecret, "cc-token-1")
}

// TestOAuthBearerRefusedTokenReplaced: a token the brokers refuse before it
// expires (revoked) fails the scrape with an error that names the
// mechanism and not the token; the next scrape gets a new token rather than
// presenting the refused one until it expires.
func TestOAuthBearerRefusedTokenReplaced(t *testing.T) {
	idp := newTestIdP(t, func(n int32) (string, int) { return fmt.Sprintf("token-%d", n), 3600 })
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		return secMonitorUser, token != "token-1" // token-1 was revoked
	}}
	k := newOAuthTestKafka(t, 2, ob)
	secFixture(k)

	cfg := clientCredentialsConfig(k, idp.url)
	cfg.Timeout = 3 * time.Second
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))
	_, err := s.scrape(context.Background())
	require.Error(t, err)
	require.Contains(t, err.Error(), "SASL OAUTHBEARER", "the error must say what authentication failed: %v", err)
	require.NotContains(t, err.Error(), "token-1")
	require.NotContains(t, err.Error(), oauthClientSecret)

	requireBillingLag(t, s)
	require.EqualValues(t, 2, idp.grants.Load())
	require.Contains(t, ob.presented(), "token-2")
	requireNoSecretLogged(t, logs, oauthClientSecret, "token-1", "token-2")
}

// TestOAuthBearerReauthenticationRefreshesToken: a broker that limits
// sessions (connections.max.reauth.ms, KIP-368) has the client log in again
// on the open connection; a token about to expire is replaced by then.
func TestOAuthBearerReauthenticationRefreshesToken(t *testing.T) {
	const session = 1500 * time.Millisecond
	// Tokens that live less than the refresh margin are never reused.
	idp := newTestIdP(t, func(n int32) (string, int) { return fmt.Sprintf("short-%d", n), 30 })
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		return secMonitorUser, strings.HasPrefix(token, "short-")
	}}
	k := newOAuthTestKafka(t, 1, ob,
		kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": fmt.Sprint(session.Milliseconds())}))
	secFixture(k)

	s, _ := startObservedScraper(t, clientCredentialsConfig(k, idp.url), zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	before := len(ob.presented())
	time.Sleep(session + 100*time.Millisecond) // past the session's end, whatever the jitter
	requireBillingLag(t, s)
	after := ob.presented()
	require.Greater(t, len(after), before, "the client logged in again")
	require.NotEqual(t, after[0], after[len(after)-1], "with a new token")
}

// tokenExtension is a collector extension that supplies tokens, as
// contrib's oauth2client does.
type tokenExtension struct {
	component.StartFunc
	component.ShutdownFunc
	calls atomic.Int32
}

func (e *tokenExtension) Token(context.Context) (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: fmt.Sprintf("ext-token-%d", e.calls.Add(1)), Expiry: time.Now().Add(time.Hour)}, nil
}

// TestOAuthBearerTokenSourceExtension: contrib's oauthbearer_token_source
// names the extension that supplies the tokens.
func TestOAuthBearerTokenSourceExtension(t *testing.T) {
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		return secMonitorUser, strings.HasPrefix(token, "ext-token-")
	}}
	k := newOAuthTestKafka(t, 2, ob)
	secFixture(k)

	id := component.MustNewID("oauth2client")
	cfg := k.testConfig()
	cfg.Auth.SASL = &SASLConfig{Mechanism: "oauthbearer", Version: 1, OAuthBearerTokenSource: id}
	require.NoError(t, confmap.Validate(cfg))
	ext := &tokenExtension{}
	s, logs := startObservedScraperOn(t, cfg, extensionHost{id: ext}, zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	require.EqualValues(t, 1, ext.calls.Load())
	require.Contains(t, ob.presented(), "ext-token-1")
	requireNoSecretLogged(t, logs, "ext-token-1")

	for name, host := range map[string]component.Host{
		"no such extension": extensionHost{},
		"extension without tokens": extensionHost{id: struct {
			component.StartFunc
			component.ShutdownFunc
		}{}},
		"no host": nil,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
			require.NoError(t, err)
			err = s.start(context.Background(), host)
			require.ErrorContains(t, err, "auth::sasl::oauthbearer_token_source")
			require.ErrorContains(t, err, `"oauth2client"`)
			require.NoError(t, s.shutdown(context.Background()))
		})
	}
}

// mskTestCredentials are AWS credentials for the standard chain to find in
// the environment, and nowhere else: no shared files, no instance role.
func mskTestCredentials(t *testing.T) aws.Credentials {
	creds := aws.Credentials{AccessKeyID: "AKIDMSKTEST0001", SecretAccessKey: "msk-Secret-Access-Key-0f9e8d", SessionToken: "msk-session-token-7"}
	t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", creds.SessionToken)
	none := t.TempDir() + "/none"
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, unset := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(unset, "")
	}
	return creds
}

// verifyMSKToken is the broker's side of AWS MSK IAM: the token is a
// presigned kafka-cluster:Connect request for the region, and its SigV4
// signature must be the one the principal's secret key makes.
func verifyMSKToken(token, region string, creds aws.Credentials) error {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return err
	}
	presigned, err := url.Parse(string(raw))
	if err != nil {
		return err
	}
	q := presigned.Query()
	if presigned.Host != "kafka."+region+".amazonaws.com" || q.Get("Action") != "kafka-cluster:Connect" {
		return fmt.Errorf("not a kafka-cluster:Connect request for %s: %s", region, presigned.Host)
	}
	signedAt, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	unsigned := url.URL{Scheme: "https", Host: presigned.Host, Path: "/",
		RawQuery: url.Values{"Action": {"kafka-cluster:Connect"}, "X-Amz-Expires": {q.Get("X-Amz-Expires")}}.Encode()}
	req, err := http.NewRequest(http.MethodGet, unsigned.String(), http.NoBody)
	if err != nil {
		return err
	}
	resigned, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req,
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "kafka-cluster", region, signedAt)
	if err != nil {
		return err
	}
	want, err := url.Parse(resigned)
	if err != nil {
		return err
	}
	if got := q.Get("X-Amz-Signature"); got == "" || got != want.Query().Get("X-Amz-Signature") {
		return fmt.Errorf("signature %q does not verify", got)
	}
	return nil
}

// TestAWSMSKIAMAgainstKafka runs AWS_MSK_IAM_OAUTHBEARER end to end but for
// AWS itself: credentials from the standard chain (here the environment),
// the real signer, and a broker that verifies the signature for the
// configured region.
func TestAWSMSKIAMAgainstKafka(t *testing.T) {
	const region = "eu-central-1"
	creds := mskTestCredentials(t)
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		err := verifyMSKToken(token, region, creds)
		if err != nil {
			t.Logf("the broker refuses the token: %v", err)
		}
		return secMonitorUser, err == nil
	}}
	k := newOAuthTestKafka(t, 2, ob)
	secFixture(k)

	cfg := k.testConfig()
	cfg.Auth.SASL = &SASLConfig{Mechanism: kafka.SASLAWSMSKIAM, Version: 1, AWSMSK: AWSMSKConfig{Region: region}}
	require.NoError(t, confmap.Validate(cfg))
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	require.Zero(t, ob.refusals(), "every token verifies")
	presented := ob.presented()
	require.NotEmpty(t, presented)
	for _, tok := range presented {
		require.Equal(t, presented[0], tok, "one signed token for every connection")
		require.NotContains(t, tok, creds.SecretAccessKey)
	}
	requireNoSecretLogged(t, logs, creds.SecretAccessKey, creds.SessionToken, presented[0])
	forged := creds
	forged.SecretAccessKey = "not-" + creds.SecretAccessKey
	require.ErrorContains(t, verifyMSKToken(presented[0], region, forged), "does not verify", "the broker's check is a real one")

	// Signed for another region, the token is refused.
	wrong := k.testConfig()
	wrong.Timeout = 3 * time.Second
	wrong.Auth.SASL = &SASLConfig{Mechanism: kafka.SASLAWSMSKIAM, Version: 1, AWSMSK: AWSMSKConfig{Region: "us-west-2"}}
	_, err := startScraper(t, wrong).scrape(context.Background())
	require.Error(t, err)
	require.Contains(t, err.Error(), "SASL AWS_MSK_IAM_OAUTHBEARER")
	require.NotContains(t, err.Error(), creds.SecretAccessKey)
}
