package oauthbearer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-msk-iam-sasl-signer-go/signer"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/oauthbearer"
)

const (
	testAccessKeyID = "AKIDEXAMPLE12345"
	testSecretKey   = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
	testSessionTok  = "session-Token-of-the-role-77"
)

// signerCall is what the fake signer was asked.
type signerCall struct {
	region string
	akid   string
}

// fakeSigner signs "signed-<n>" tokens valid for lifetime and records each
// call.
func fakeSigner(lifetime time.Duration, calls *[]signerCall) oauthbearer.MSKSigner {
	return func(ctx context.Context, region string, provider aws.CredentialsProvider) (string, int64, error) {
		creds, err := provider.Retrieve(ctx)
		if err != nil {
			return "", 0, err
		}
		*calls = append(*calls, signerCall{region: region, akid: creds.AccessKeyID})
		return fmt.Sprintf("signed-%d", len(*calls)), time.Now().Add(lifetime).UnixMilli(), nil
	}
}

func TestAWSMSKIAMCallsTheSignerWithTheRegion(t *testing.T) {
	var calls []signerCall
	m := &oauthbearer.AWSMSKIAM{
		Region:      "eu-west-1",
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKeyID, testSecretKey, ""),
		Sign:        fakeSigner(15*time.Minute, &calls),
	}
	c := oauthbearer.NewCache(m.Token, time.Second)
	tok, err := c.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "signed-1", tok)
	tok, err = c.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "signed-1", tok, "a 15-minute token is reused")
	require.Equal(t, []signerCall{{region: "eu-west-1", akid: testAccessKeyID}}, calls)
}

// TestAWSMSKIAMRefreshOnExpiry: a token is signed again once it is about
// to expire, and temporary credentials that expire before the signature
// bound the token's life.
func TestAWSMSKIAMRefreshOnExpiry(t *testing.T) {
	var calls []signerCall
	expiring := &oauthbearer.AWSMSKIAM{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKeyID, testSecretKey, ""),
		Sign:        fakeSigner(oauthbearer.RefreshBefore/2, &calls),
	}
	c := oauthbearer.NewCache(expiring.Token, time.Second)
	for want := 1; want <= 3; want++ {
		tok, err := c.Token(context.Background())
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("signed-%d", want), tok)
	}
	require.Len(t, calls, 3)

	calls = nil
	role := &oauthbearer.AWSMSKIAM{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{
				AccessKeyID: testAccessKeyID, SecretAccessKey: testSecretKey, SessionToken: testSessionTok,
				CanExpire: true, Expires: time.Now().Add(oauthbearer.RefreshBefore / 2),
			}, nil
		}),
		Sign: fakeSigner(15*time.Minute, &calls),
	}
	tok, err := role.Token(context.Background())
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(oauthbearer.RefreshBefore/2), tok.Expiry, 5*time.Second,
		"the credentials' expiry, not the signature's")
	c = oauthbearer.NewCache(role.Token, time.Second)
	for range 2 {
		_, err := c.Token(context.Background())
		require.NoError(t, err)
	}
	require.Len(t, calls, 3, "credentials about to expire: signed again each time")
}

func TestAWSMSKIAMErrors(t *testing.T) {
	failing := &oauthbearer.AWSMSKIAM{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no EC2 instance role")
		}),
		Sign: signer.GenerateAuthTokenFromCredentialsProvider,
	}
	_, err := failing.Token(context.Background())
	require.ErrorContains(t, err, "retrieve AWS credentials")
	require.ErrorContains(t, err, "no EC2 instance role")

	signFails := &oauthbearer.AWSMSKIAM{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKeyID, testSecretKey, ""),
		Sign: func(context.Context, string, aws.CredentialsProvider) (string, int64, error) {
			return "", 0, errors.New("clock skew")
		},
	}
	_, err = signFails.Token(context.Background())
	require.ErrorContains(t, err, "sign a token for region us-east-1")
	require.NotContains(t, err.Error(), testSecretKey)
}

// TestAWSMSKIAMRealSigner runs the real signer on static credentials (no
// network): the token is the presigned kafka-cluster:Connect URL for the
// region, carrying the key id and never the secret key.
func TestAWSMSKIAMRealSigner(t *testing.T) {
	m := &oauthbearer.AWSMSKIAM{
		Region:      "ap-southeast-2",
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKeyID, testSecretKey, testSessionTok),
		Sign:        signer.GenerateAuthTokenFromCredentialsProvider,
	}
	tok, err := m.Token(context.Background())
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(15*time.Minute), tok.Expiry, time.Minute)
	presigned := DecodeMSKToken(t, tok.Value)
	require.Equal(t, "kafka.ap-southeast-2.amazonaws.com", presigned.Host)
	q := presigned.Query()
	require.Equal(t, "kafka-cluster:Connect", q.Get("Action"))
	require.True(t, strings.HasPrefix(q.Get("X-Amz-Credential"), testAccessKeyID+"/"), q.Get("X-Amz-Credential"))
	require.Contains(t, q.Get("X-Amz-Credential"), "/ap-southeast-2/kafka-cluster/aws4_request")
	require.NotEmpty(t, q.Get("X-Amz-Signature"))
	require.NotContains(t, tok.Value, testSecretKey)
	require.NotContains(t, presigned.String(), testSecretKey)
}

// DecodeMSKToken turns an MSK IAM token back into the presigned URL.
func DecodeMSKToken(t *testing.T, token string) *url.URL {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(token)
	require.NoError(t, err)
	u, err := url.Parse(string(raw))
	require.NoError(t, err)
	return u
}

func TestClientCredentials(t *testing.T) {
	const secret = "client-Secret-42"
	var requests atomic.Int32
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		require.NoError(t, r.ParseForm())
		id, pass, ok := r.BasicAuth()
		if !ok {
			id, pass = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if id != "lag-monitor" || pass != secret || r.PostForm.Get("grant_type") != "client_credentials" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"access_token": "at-" + r.PostForm.Get("scope") + "-" + r.PostForm.Get("audience"),
			"token_type":   "Bearer",
			"expires_in":   3600,
		})
	}))
	t.Cleanup(idp.Close)

	cc := &oauthbearer.ClientCredentials{Config: clientcredentials.Config{
		ClientID: "lag-monitor", ClientSecret: secret, TokenURL: idp.URL + "/token",
		Scopes: []string{"kafka"}, EndpointParams: url.Values{"audience": {"strimzi"}},
	}}
	tok, err := cc.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "at-kafka-strimzi", tok.Value)
	require.WithinDuration(t, time.Now().Add(time.Hour), tok.Expiry, time.Minute)

	c := oauthbearer.NewCache(cc.Token, 5*time.Second)
	for range 3 {
		v, err := c.Token(context.Background())
		require.NoError(t, err)
		require.Equal(t, "at-kafka-strimzi", v)
	}
	require.EqualValues(t, 2, requests.Load(), "one grant for the cache, reused")

	wrong := &oauthbearer.ClientCredentials{Config: clientcredentials.Config{
		ClientID: "lag-monitor", ClientSecret: "not-the-" + secret, TokenURL: idp.URL + "/token",
	}}
	_, err = wrong.Token(context.Background())
	require.ErrorContains(t, err, "client-credentials grant at "+idp.URL+"/token")
	require.ErrorContains(t, err, "invalid_client")
	require.NotContains(t, err.Error(), secret)
}

type fakeExtension struct {
	tok *oauth2.Token
	err error
}

func (f fakeExtension) Token(context.Context) (*oauth2.Token, error) { return f.tok, f.err }

func TestFromExtension(t *testing.T) {
	expiry := time.Now().Add(time.Hour)
	src := oauthbearer.FromExtension("oauth2client", fakeExtension{tok: &oauth2.Token{AccessToken: "from-ext", Expiry: expiry}})
	tok, err := src(context.Background())
	require.NoError(t, err)
	require.Equal(t, oauthbearer.Token{Value: "from-ext", Expiry: expiry}, tok)

	_, err = oauthbearer.FromExtension("oauth2client", fakeExtension{err: errors.New("refused")})(context.Background())
	require.ErrorContains(t, err, "extension oauth2client: refused")
	_, err = oauthbearer.FromExtension("oauth2client", fakeExtension{})(context.Background())
	require.ErrorContains(t, err, "returned no token")
}
