package mcptoolset

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ProtectedResourceMetadataPath is where RFC 9728 puts a protected
// resource's metadata: at this path of its origin, followed by the
// resource's own path ("/.well-known/oauth-protected-resource/mcp" for
// an endpoint at /mcp). Mount [OAuthConfig.MetadataHandler] under it.
const ProtectedResourceMetadataPath = "/.well-known/oauth-protected-resource"

// TokenScopes is the run value that holds the scopes of the verified
// bearer token of the request that began the run. It is the run value
// named "scopes", which the tools of the toolpkg package read for their
// required_scopes, and which any filter may read to show a tool only to
// runs that hold a scope. The default run of a [Server] with [WithOAuth]
// has it; a [RunContextFunc] or [RunOptionsFunc] of the application's
// gives it with [TokenRunOptions].
var TokenScopes = toolset.NewKey[[]string]("scopes")

// TokenUser is the run value "user_id" that [TokenRunOptions] sets: the
// UserID of the verified bearer token (for a [TokenVerifier]'s, a binding
// of the issuer, the subject and the scopes).
var TokenUser = toolset.NewKey[string]("user_id")

// OAuthConfig makes an MCP endpoint an OAuth 2.1 protected resource, as
// the MCP authorization specification has it: every request must carry
// a bearer token that Verifier accepts, and the endpoint publishes its
// protected resource metadata (RFC 9728), to which the WWW-Authenticate
// header of a 401 points (resource_metadata=...), so that a client can
// find the authorization server. Give it to a [Server] with [WithOAuth],
// or wrap any handler with [OAuthConfig.Protect].
type OAuthConfig struct {
	// Verifier verifies a bearer token, such as a [TokenVerifier]'s
	// Verify. A verifier's error that matches auth.ErrInvalidToken
	// answers 401, any other 500; its text is the response's body, so
	// it must hold no secret. A panic answers 500 too.
	Verifier auth.TokenVerifier
	// AuthorizationServers are the issuers clients may get tokens from,
	// published in the metadata; at least one is required.
	AuthorizationServers []string
	// Resource is the endpoint's canonical URL (https://host/mcp), the
	// metadata's "resource", which clients ask tokens for (RFC 8707).
	// When empty, it is made from each request: its scheme (https when
	// it came over TLS), Host header and path. Set it behind a proxy
	// that terminates TLS or rewrites the path.
	Resource string
	// ScopesSupported are the scopes published in the metadata, which a
	// client asks for when the 401 names none.
	ScopesSupported []string
	// ResourceName is the human-readable name published in the metadata.
	ResourceName string
}

// WithOAuth makes [Server.HTTPHandler] require a bearer token that
// c.Verifier accepts (see [OAuthConfig.Protect]), and gives the default
// run of each session or run handle (when neither [WithRunContext] nor
// [WithRunOptions] is given) the token's scopes and user as run values
// ([TokenScopes], [TokenUser]), so that a tool that requires a scope is
// neither listed nor callable for a token without it. A session is bound
// to its token's UserID by the SDK: a request of the session with a
// token of another user (or, for a [TokenVerifier], other scopes) is
// refused with 403, and its client begins a new session. The metadata is
// not served by HTTPHandler, which is mounted at the endpoint's path:
// mount [OAuthConfig.MetadataHandler] at [ProtectedResourceMetadataPath].
// A nil c, or one without a Verifier or authorization server, makes
// NewServer panic.
func WithOAuth(c *OAuthConfig) ServerOption {
	return func(cfg *serverConfig) { cfg.oauth = c }
}

// TokenRunOptions returns the run options that give a run the verified
// bearer token of r: its scopes as [TokenScopes] and its UserID as
// [TokenUser]. It returns none for a request without one. A
// [RunContextFunc] passes them to [toolset.NewRun], a [RunOptionsFunc]
// returns them with its own.
func TokenRunOptions(r *Request) []toolset.RunOption {
	if r == nil || r.Extra == nil || r.Extra.TokenInfo == nil {
		return nil
	}
	ti := r.Extra.TokenInfo
	return []toolset.RunOption{
		toolset.WithValue(TokenScopes, append([]string(nil), ti.Scopes...)),
		toolset.WithValue(TokenUser, ti.UserID),
	}
}

// check panics on a config that cannot protect anything.
func (c *OAuthConfig) check() {
	if c == nil || c.Verifier == nil || len(c.AuthorizationServers) == 0 {
		panic("mcptoolset: WithOAuth needs an OAuthConfig with a Verifier and an authorization server")
	}
}

// Protect returns a handler that serves next only to requests whose
// Authorization header carries a bearer token (at most [MaxTokenBytes])
// that c.Verifier accepts, with the token's auth.TokenInfo in their
// context (where the SDK's handler, and [Request.Extra], find it). Any
// other request is answered 401 with
// WWW-Authenticate: Bearer resource_metadata="..." naming the endpoint's
// metadata URL (see [ProtectedResourceMetadataPath]), and scope="..." the
// scopes supported when there are any.
func (c *OAuthConfig) Protect(next http.Handler) http.Handler {
	c.check()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts := &auth.RequireBearerTokenOptions{ResourceMetadataURL: c.metadataURL(r)}
		if len(r.Header.Get("Authorization")) > MaxTokenBytes+len("Bearer ") {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+opts.ResourceMetadataURL+`"`)
			http.Error(w, (&TokenError{Reason: "over the size limit"}).Error(), http.StatusUnauthorized)
			return
		}
		auth.RequireBearerToken(c.safeVerifier, opts)(next).ServeHTTP(w, r)
	})
}

// errVerifierPanicked is the error of a Verifier that panicked: its text
// is the 500's body, and the panic's value, which may hold the token, is
// left out of it.
var errVerifierPanicked = errors.New("mcptoolset: the token verifier failed")

// safeVerifier calls c.Verifier under recover: a panic, which net/http
// would log with its value and answer by dropping the connection, is a
// 500.
func (c *OAuthConfig) safeVerifier(ctx context.Context, token string, r *http.Request) (info *auth.TokenInfo, err error) {
	defer func() {
		if p := recover(); p != nil {
			info, err = nil, errVerifierPanicked
		}
	}()
	return c.Verifier(ctx, token, r)
}

// resource returns the endpoint's resource URL, for a request to the
// endpoint at path.
func (c *OAuthConfig) resource(r *http.Request, path string) string {
	if c.Resource != "" {
		return c.Resource
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return (&url.URL{Scheme: scheme, Host: r.Host, Path: path}).String()
}

// metadataURL returns the URL of the metadata of the endpoint r was
// sent to.
func (c *OAuthConfig) metadataURL(r *http.Request) string {
	u, err := url.Parse(c.resource(r, r.URL.Path))
	if err != nil {
		return ""
	}
	u.Path = ProtectedResourceMetadataPath + strings.TrimRight(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String()
}

// MetadataHandler returns the handler of the endpoint's protected
// resource metadata (RFC 9728), for GET requests: mount it at
// [ProtectedResourceMetadataPath] and the paths under it
// (mux.Handle(ProtectedResourceMetadataPath+"/", h), with the path
// itself when the endpoint is at the root). Without c.Resource, the
// resource published is made from the request, its path being what
// follows ProtectedResourceMetadataPath.
func (c *OAuthConfig) MetadataHandler() http.Handler {
	c.check()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, ok := strings.CutPrefix(r.URL.Path, ProtectedResourceMetadataPath)
		if !ok || (path != "" && !strings.HasPrefix(path, "/")) {
			http.NotFound(w, r)
			return
		}
		meta := &oauthex.ProtectedResourceMetadata{
			Resource:               c.resource(r, path),
			AuthorizationServers:   c.AuthorizationServers,
			ScopesSupported:        c.ScopesSupported,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           c.ResourceName,
		}
		auth.ProtectedResourceMetadataHandler(meta).ServeHTTP(w, r)
	})
}
