package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testIssuer is an authorization server's public face on loopback: its
// RFC 8414 metadata and its key set, and the key it signs tokens with.
type testIssuer struct {
	URL string
	key *ecdsa.PrivateKey
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	is := &testIssuer{key: key}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The requests come from the runner, another process: the
		// server's URL is read from them, not from is.
		base := "http://" + r.Host
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]any{
				"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
				"jwks_uri": base + "/jwks", "code_challenge_methods_supported": []string{"S256"},
			})
		case "/jwks":
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	is.URL = hs.URL
	return is
}

// token returns a token of the issuer's for aud with scopes.
func (is *testIssuer) token(t *testing.T, sub, aud string, scopes ...string) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: is.key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("at+jwt"))
	require.NoError(t, err)
	now := time.Now()
	tok, err := jwt.Signed(sig).Claims(map[string]any{
		"iss": is.URL, "sub": sub, "aud": aud, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"scope": strings.Join(scopes, " "),
	}).Serialize()
	require.NoError(t, err)
	return tok
}

func TestServeHTTPOAuthFlags(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte(testToken+"\n"), 0o600))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--oauth-issuer", "https://issuer.example", "--oauth-audience", "a", "--token-file", tokens}, "--oauth-issuer and --token-file contradict each other"},
		{[]string{"--oauth-issuer", "https://issuer.example", "--oauth-audience", "a", "--insecure-no-auth"}, "--oauth-issuer and --insecure-no-auth contradict each other"},
		{[]string{"--oauth-issuer", "https://issuer.example"}, "--oauth-issuer needs --oauth-audience"},
		{[]string{"--oauth-audience", "a"}, "--oauth-audience and --oauth-resource go with --oauth-issuer"},
		{[]string{"--oauth-issuer", "file:///etc/passwd", "--oauth-audience", "a"}, "is not an http(s) URL"},
		{[]string{"--oauth-issuer", "https://issuer.example", "--oauth-audience", "a", "--oauth-resource", "mcp"}, "--oauth-resource \"mcp\" is not an http(s) URL"},
	} {
		code, _, stderr := runCLI(append([]string{"serve", "--http", "127.0.0.1:0", "x.zip"}, c.args...)...)
		assert.Equal(t, 2, code, "%v: %s", c.args, stderr)
		assert.Contains(t, stderr, c.want, "%v", c.args)
	}
	code, _, stderr := runCLI("serve", "--oauth-issuer", "https://issuer.example", "x.zip")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "go with --http ADDR")
}

func TestServeHTTPOAuth(t *testing.T) {
	// Its processes, ports and files are its own: it waits on them beside
	// the other tests that are.
	t.Parallel()
	bin := cliBinary(t)
	zip := packaged(t)
	ctx := context.Background()
	is := newTestIssuer(t)
	const aud = "https://runner.example/mcp"
	r := startRunner(t, bin, zip, "", "--oauth-issuer", is.URL, "--oauth-audience", aud, "--config", "required_scopes=demo:use")
	endpoint := r.base + "/mcp"

	// A token with the scope the tools require sees them and calls them.
	tools, err := toolset.BuildTools(ctx, "agent", client(t, endpoint, is.token(t, "alice", aud, "demo:use")))
	require.NoError(t, err)
	assert.Contains(t, tools.Names(), "demo__echo")
	text, err := callText(ctx, tools, "demo__echo", `{"text":"with OAuth"}`)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(text, "hello, with OAuth"), text)
	assert.NotContains(t, r.stderr.String(), "warning")

	// Without it, the required_scopes hide them.
	tools, err = toolset.BuildTools(ctx, "agent", client(t, endpoint, is.token(t, "bob", aud, "other")))
	require.NoError(t, err)
	assert.NotContains(t, tools.Names(), "demo__echo")
	assert.Empty(t, tools.Names())

	// No token, or one for another audience: 401, pointing to the
	// metadata, which names the issuer.
	for _, authz := range []string{"", "Bearer " + is.token(t, "alice", "https://other.example/mcp", "demo:use")} {
		resp := rawCall(t, endpoint, authz, "demo__echo", `{"text":"x"}`)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+r.base+`/.well-known/oauth-protected-resource/mcp"`)
	}
	resp, err := http.Get(r.base + "/.well-known/oauth-protected-resource/mcp")
	require.NoError(t, err)
	defer resp.Body.Close()
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	require.NoError(t, json.Unmarshal(body, &meta), "%s", body)
	assert.Equal(t, endpoint, meta.Resource)
	assert.Equal(t, []string{is.URL}, meta.AuthorizationServers)
}
