package mcptoolset_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/mcptoolset"
)

// Tokens that try to choose their own key are refused, and the URLs
// their headers name are never fetched: HS256 keyed with the issuer's
// public key, a key embedded in the header (jwk), key URLs (jku, x5u),
// a key ID of the issuer's on a token of another key type.
func TestTokenVerifierRefusesKeyConfusion(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	v, err := mcptoolset.NewTokenVerifier(context.Background(), as.URL, testAudience, nil)
	require.NoError(t, err)
	var fetched atomic.Int32
	lure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		http.NotFound(w, r)
	}))
	defer lure.Close()

	sign := func(alg jose.SignatureAlgorithm, key any, opts *jose.SignerOptions) string {
		t.Helper()
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
		require.NoError(t, err)
		s, err := jwt.Signed(sig).Claims(as.claims("mallory", "tools", "admin")).Serialize()
		require.NoError(t, err)
		return s
	}
	kid := as.store.current().kid
	pub, err := x509.MarshalPKIXPublicKey(&as.store.current().key.PublicKey)
	require.NoError(t, err)
	mine, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	headers := func(kv ...any) *jose.SignerOptions {
		o := &jose.SignerOptions{}
		for i := 0; i < len(kv); i += 2 {
			o = o.WithHeader(jose.HeaderKey(kv[i].(string)), kv[i+1])
		}
		return o.WithType("JWT")
	}
	for name, tok := range map[string]string{
		"HS256 with the public key": sign(jose.HS256, jose.JSONWebKey{Key: pub, KeyID: kid}, headers()),
		"embedded jwk":              sign(jose.RS256, mine, &jose.SignerOptions{EmbedJWK: true}),
		"jku":                       sign(jose.RS256, jose.JSONWebKey{Key: mine, KeyID: "lured"}, headers("jku", lure.URL+"/jwks")),
		"x5u":                       sign(jose.RS256, jose.JSONWebKey{Key: mine, KeyID: "lured"}, headers("x5u", lure.URL+"/cert")),
		"ES256 under the RSA kid":   sign(jose.ES256, jose.JSONWebKey{Key: ec, KeyID: kid}, headers()),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tok, nil)
			var te *mcptoolset.TokenError
			require.ErrorAs(t, err, &te)
			assert.NotContains(t, err.Error(), tok[len(tok)-16:], "the token is not echoed")
		})
	}
	assert.Zero(t, fetched.Load(), "no URL of a token's header is fetched")
}
