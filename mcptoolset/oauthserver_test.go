package mcptoolset_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

const testAudience = "https://tools.example/mcp"

// scopedTools are a toolset whose admin_reset needs the scope "admin",
// through the run value TokenScopes, and whose whoami says what the run
// holds.
func scopedTools() toolset.Toolset {
	whoami := toolset.NewTool("whoami", "Says who the run is.", func(ctx context.Context, _ struct{}) (string, error) {
		return mcptoolset.TokenUser.Get(ctx) + " " + strings.Join(mcptoolset.TokenScopes.Get(ctx), ","), nil
	})
	reset := toolset.NewTool("admin_reset", "Resets everything.", func(context.Context, struct{}) (string, error) {
		return "reset", nil
	}, toolset.WithMetadata(map[string]string{"scope": "admin"}))
	return toolset.NewFunction(whoami, reset).Filtered(func(ctx context.Context, t toolset.Tool) (bool, error) {
		need := t.Metadata["scope"]
		return need == "" || slices.Contains(mcptoolset.TokenScopes.Get(ctx), need), nil
	})
}

// oauthMCP serves scopedTools behind OAuth with tokens of as, the
// endpoint at /mcp and the metadata at its well-known path.
func oauthMCP(t *testing.T, as *authServer) *httptest.Server {
	t.Helper()
	v, err := mcptoolset.NewTokenVerifier(context.Background(), as.URL, testAudience, nil)
	require.NoError(t, err)
	cfg := &mcptoolset.OAuthConfig{Verifier: v.Verify, AuthorizationServers: []string{as.URL}, ScopesSupported: []string{"tools", "admin"}}
	srv := mcptoolset.NewServer(scopedTools(), mcptoolset.WithOAuth(cfg))
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(nil))
	mux.Handle(mcptoolset.ProtectedResourceMetadataPath+"/", cfg.MetadataHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

// bearerSession connects a real SDK client to url with tok.
func bearerSession(t *testing.T, url string, ts oauth2.TokenSource) *mcp.ClientSession {
	t.Helper()
	hc := oauth2.NewClient(context.Background(), ts)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func sortedNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	names := listedNames(t, cs)
	slices.Sort(names)
	return names
}

func TestOAuthServerTokenScopesMapOntoTools(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools", "admin")
	as.addService("ops", "ops-secret")
	as.addService("viewer", "viewer-secret")
	hs := oauthMCP(t, as)

	admin := bearerSession(t, hs.URL+"/mcp", as.serviceSource("ops", "ops-secret", "tools", "admin"))
	assert.Equal(t, []string{"admin_reset", "whoami"}, sortedNames(t, admin))
	text, isErr := callText(t, admin, "admin_reset", nil)
	assert.False(t, isErr, text)
	assert.Equal(t, "reset", text)
	text, isErr = callText(t, admin, "whoami", nil)
	require.False(t, isErr, text)
	assert.Regexp(t, `^oauth-[0-9a-f]{32} admin,tools$`, text)

	viewer := bearerSession(t, hs.URL+"/mcp", as.serviceSource("viewer", "viewer-secret", "tools"))
	assert.Equal(t, []string{"whoami"}, sortedNames(t, viewer), "a tool needing a scope the token lacks is not listed")
	text, isErr = callText(t, viewer, "admin_reset", nil)
	assert.True(t, isErr, "a tool needing a scope the token lacks is refused: %s", text)
	assert.NotContains(t, text, "reset\n")
	who, _ := callText(t, viewer, "whoami", nil)
	assert.True(t, strings.HasSuffix(who, " tools"), who)
	assert.NotEqual(t, strings.Fields(text), strings.Fields(who))
}

// post sends an initialize request to url with the Authorization header
// auth ("" for none).
func post(t *testing.T, url, authz string) (*http.Response, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	return res, string(b)
}

func TestOAuthServerRefusesBadTokens(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	as.addService("ops", "ops-secret")
	hs := oauthMCP(t, as)
	endpoint := hs.URL + "/mcp"
	metaURL := hs.URL + mcptoolset.ProtectedResourceMetadataPath + "/mcp"

	good := as.serviceToken(t, "ops", "ops-secret", "tools")
	cs := bearerSession(t, endpoint, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: good}))
	assert.Equal(t, []string{"whoami"}, listedNames(t, cs), "a token of the provider's is accepted")
	cs.Close()

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	claims := func(edit func(map[string]any)) map[string]any {
		c := as.claims("mallory", "tools")
		edit(c)
		return c
	}
	expired := as.mint(t, nil, "", claims(func(c map[string]any) {
		c["exp"] = time.Now().Add(-time.Hour).Unix()
		c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
		c["nbf"] = time.Now().Add(-2 * time.Hour).Unix()
	}))
	cases := []struct {
		name, header, reason string
	}{
		{"missing", "", "no bearer token"},
		{"not bearer", "Basic " + good, "no bearer token"},
		{"expired", "Bearer " + expired, "expired"},
		{"wrong audience", "Bearer " + as.mint(t, nil, "", claims(func(c map[string]any) { c["aud"] = "https://elsewhere.example/mcp" })), "wrong audience"},
		{"wrong issuer", "Bearer " + as.mint(t, nil, "", claims(func(c map[string]any) { c["iss"] = "https://evil.example" })), "wrong issuer"},
		{"bad signature", "Bearer " + as.mint(t, other, as.kid, claims(func(map[string]any) {})), "bad signature"},
		{"unknown key", "Bearer " + as.mint(t, other, "key-9", claims(func(map[string]any) {})), "bad signature"},
		{"no expiry", "Bearer " + as.mint(t, nil, "", claims(func(c map[string]any) { delete(c, "exp") })), "no expiry"},
		{"no subject", "Bearer " + as.mint(t, nil, "", claims(func(c map[string]any) { delete(c, "sub") })), "no subject"},
		{"alg none", "Bearer eyJhbGciOiJub25lIn0." + strings.TrimRight(strings.Split(good, ".")[1], "=") + ".", "not a signed JWT"},
		{"tampered", "Bearer " + tamper(good), "bad signature"},
		{"garbage", "Bearer not-a-jwt", "not a signed JWT"},
		{"oversized", "Bearer " + strings.Repeat("a", mcptoolset.MaxTokenBytes+1), "over the size limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, body := post(t, endpoint, c.header)
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
			assert.Contains(t, body, c.reason)
			assert.Contains(t, res.Header.Get("WWW-Authenticate"), `resource_metadata="`+metaURL+`"`)
			if tok, ok := strings.CutPrefix(c.header, "Bearer "); ok && len(tok) > 20 {
				assert.NotContains(t, body, tok[len(tok)-20:], "the token is not echoed")
			}
		})
	}

	// The metadata the 401 points to names the endpoint and the issuer,
	// read by the SDK's client code, which checks the resource.
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), metaURL, endpoint, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{as.URL}, prm.AuthorizationServers)
	assert.Equal(t, []string{"tools", "admin"}, prm.ScopesSupported)
}

// tamper changes the payload of a JWT, keeping its signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	p := []byte(parts[1])
	if p[3] == 'A' {
		p[3] = 'B'
	} else {
		p[3] = 'A'
	}
	parts[1] = string(p)
	return strings.Join(parts, ".")
}

func TestTokenVerifierErrors(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	v, err := mcptoolset.NewTokenVerifier(context.Background(), as.URL, testAudience, nil)
	require.NoError(t, err)
	assert.Equal(t, as.URL, v.Issuer())
	tok := as.mint(t, nil, "", as.claims("bob", "tools", "tools", "b"))
	info, err := v.Verify(context.Background(), tok, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "tools"}, info.Scopes, "sorted, once each")
	assert.Equal(t, "bob", info.Extra["sub"])

	_, err = v.Verify(context.Background(), as.mint(t, nil, "", map[string]any{"iss": as.URL, "sub": "x", "aud": testAudience, "exp": time.Now().Add(-time.Hour).Unix()}), nil)
	var te *mcptoolset.TokenError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "expired", te.Reason)
	assert.ErrorIs(t, err, auth.ErrInvalidToken)

	// A verifier for another issuer than the provider's metadata names
	// is refused at once.
	_, err = mcptoolset.NewTokenVerifier(context.Background(), as.URL+"/other", testAudience, nil)
	require.Error(t, err)
	_, err = mcptoolset.NewTokenVerifier(context.Background(), as.URL, "", nil)
	require.Error(t, err)
}

func TestTokenVerifierBoundsTheIssuer(t *testing.T) {
	checkLeaks(t)
	var jwks func(w http.ResponseWriter)
	var hs *httptest.Server
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"issuer":"`+hs.URL+`","authorization_endpoint":"`+hs.URL+`/a","token_endpoint":"`+hs.URL+`/t","jwks_uri":"`+hs.URL+`/jwks","code_challenge_methods_supported":["S256"]}`)
		case "/jwks":
			jwks(w)
		default:
			http.NotFound(w, r)
		}
	}))
	defer hs.Close()
	for name, fn := range map[string]func(w http.ResponseWriter){
		"huge": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"keys":[`+strings.Repeat(" ", mcptoolset.MaxJWKSBytes)+`]}`)
		},
		"no keys": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"keys":[]}`)
		},
		"symmetric key": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"keys":[{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0","kid":"h"}]}`)
		},
		"not json": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<html>`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			jwks = fn
			_, err := mcptoolset.NewTokenVerifier(context.Background(), hs.URL, testAudience, nil)
			require.Error(t, err)
		})
	}
}

// The issuer rotates its key: a token signed with the new one makes the
// verifier fetch the key set again, at most once per bound, and a token
// with a made-up key ID does not make it fetch again within the bound.
func TestTokenVerifierFollowsKeyRotation(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	v, err := mcptoolset.NewTokenVerifier(context.Background(), as.URL, testAudience, nil)
	require.NoError(t, err)
	old := as.mint(t, nil, "", as.claims("bob", "tools"))
	_, err = v.Verify(context.Background(), old, nil)
	require.NoError(t, err)

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	as.store.mu.Lock()
	as.key, as.kid = key, "key-2"
	as.store.mu.Unlock()
	rotated := as.mint(t, nil, "", as.claims("bob", "tools"))
	_, err = v.Verify(context.Background(), rotated, nil)
	require.Error(t, err, "within the bound, the key set is not fetched again")

	defer mcptoolset.SetMinKeyRefresh(0)()
	_, err = v.Verify(context.Background(), rotated, nil)
	require.NoError(t, err, "past the bound, the new key is fetched")
	_, err = v.Verify(context.Background(), old, nil)
	require.Error(t, err, "the old key is gone from the set")
}

// A client that gives up on its request (here, a context already ended)
// while its token, of a key ID the verifier does not hold, makes it fetch
// the key set must not abort that fetch: the failure would hold off the
// next one for the whole bound, so that by dropping such a request every
// bound, an attacker would keep the tokens of a rotated key refused.
func TestTokenVerifierRefreshOutlivesTheRequest(t *testing.T) {
	checkLeaks(t)
	as := newAuthServer(t, testAudience, "tools")
	v, err := mcptoolset.NewTokenVerifier(context.Background(), as.URL, testAudience, nil)
	require.NoError(t, err)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	as.store.mu.Lock()
	as.key, as.kid = key, "key-2"
	as.store.mu.Unlock()
	rotated := as.mint(t, nil, "", as.claims("bob", "tools"))

	restore := mcptoolset.SetMinKeyRefresh(0)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = v.Verify(gone, as.mint(t, nil, "", as.claims("mallory", "tools")), nil)
	restore() // the bound again: no fetch until it passes
	_, err = v.Verify(context.Background(), rotated, nil)
	require.NoError(t, err, "the fetch the dropped request began took the new key")
}

// A verifier that panics answers the request 500, with neither the
// token nor the panic's value in the answer, and the endpoint goes on
// serving.
func TestOAuthServerVerifierPanics(t *testing.T) {
	checkLeaks(t)
	const secret = "tok-0123456789abcdef"
	cfg := &mcptoolset.OAuthConfig{
		Verifier: func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			if token == "good" {
				return &auth.TokenInfo{UserID: "u", Expiration: time.Now().Add(time.Hour)}, nil
			}
			panic("cannot verify " + token)
		},
		AuthorizationServers: []string{"https://as.example"},
	}
	srv := mcptoolset.NewServer(scopedTools(), mcptoolset.WithOAuth(cfg))
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	defer hs.Close()
	res, body := post(t, hs.URL, "Bearer "+secret)
	assert.Equal(t, http.StatusInternalServerError, res.StatusCode)
	assert.NotContains(t, body, secret)
	res, _ = post(t, hs.URL, "Bearer good")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	del, err := http.NewRequest(http.MethodDelete, hs.URL, nil)
	require.NoError(t, err)
	del.Header.Set("Authorization", "Bearer good")
	del.Header.Set("Mcp-Session-Id", res.Header.Get("Mcp-Session-Id"))
	dres, err := http.DefaultClient.Do(del)
	require.NoError(t, err)
	dres.Body.Close()
}
