package oauthbearer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"
	"golang.org/x/oauth2/clientcredentials"
)

// Origin is where a configuration says the tokens come from; the first
// that is set wins: AWS signing for MSK IAM, a collector extension, the
// receiver's own client-credentials grant.
type Origin struct {
	AWSMSKIAM bool
	AWSRegion string
	// Extension names the collector extension that supplies the tokens,
	// found among Extensions (the host's; nil without a host).
	Extension  component.ID
	Extensions map[component.ID]component.Component
	Grant      *clientcredentials.Config
}

// OriginError is an Origin that supplies no tokens; Key is the
// configuration key that chose it.
type OriginError struct {
	Key string
	Err error
}

func (e *OriginError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *OriginError) Unwrap() error { return e.Err }

// SourceOf is the token source o names.
func SourceOf(ctx context.Context, o Origin, logger *zap.Logger) (Source, error) {
	if o.AWSMSKIAM {
		msk, err := NewAWSMSKIAM(ctx, o.AWSRegion)
		if err != nil {
			return nil, &OriginError{Key: "aws_msk", Err: err}
		}
		return msk.Token, nil
	}
	if id := o.Extension; id != (component.ID{}) {
		if o.Extensions == nil {
			return nil, &OriginError{Key: "oauthbearer_token_source", Err: fmt.Errorf("no collector host to find extension %q in", id)}
		}
		ext, ok := o.Extensions[id]
		if !ok {
			return nil, &OriginError{Key: "oauthbearer_token_source", Err: fmt.Errorf("extension %q is not configured (list it under service::extensions)", id)}
		}
		ts, ok := ext.(ContextTokenSource)
		if !ok {
			return nil, &OriginError{Key: "oauthbearer_token_source", Err: fmt.Errorf("extension %q does not supply tokens (no Token(context.Context) method)", id)}
		}
		return FromExtension(id.String(), ts), nil
	}
	if o.Grant == nil || o.Grant.TokenURL == "" {
		return nil, &OriginError{Key: "oauthbearer", Err: errors.New("OAUTHBEARER needs oauthbearer_token_source or oauthbearer::token_url")}
	}
	if strings.HasPrefix(strings.ToLower(o.Grant.TokenURL), "http:") {
		logger.Warn("auth::sasl::oauthbearer::token_url is plain http: the client secret and the tokens cross the network unencrypted",
			zap.String("token_url", o.Grant.TokenURL))
	}
	return (&ClientCredentials{Config: *o.Grant}).Token, nil
}

// Grant is the receiver's own client-credentials grant as configured
// under oauthbearer, and the SASL extensions sent with every token.
type Grant struct {
	TokenURL, ClientID string
	HasClientSecret    bool
	Scopes             []string
	EndpointParams     url.Values
	Extensions         map[string]string
}

// saslExtensionKey is RFC 7628's key: letters only; `auth` is the token's.
var saslExtensionKey = regexp.MustCompile(`^[A-Za-z]+$`)

// ValidateGrant names each offending key under oauthbearer: a grant is a
// token URL with its client, and its other keys mean nothing without one.
func ValidateGrant(g Grant) error {
	var errs []error
	if g.TokenURL == "" {
		for _, grantKey := range []struct {
			key string
			set bool
		}{
			{"client_id", g.ClientID != ""},
			{"client_secret", g.HasClientSecret},
			{"scopes", len(g.Scopes) > 0},
			{"endpoint_params", len(g.EndpointParams) > 0},
		} {
			if grantKey.set {
				errs = append(errs, fmt.Errorf("oauthbearer::%s: used only with oauthbearer::token_url", grantKey.key))
			}
		}
	} else {
		u, err := url.Parse(g.TokenURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("oauthbearer::token_url: %q is not an http(s) URL", g.TokenURL))
		}
		if g.ClientID == "" {
			errs = append(errs, errors.New("oauthbearer::client_id: must be set with token_url"))
		}
		if !g.HasClientSecret {
			errs = append(errs, errors.New("oauthbearer::client_secret: must be set with token_url"))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(g.Extensions)) {
		if !saslExtensionKey.MatchString(key) || key == "auth" {
			errs = append(errs, fmt.Errorf("oauthbearer::extensions: %q is not a SASL extension name (letters only, not auth)", key))
		}
		if strings.ContainsRune(g.Extensions[key], '\x01') {
			errs = append(errs, fmt.Errorf("oauthbearer::extensions::%s: must not contain the byte 0x01", key))
		}
	}
	return errors.Join(errs...)
}
