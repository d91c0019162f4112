package platform

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
)

// Scope is what a token may do on the platform. Every token may read; a
// scope beyond that opens one kind of change, and ScopeAdmin opens
// everything. Each route of the API and each action of the page needs
// one scope (see the package documentation's route table).
type Scope string

// The scopes.
const (
	// ScopeRead opens every GET of the API and the page. Every token
	// holds it, whatever its other scopes.
	ScopeRead Scope = "read"
	// ScopePublish opens creating, uploading, configuring and removing
	// toolsets and skills, and the page's upload form.
	ScopePublish Scope = "publish"
	// ScopeAgents opens creating, checking, updating, deleting and
	// deploying agents.
	ScopeAgents Scope = "agents"
	// ScopeAdmin opens everything: the other scopes, and managing the
	// tokens. The token the server is started with (Options.Token) is an
	// admin token.
	ScopeAdmin Scope = "admin"
)

// AllScopes lists the scopes, weakest first.
var AllScopes = []Scope{ScopeRead, ScopePublish, ScopeAgents, ScopeAdmin}

// Valid reports whether s is one of [AllScopes].
func (s Scope) Valid() bool { return s.bit() != 0 }

func (s Scope) bit() scopeSet {
	switch s {
	case ScopeRead:
		return 1 << 0
	case ScopePublish:
		return 1 << 1
	case ScopeAgents:
		return 1 << 2
	case ScopeAdmin:
		return 1 << 3
	}
	return 0
}

// ParseScopes reads a comma-separated list of scopes ("read,publish"),
// white space around each allowed. An empty list, an unknown scope or one
// given twice is an error. The scopes come back in the order of
// [AllScopes].
func ParseScopes(list string) ([]Scope, error) {
	if strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("no scope given: name one or more of %s", scopeNames())
	}
	parts := strings.Split(list, ",")
	if len(parts) > len(AllScopes) {
		return nil, fmt.Errorf("%d scopes given; there are only %d: %s", len(parts), len(AllScopes), scopeNames())
	}
	scopes := make([]Scope, len(parts))
	for i, p := range parts {
		scopes[i] = Scope(strings.TrimSpace(p))
	}
	return checkScopes(scopes)
}

// checkScopes checks a token's scopes and returns them in the order of
// AllScopes.
func checkScopes(scopes []Scope) ([]Scope, error) {
	if len(scopes) == 0 {
		return nil, fmt.Errorf("no scope given: name one or more of %s", scopeNames())
	}
	if len(scopes) > len(AllScopes) {
		return nil, fmt.Errorf("%d scopes given; there are only %d: %s", len(scopes), len(AllScopes), scopeNames())
	}
	var set scopeSet
	for _, sc := range scopes {
		b := sc.bit()
		if b == 0 {
			return nil, fmt.Errorf("unknown scope %s: use %s", quotePath(string(sc)), scopeNames())
		}
		if set&b != 0 {
			return nil, fmt.Errorf("the scope %s is given twice", sc)
		}
		set |= b
	}
	return set.list(), nil
}

func scopeNames() string {
	names := make([]string, len(AllScopes))
	for i, s := range AllScopes {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// scopeSet is a set of scopes, one bit each.
type scopeSet uint8

func setOf(scopes []Scope) scopeSet {
	var set scopeSet
	for _, s := range scopes {
		set |= s.bit()
	}
	return set
}

// allows reports whether a token holding the set may do what needs
// scope: admin may do everything, every token may read. No set allows
// a scope that is none of AllScopes.
func (set scopeSet) allows(need Scope) bool {
	switch {
	case !need.Valid():
		return false
	case set&ScopeAdmin.bit() != 0:
		return true
	case need == ScopeRead:
		return set != 0
	}
	return set&need.bit() != 0
}

func (set scopeSet) list() []Scope {
	out := []Scope{}
	for _, s := range AllScopes {
		if set&s.bit() != 0 {
			out = append(out, s)
		}
	}
	return out
}

// principal is who a request comes from: the token it carries (or a
// session's), by the SHA-256 of its secret, and what it may do.
type principal struct {
	// name names a stored token; "" is the server's own token
	// (Options.Token), or nobody with InsecureNoAuth.
	name   string
	sum    [sha256.Size]byte
	scopes scopeSet
}

// everyone is the principal of every request with InsecureNoAuth.
var everyone = principal{scopes: ScopeAdmin.bit()}

type principalKey struct{}

func withPrincipal(r *http.Request, p principal) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
}

// principalOf is who r comes from, once authenticated; nobody (no scope)
// before.
func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// route is one route of the server and the scope it needs.
type route struct {
	pattern string
	// scope is what the route needs; "" only on the page's routes that
	// need no login (the login form, the stylesheet).
	scope Scope
	// page is a route of the status page, not of the API.
	page bool
}

// routeTable records the routes of a server as they are registered, so
// that the scope each needs is declared in the one call that registers
// it (see routeMux).
type routeTable struct {
	routes []route
	scopes map[string]Scope // the API's patterns
}

// routeMux is the API's or the page's mux, whose routes are registered
// only with the scope they need: it has no other way to add one.
type routeMux struct {
	s    *Server
	mux  *http.ServeMux
	page bool
}

func (s *Server) newRouteMux(page bool) *routeMux {
	return &routeMux{s: s, mux: http.NewServeMux(), page: page}
}

// handle registers a route and the scope it needs. A route of the API
// serves only requests whose token holds scope (see authorize); one of
// the page, only sessions whose token holds it (see requireSession), or
// with scope "" anyone (the login form).
func (m *routeMux) handle(pattern string, scope Scope, h http.HandlerFunc) {
	t := &m.s.table
	t.routes = append(t.routes, route{pattern: pattern, scope: scope, page: m.page})
	switch {
	case m.page && scope == "":
		m.mux.HandleFunc(pattern, h)
	case !scope.Valid():
		panic(fmt.Sprintf("platform: the route %q declares no valid scope", pattern))
	case m.page:
		m.mux.Handle(pattern, m.s.requireSession(scope, h))
	default:
		if t.scopes == nil {
			t.scopes = map[string]Scope{}
		}
		t.scopes[pattern] = scope
		m.mux.HandleFunc(pattern, h)
	}
}

// Routes lists the patterns of the server's routes, the API's and the
// page's, each with the scope it needs ("" for the page's routes that
// need no login), in the order they were registered.
func (s *Server) Routes() []RouteScope {
	out := make([]RouteScope, len(s.table.routes))
	for i, r := range s.table.routes {
		out[i] = RouteScope{Pattern: r.pattern, Scope: r.scope}
	}
	return out
}

// RouteScope is a route's pattern, as http.ServeMux takes it ("GET
// /api/v1/platform/toolsets/{name}"), and the scope it needs.
type RouteScope struct {
	Pattern string
	Scope   Scope
}

// authenticate serves next the requests that carry the server's token or
// a stored one, each with its principal; others are answered 401.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.opts.InsecureNoAuth {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, withPrincipal(r, everyone))
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.lookupToken(bearer(r))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolset"`)
			WriteError(w, http.StatusUnauthorized, "Unauthorized", "a bearer token is required: send the header Authorization: Bearer <token>")
			return
		}
		next.ServeHTTP(w, withPrincipal(r, p))
	})
}

// bearer returns the token of r's "Authorization: Bearer <token>"
// header, or "".
func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// lookupToken returns the principal of a token: the server's own, or a
// stored one. Every candidate is compared, in constant time, by the
// SHA-256 of the secret: how long the answer takes says nothing of which
// bytes matched, nor which token.
func (s *Server) lookupToken(tok string) (principal, bool) {
	if tok == "" || len(tok) > maxTokenFile {
		return principal{}, false
	}
	sum := sha256.Sum256([]byte(tok))
	p, ok := s.tokens.match(sum)
	if subtleEqual(sum, s.tokenSum) {
		p, ok = principal{sum: sum, scopes: ScopeAdmin.bit()}, true
	}
	return p, ok
}

// authorize serves next, the API's mux, the requests whose principal
// holds the scope their route declared; others are answered 403
// Forbidden. A request no route matches needs only to be authenticated:
// the mux answers it 404 or 405. A route the mux has but whose scope was
// not declared (registered other than by handleAPI) needs admin.
func (s *Server) authorize(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need := ScopeRead
		if _, pattern := mux.Handler(r); pattern != "" {
			var ok bool
			if need, ok = s.table.scopes[pattern]; !ok {
				need = ScopeAdmin
			}
		}
		if !principalOf(r.Context()).scopes.allows(need) {
			forbidden(w, need)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// forbidden answers 403 Forbidden: the token lacks the scope.
func forbidden(w http.ResponseWriter, need Scope) {
	WriteError(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("this token lacks the %s scope", need))
}
