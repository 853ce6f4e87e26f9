package oauthbearer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-msk-iam-sasl-signer-go/signer"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// MSKSigner signs an AWS MSK IAM token for the region with the credentials;
// it returns the token and its expiry in Unix milliseconds.
// signer.GenerateAuthTokenFromCredentialsProvider is the real one.
type MSKSigner func(ctx context.Context, region string, credentials aws.CredentialsProvider) (string, int64, error)

// AWSMSKIAM is the AWS_MSK_IAM_OAUTHBEARER mechanism's source: a token
// signed (SigV4, locally) for the region with the principal's AWS
// credentials. The broker checks the signature; the secret key never
// leaves the process.
type AWSMSKIAM struct {
	Region      string
	Credentials aws.CredentialsProvider
	Sign        MSKSigner
}

// NewAWSMSKIAM resolves the standard AWS credential chain (environment,
// shared files and profiles, web identity as on EKS, the ECS and EC2
// instance roles) once; its cache renews temporary credentials a minute
// before they expire. Nothing is fetched until the first token.
func NewAWSMSKIAM(ctx context.Context, region string) (*AWSMSKIAM, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region),
		awsconfig.WithCredentialsCacheOptions(func(o *aws.CredentialsCacheOptions) {
			o.ExpiryWindow = time.Minute
		}))
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	return &AWSMSKIAM{Region: region, Credentials: cfg.Credentials, Sign: signer.GenerateAuthTokenFromCredentialsProvider}, nil
}

// Token signs a token. It expires when the signature does (15 minutes) or
// when the temporary credentials that signed it do, whichever comes first.
func (m *AWSMSKIAM) Token(ctx context.Context) (Token, error) {
	if m.Credentials == nil {
		return Token{}, errors.New("AWS MSK IAM: no AWS credentials provider")
	}
	creds, err := m.Credentials.Retrieve(ctx)
	if err != nil {
		return Token{}, fmt.Errorf("AWS MSK IAM: retrieve AWS credentials: %w", err)
	}
	signed, expiryMillis, err := m.Sign(ctx, m.Region, credentials(creds))
	if err != nil {
		return Token{}, fmt.Errorf("AWS MSK IAM: sign a token for region %s: %w", m.Region, err)
	}
	expiry := time.UnixMilli(expiryMillis)
	if creds.CanExpire && creds.Expires.Before(expiry) {
		expiry = creds.Expires
	}
	return Token{Value: signed, Expiry: expiry}, nil
}

// credentials hands the signer the credentials already retrieved, so that
// the expiry used is the one of the credentials that signed.
type credentials aws.Credentials

func (c credentials) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials(c), nil
}

// ClientCredentials is an OAuth2 client-credentials grant (RFC 6749 4.4)
// against the identity provider's token endpoint.
type ClientCredentials struct {
	Config clientcredentials.Config
	// HTTPClient sends the token requests; nil means a client of its own
	// (the deadline comes from the context).
	HTTPClient *http.Client
}

// Token asks the token endpoint for a new token.
func (c *ClientCredentials) Token(ctx context.Context) (Token, error) {
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	tok, err := c.Config.Token(context.WithValue(ctx, oauth2.HTTPClient, client))
	if err != nil {
		// oauth2's errors carry the endpoint's answer, never the secret.
		return Token{}, fmt.Errorf("client-credentials grant at %s: %w", c.Config.TokenURL, err)
	}
	return Token{Value: tok.AccessToken, Expiry: tok.Expiry}, nil
}

// ContextTokenSource is what a collector extension offers to supply tokens,
// as contrib's Kafka components expect of `oauthbearer_token_source` (the
// oauth2client, azure_auth and bearertokenauth extensions have it).
type ContextTokenSource interface {
	Token(ctx context.Context) (*oauth2.Token, error)
}

// FromExtension asks the extension for every token it hands out; the
// extension does its own caching.
func FromExtension(name string, ts ContextTokenSource) Source {
	return func(ctx context.Context) (Token, error) {
		tok, err := ts.Token(ctx)
		if err != nil {
			return Token{}, fmt.Errorf("extension %s: %w", name, err)
		}
		if tok == nil {
			return Token{}, fmt.Errorf("extension %s returned no token", name)
		}
		return Token{Value: tok.AccessToken, Expiry: tok.Expiry}, nil
	}
}
