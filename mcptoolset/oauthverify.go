package mcptoolset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Bounds of what a [TokenVerifier] reads from its issuer and from clients.
const (
	// MaxTokenBytes bounds a bearer token; a longer one is refused
	// unread.
	MaxTokenBytes = 16 << 10
	// MaxJWKSBytes bounds the issuer's JSON Web Key Set document.
	MaxJWKSBytes = 1 << 20
	// MaxJWKSKeys bounds the keys of the issuer's key set that are kept.
	MaxJWKSKeys = 64
	// MaxTokenScopes bounds the scopes read from a token.
	MaxTokenScopes = 256
)

const (
	// defaultFetchTimeout bounds each request to the issuer.
	defaultFetchTimeout = 10 * time.Second
	// defaultLeeway is the clock skew allowed on exp, nbf and iat.
	defaultLeeway = time.Minute
)

// minKeyRefresh is the least time between two fetches of the key set for
// tokens signed with a key it does not hold, so that tokens with made-up
// key IDs cannot make the verifier hammer the issuer; a var for the
// tests.
var minKeyRefresh = 30 * time.Second

// VerifierOptions configures a [TokenVerifier]; the zero value is the
// default of every field.
type VerifierOptions struct {
	// HTTPClient fetches the issuer's metadata and key set. The default
	// is a client with a 10-second timeout that follows no redirect.
	HTTPClient *http.Client
	// Leeway is the clock skew allowed when checking exp, nbf and iat;
	// the default is one minute.
	Leeway time.Duration
	// Algorithms are the signature algorithms accepted, of RS256 to
	// RS512, PS256 to PS512, ES256 to ES512 and EdDSA; the default is
	// RS256, ES256 and EdDSA. "none" and the HMAC algorithms are never
	// accepted.
	Algorithms []string
}

// TokenVerifier verifies the JWT access tokens (RFC 9068) of one issuer
// for one audience: the signature against the issuer's published keys,
// and the claims iss, aud, exp (required), nbf and iat. Make one with
// [NewTokenVerifier]; its Verify method is an auth.TokenVerifier for the
// SDK's auth.RequireBearerToken and for [OAuthConfig]. A TokenVerifier is
// safe for concurrent use.
type TokenVerifier struct {
	issuer   string
	audience string
	jwksURI  string
	client   *http.Client
	leeway   time.Duration
	algs     []jose.SignatureAlgorithm

	mu        sync.Mutex
	keys      jose.JSONWebKeySet
	fetched   time.Time
	refreshMu sync.Mutex // one fetch of the key set at a time
}

// TokenError is why a bearer token was refused. Its text names the
// reason only, never the token or its claims, so it may be sent to the
// client and logged. It matches auth.ErrInvalidToken with errors.Is, so
// the SDK's auth.RequireBearerToken answers 401.
type TokenError struct {
	// Reason says what is wrong with the token, such as "expired" or
	// "wrong audience".
	Reason string
	// Err is the underlying error, if any; it is not part of the text.
	Err error
}

// Error returns "invalid token: " and the reason.
func (e *TokenError) Error() string { return "invalid token: " + e.Reason }

// Unwrap returns auth.ErrInvalidToken and the underlying error.
func (e *TokenError) Unwrap() []error {
	if e.Err == nil {
		return []error{auth.ErrInvalidToken}
	}
	return []error{auth.ErrInvalidToken, e.Err}
}

func tokenError(reason string, err error) error { return &TokenError{Reason: reason, Err: err} }

// NewTokenVerifier discovers the issuer's authorization server metadata
// (RFC 8414 /.well-known/oauth-authorization-server, then OpenID Connect
// discovery, each at most 1 MiB and checked to name the same issuer),
// fetches the JSON Web Key Set its jwks_uri names (at most
// [MaxJWKSBytes], [MaxJWKSKeys] keys kept, public signing keys only) and
// returns a verifier of the issuer's tokens for audience. The issuer and
// the key set must be https URLs, or http on a loopback address. The key
// set is fetched again, at most every 30 seconds, when a token is signed
// with a key it does not hold, so the issuer may rotate its keys.
func NewTokenVerifier(ctx context.Context, issuer, audience string, opts *VerifierOptions) (*TokenVerifier, error) {
	if issuer == "" {
		return nil, errors.New("mcptoolset: NewTokenVerifier: the issuer is empty")
	}
	if audience == "" {
		return nil, errors.New("mcptoolset: NewTokenVerifier: the audience is empty")
	}
	var o VerifierOptions
	if opts != nil {
		o = *opts
	}
	v := &TokenVerifier{issuer: issuer, audience: audience, client: o.HTTPClient, leeway: o.Leeway}
	if v.client == nil {
		v.client = &http.Client{
			Timeout:       defaultFetchTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if v.leeway <= 0 {
		v.leeway = defaultLeeway
	}
	fctx, cancel := context.WithTimeout(ctx, defaultFetchTimeout)
	defer cancel()
	meta, err := auth.GetAuthServerMetadata(fctx, issuer, v.client)
	if err != nil {
		return nil, fmt.Errorf("mcptoolset: discovering issuer %q: %w", issuer, err)
	}
	if meta == nil {
		return nil, fmt.Errorf("mcptoolset: issuer %q publishes no authorization server metadata", issuer)
	}
	if meta.JWKSURI == "" {
		return nil, fmt.Errorf("mcptoolset: issuer %q publishes no jwks_uri", issuer)
	}
	if err := httpsOrLoopback(meta.JWKSURI); err != nil {
		return nil, fmt.Errorf("mcptoolset: issuer %q: jwks_uri: %w", issuer, err)
	}
	v.jwksURI = meta.JWKSURI
	algs := o.Algorithms
	if len(algs) == 0 {
		algs = []string{string(jose.RS256), string(jose.ES256), string(jose.EdDSA)}
	}
	for _, a := range algs {
		switch alg := jose.SignatureAlgorithm(a); alg {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA:
			v.algs = append(v.algs, alg)
		default:
			return nil, fmt.Errorf("mcptoolset: NewTokenVerifier: signature algorithm %q is not accepted", a)
		}
	}
	if err := v.refresh(fctx); err != nil {
		return nil, err
	}
	return v, nil
}

// Issuer returns the issuer whose tokens v verifies.
func (v *TokenVerifier) Issuer() string { return v.issuer }

// Audience returns the audience tokens must name.
func (v *TokenVerifier) Audience() string { return v.audience }

// refresh fetches the key set.
func (v *TokenVerifier) refresh(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.jwksURI, nil)
	if err != nil {
		return fmt.Errorf("mcptoolset: fetching the key set: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := v.client.Do(req)
	if err != nil {
		return fmt.Errorf("mcptoolset: fetching the key set: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("mcptoolset: fetching the key set: %s", res.Status)
	}
	if mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type")); err != nil || (mt != "application/json" && mt != "application/jwk-set+json") {
		return fmt.Errorf("mcptoolset: fetching the key set: content type %q is not JSON", res.Header.Get("Content-Type"))
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, MaxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("mcptoolset: reading the key set: %w", err)
	}
	if len(data) > MaxJWKSBytes {
		return fmt.Errorf("mcptoolset: the key set is over %d bytes", MaxJWKSBytes)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return fmt.Errorf("mcptoolset: decoding the key set: %w", err)
	}
	var keys jose.JSONWebKeySet
	for _, k := range set.Keys {
		if !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if len(keys.Keys) == MaxJWKSKeys {
			break
		}
		keys.Keys = append(keys.Keys, k)
	}
	if len(keys.Keys) == 0 {
		return errors.New("mcptoolset: the issuer's key set holds no public signing key")
	}
	v.mu.Lock()
	v.keys, v.fetched = keys, time.Now()
	v.mu.Unlock()
	return nil
}

// keySet returns the keys that may have signed a token with key ID kid,
// fetching the set again when it holds none and was not fetched lately.
func (v *TokenVerifier) keySet(ctx context.Context, kid string) jose.JSONWebKeySet {
	v.mu.Lock()
	keys, fetched := v.keys, v.fetched
	v.mu.Unlock()
	if has(keys, kid) || time.Since(fetched) < minKeyRefresh {
		return keys
	}
	v.refreshMu.Lock()
	defer v.refreshMu.Unlock()
	v.mu.Lock()
	keys, fetched = v.keys, v.fetched
	v.mu.Unlock()
	if has(keys, kid) || time.Since(fetched) < minKeyRefresh {
		return keys
	}
	// The fetch is not cut short when the request that began it is: a
	// failure holds off the next fetch for minKeyRefresh, which a client
	// dropping its requests could otherwise make last.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultFetchTimeout)
	defer cancel()
	if err := v.refresh(fctx); err != nil {
		// Try again no sooner than the bound, with the keys held.
		v.mu.Lock()
		v.fetched = time.Now()
		v.mu.Unlock()
		return keys
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.keys
}

func has(keys jose.JSONWebKeySet, kid string) bool {
	if kid == "" {
		return len(keys.Keys) > 0
	}
	return len(keys.Key(kid)) > 0
}

// accessClaims are the claims of an access token that Verify reads.
type accessClaims struct {
	jwt.Claims
	Scope    string   `json:"scope"`
	Scp      []string `json:"scp"`
	ClientID string   `json:"client_id"`
}

// Verify verifies token and returns what it says: its scopes, its
// expiry, and as UserID a binding of its issuer, subject and scopes (so
// that the SDK binds a session, and the server a run handle, to one
// user with one set of scopes). Extra holds "sub", "iss" and, if the
// token has it, "client_id". A token that fails is refused with a
// [*TokenError]. req is not used; it is there so that Verify is an
// auth.TokenVerifier.
func (v *TokenVerifier) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if v == nil || v.jwksURI == "" {
		return nil, errors.New("mcptoolset: a TokenVerifier must be made with NewTokenVerifier")
	}
	if len(token) > MaxTokenBytes {
		return nil, tokenError(fmt.Sprintf("over %d bytes", MaxTokenBytes), nil)
	}
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return nil, tokenError("not a signed JWT with an accepted algorithm", err)
	}
	if len(tok.Headers) != 1 {
		return nil, tokenError("not one signature", nil)
	}
	if typ, _ := tok.Headers[0].ExtraHeaders[jose.HeaderType].(string); typ != "" && !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") && !strings.EqualFold(typ, "JWT") {
		return nil, tokenError("not an access token", nil)
	}
	keys := v.keySet(ctx, tok.Headers[0].KeyID)
	var c accessClaims
	if err := tok.Claims(keys, &c); err != nil {
		return nil, tokenError("bad signature", err)
	}
	if c.Expiry == nil {
		return nil, tokenError("no expiry", nil)
	}
	err = c.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, AnyAudience: jwt.Audience{v.audience}, Time: time.Now()}, v.leeway)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, tokenError("expired", err)
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, tokenError("wrong issuer", err)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, tokenError("wrong audience", err)
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, tokenError("not valid yet", err)
	default:
		return nil, tokenError("invalid claims", err)
	}
	if c.Subject == "" {
		return nil, tokenError("no subject", nil)
	}
	scopes := strings.Fields(c.Scope)
	if len(scopes) == 0 {
		scopes = c.Scp
	}
	if len(scopes) > MaxTokenScopes {
		return nil, tokenError(fmt.Sprintf("over %d scopes", MaxTokenScopes), nil)
	}
	scopes = slices.Clone(scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	extra := map[string]any{"sub": c.Subject, "iss": c.Issuer}
	if c.ClientID != "" {
		extra["client_id"] = c.ClientID
	}
	return &auth.TokenInfo{
		Scopes:     scopes,
		Expiration: c.Expiry.Time(),
		UserID:     userBinding(c.Issuer, c.Subject, scopes),
		Extra:      extra,
	}, nil
}

// userBinding returns the UserID of a verified token: a digest of its
// issuer, subject and sorted scopes.
func userBinding(iss, sub string, scopes []string) string {
	h := sha256.New()
	h.Write([]byte("mcptoolset oauth user\x00" + iss + "\x00" + sub + "\x00"))
	h.Write([]byte(strings.Join(scopes, " ")))
	return "oauth-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// httpsOrLoopback checks that raw is an https URL, or an http one whose
// host is a loopback address or localhost.
func httpsOrLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip, err := netip.ParseAddr(host); (err == nil && ip.IsLoopback()) || strings.EqualFold(host, "localhost") {
			return nil
		}
	}
	return fmt.Errorf("%s is neither https nor http on a loopback address", origin(u))
}
