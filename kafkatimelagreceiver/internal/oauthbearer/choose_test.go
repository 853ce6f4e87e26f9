package oauthbearer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/oauthbearer"
)

// TestSourceOfNamesTheKeyThatChoseIt: an origin that supplies no tokens
// says which key chose it, for the receiver to put its prefix before.
func TestSourceOfNamesTheKeyThatChoseIt(t *testing.T) {
	id := component.MustNewID("oauth2client")
	notTokens := component.Component(nil)
	for name, tc := range map[string]struct {
		origin  oauthbearer.Origin
		key     string
		message string
	}{
		"no host":            {oauthbearer.Origin{Extension: id}, "oauthbearer_token_source", "no collector host"},
		"not configured":     {oauthbearer.Origin{Extension: id, Extensions: map[component.ID]component.Component{}}, "oauthbearer_token_source", "is not configured"},
		"supplies no tokens": {oauthbearer.Origin{Extension: id, Extensions: map[component.ID]component.Component{id: notTokens}}, "oauthbearer_token_source", "does not supply tokens"},
		"no grant":           {oauthbearer.Origin{}, "oauthbearer", "token_url"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := oauthbearer.SourceOf(context.Background(), tc.origin, zap.NewNop())
			var origin *oauthbearer.OriginError
			require.True(t, errors.As(err, &origin), "%v", err)
			require.Equal(t, tc.key, origin.Key)
			require.ErrorContains(t, err, tc.message)
		})
	}
	source, err := oauthbearer.SourceOf(context.Background(), oauthbearer.Origin{Grant: &clientcredentials.Config{TokenURL: "https://idp.example/token", ClientID: "c", ClientSecret: "s"}}, zap.NewNop())
	require.NoError(t, err)
	require.NotNil(t, source)
}

func TestValidateGrant(t *testing.T) {
	require.NoError(t, oauthbearer.ValidateGrant(oauthbearer.Grant{TokenURL: "https://idp.example/token", ClientID: "c", HasClientSecret: true, Extensions: map[string]string{"logicalCluster": "lkc-1"}}))
	err := oauthbearer.ValidateGrant(oauthbearer.Grant{ClientID: "c", Scopes: []string{"kafka"}})
	require.ErrorContains(t, err, "oauthbearer::client_id: used only with oauthbearer::token_url")
	require.ErrorContains(t, err, "oauthbearer::scopes: used only with oauthbearer::token_url")
	err = oauthbearer.ValidateGrant(oauthbearer.Grant{TokenURL: "ftp://x", Extensions: map[string]string{"auth": "x", "ok": "a\x01b"}})
	for _, want := range []string{"oauthbearer::token_url", "oauthbearer::client_id: must be set", "oauthbearer::client_secret: must be set", `"auth" is not a SASL extension name`, "oauthbearer::extensions::ok"} {
		require.ErrorContains(t, err, want)
	}
}
