package mcptoolset_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// authServer is a real OpenID provider (zitadel's op) on loopback, with
// an in-memory storage: clients that get tokens by client credentials
// (each its own subject) and a public client that goes through the
// authorization code flow, whose user consents at /login. Its access
// tokens are JWTs for audience, with the granted scopes in "scope".
type authServer struct {
	URL      string
	audience string
	key      *rsa.PrivateKey
	kid      string
	srv      *httptest.Server
	store    *asStorage
}

// newAuthServer starts an authorization server whose tokens are for
// audience; every scope of scopes may be granted.
func newAuthServer(t *testing.T, audience string, scopes ...string) *authServer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	as := &authServer{audience: audience, key: key, kid: "key-1"}
	var h http.Handler
	as.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(as.srv.Close)
	as.URL = as.srv.URL
	as.store = &asStorage{
		as: as, scopes: scopes,
		clients:  map[string]*asClient{},
		requests: map[string]*asRequest{},
		codes:    map[string]string{},
		refresh:  map[string]*asRequest{},
	}
	cfg := &op.Config{CodeMethodS256: true, AuthMethodPost: true, GrantTypeRefreshToken: true, SupportedScopes: append([]string{oidc.ScopeOpenID, oidc.ScopeOfflineAccess}, scopes...)}
	_, _ = rand.Read(cfg.CryptoKey[:])
	provider, err := op.NewProvider(cfg, as.store, op.StaticIssuer(as.URL), op.WithAllowInsecure())
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("/login", as.login)
	mux.Handle("/", provider)
	h = mux
	return as
}

// addService registers a confidential client that gets tokens by client
// credentials, its subject its ID.
func (as *authServer) addService(id, secret string) {
	as.store.mu.Lock()
	defer as.store.mu.Unlock()
	as.store.clients[id] = &asClient{id: id, secret: secret, grants: []oidc.GrantType{oidc.GrantTypeClientCredentials}, method: oidc.AuthMethodBasic}
}

// addPublic registers a public client of the authorization code flow.
func (as *authServer) addPublic(id, redirect string) {
	as.store.mu.Lock()
	defer as.store.mu.Unlock()
	as.store.clients[id] = &asClient{id: id, redirects: []string{redirect}, grants: []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}, method: oidc.AuthMethodNone, login: as.URL + "/login"}
}

// serviceToken returns a token of the service client id.
func (as *authServer) serviceToken(t *testing.T, id, secret string, scopes ...string) string {
	t.Helper()
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: as.URL + "/oauth/token", Scopes: scopes}
	tok, err := cc.Token(context.Background())
	require.NoError(t, err)
	return tok.AccessToken
}

// serviceSource returns a token source of the service client id.
func (as *authServer) serviceSource(id, secret string, scopes ...string) oauth2.TokenSource {
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: as.URL + "/oauth/token", Scopes: scopes}
	return cc.TokenSource(context.Background())
}

// mint signs claims with key (the server's when nil) as the server would
// not: for tokens that are expired, for another audience, and so on.
func (as *authServer) mint(t *testing.T, key *rsa.PrivateKey, kid string, claims any) string {
	t.Helper()
	if key == nil {
		k := as.store.current()
		key, kid = k.key, k.kid
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	require.NoError(t, err)
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	require.NoError(t, err)
	return s
}

// claims are the claims of a token of the server's for its audience,
// expiring in an hour.
func (as *authServer) claims(sub string, scopes ...string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": as.URL, "sub": sub, "aud": []string{as.audience},
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"scope": strings.Join(scopes, " "),
	}
}

// login is the user's consent: it marks the authorization request done
// for user "alice" and sends the browser on to the provider's callback.
func (as *authServer) login(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	as.store.mu.Lock()
	req, ok := as.store.requests[id]
	if ok {
		req.done, req.subject, req.authTime = true, "alice", time.Now()
	}
	as.store.mu.Unlock()
	if !ok {
		http.Error(w, "no such request", http.StatusNotFound)
		return
	}
	http.Redirect(w, r, as.URL+"/authorize/callback?id="+url.QueryEscape(id), http.StatusFound)
}

// consent follows authURL as a browser would, the user consenting, up
// to the redirect to the client, and returns the redirect's query.
func consent(t *testing.T, authURL string) url.Values {
	t.Helper()
	var final *url.URL
	browser := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/callback-of-the-client" {
			final = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res, err := browser.Get(authURL)
	require.NoError(t, err)
	res.Body.Close()
	require.NotNil(t, final, "the provider did not redirect to the client (status %s)", res.Status)
	return final.Query()
}

type asClient struct {
	id, secret string
	redirects  []string
	grants     []oidc.GrantType
	method     oidc.AuthMethod
	login      string
}

func (c *asClient) GetID() string                    { return c.id }
func (c *asClient) RedirectURIs() []string           { return c.redirects }
func (c *asClient) PostLogoutRedirectURIs() []string { return nil }
func (c *asClient) ApplicationType() op.ApplicationType {
	return op.ApplicationTypeNative
}
func (c *asClient) AuthMethod() oidc.AuthMethod { return c.method }
func (c *asClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *asClient) GrantTypes() []oidc.GrantType        { return c.grants }
func (c *asClient) LoginURL(id string) string           { return c.login + "?id=" + url.QueryEscape(id) }
func (c *asClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (c *asClient) IDTokenLifetime() time.Duration      { return time.Hour }
func (c *asClient) DevMode() bool                       { return true }
func (c *asClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *asClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *asClient) IsScopeAllowed(string) bool           { return true }
func (c *asClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *asClient) ClockSkew() time.Duration             { return 0 }

// asRequest is an authorization request, and the token request of a
// grant.
type asRequest struct {
	id, client, subject, redirect, state, nonce string
	scopes, audience                            []string
	challenge                                   *oidc.CodeChallenge
	done                                        bool
	authTime                                    time.Time
}

func (r *asRequest) GetID() string                         { return r.id }
func (r *asRequest) GetACR() string                        { return "" }
func (r *asRequest) GetAMR() []string                      { return []string{"pwd"} }
func (r *asRequest) GetAudience() []string                 { return r.audience }
func (r *asRequest) GetAuthTime() time.Time                { return r.authTime }
func (r *asRequest) GetClientID() string                   { return r.client }
func (r *asRequest) GetCodeChallenge() *oidc.CodeChallenge { return r.challenge }
func (r *asRequest) GetNonce() string                      { return r.nonce }
func (r *asRequest) GetRedirectURI() string                { return r.redirect }
func (r *asRequest) GetResponseType() oidc.ResponseType    { return oidc.ResponseTypeCode }
func (r *asRequest) GetResponseMode() oidc.ResponseMode    { return oidc.ResponseModeQuery }
func (r *asRequest) GetScopes() []string                   { return r.scopes }
func (r *asRequest) GetState() string                      { return r.state }
func (r *asRequest) GetSubject() string                    { return r.subject }
func (r *asRequest) Done() bool                            { return r.done }
func (r *asRequest) SetCurrentScopes(s []string)           { r.scopes = s }

type asStorage struct {
	as     *authServer
	scopes []string

	mu       sync.Mutex
	clients  map[string]*asClient
	requests map[string]*asRequest
	codes    map[string]string
	refresh  map[string]*asRequest
	issued   int
	// shortLived makes the access tokens of the code flow expire in 5
	// seconds, which oauth2 takes as expired at once: each use refreshes.
	shortLived bool
	refreshed  int // refresh tokens redeemed
}

var errNotFound = errors.New("not found")

func (s *asStorage) grantable(scopes []string) []string {
	var out []string
	for _, sc := range scopes {
		if slices.Contains(s.scopes, sc) || sc == oidc.ScopeOpenID || sc == oidc.ScopeOfflineAccess {
			out = append(out, sc)
		}
	}
	return out
}

func (s *asStorage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := &asRequest{
		id: rand.Text(), client: r.ClientID, subject: userID, redirect: r.RedirectURI, state: r.State, nonce: r.Nonce,
		scopes: s.grantable(r.Scopes), audience: []string{s.as.audience},
	}
	if r.CodeChallenge != "" {
		req.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	s.requests[req.id] = req
	return req, nil
}

func (s *asStorage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.requests[id]; ok {
		return r, nil
	}
	return nil, errNotFound
}

func (s *asStorage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.requests[s.codes[code]]; ok {
		return r, nil
	}
	return nil, errNotFound
}

func (s *asStorage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *asStorage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for c, rid := range s.codes {
		if rid == id {
			delete(s.codes, c)
		}
	}
	return nil
}

func (s *asStorage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issued++
	return rand.Text(), time.Now().Add(time.Hour), nil
}

func (s *asStorage) CreateAccessAndRefreshTokens(_ context.Context, r op.TokenRequest, _ string) (string, string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issued++
	rt := rand.Text()
	s.refresh[rt] = &asRequest{subject: r.GetSubject(), scopes: r.GetScopes(), audience: r.GetAudience(), authTime: time.Now()}
	if ar, ok := r.(*asRequest); ok {
		s.refresh[rt].client = ar.client
	}
	exp := time.Now().Add(time.Hour)
	if s.shortLived {
		exp = time.Now().Add(5 * time.Second)
	}
	return rand.Text(), rt, exp, nil
}

func (s *asStorage) TokenRequestByRefreshToken(_ context.Context, rt string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.refresh[rt]; ok {
		s.refreshed++
		return r, nil
	}
	return nil, op.ErrInvalidRefreshToken
}

func (s *asStorage) TerminateSession(context.Context, string, string) error { return nil }
func (s *asStorage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return nil
}
func (s *asStorage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

// asKey is the server's key when it was asked for.
type asKey struct {
	key *rsa.PrivateKey
	kid string
}

func (k asKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k asKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k asKey) Key() any                                    { return k.key }
func (k asKey) ID() string                                  { return k.kid }
func (k asKey) Use() string                                 { return "sig" }

type asPublicKey struct{ asKey }

func (k asPublicKey) Key() any { return &k.key.PublicKey }

// current returns the server's key.
func (s *asStorage) current() asKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return asKey{s.as.key, s.as.kid}
}

func (s *asStorage) SigningKey(context.Context) (op.SigningKey, error) { return s.current(), nil }
func (s *asStorage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}
func (s *asStorage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{asPublicKey{s.current()}}, nil
}

func (s *asStorage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok {
		return c, nil
	}
	return nil, errNotFound
}

func (s *asStorage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok && c.secret != "" && c.secret == secret {
		return nil
	}
	return errNotFound
}

func (s *asStorage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(ctx, id, secret); err != nil {
		return nil, err
	}
	return s.GetClientByClientID(ctx, id)
}

func (s *asStorage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	return &asRequest{client: id, subject: "svc-" + id, scopes: s.grantable(scopes), audience: []string{s.as.audience}}, nil
}

func (s *asStorage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (s *asStorage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return nil
}
func (s *asStorage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return nil
}

// GetPrivateClaimsFromScopes puts the granted scopes in the access token,
// as RFC 9068 has it.
func (s *asStorage) GetPrivateClaimsFromScopes(_ context.Context, _, _ string, scopes []string) (map[string]any, error) {
	return map[string]any{"scope": strings.Join(scopes, " ")}, nil
}

func (s *asStorage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotFound
}
func (s *asStorage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}
func (s *asStorage) Health(context.Context) error { return nil }
