package platform

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/gotoolset/toolset/toolpkg"
)

// Defaults of the server's options.
const (
	// DefaultMaxConcurrentUploads is the default of
	// Options.MaxConcurrentUploads.
	DefaultMaxConcurrentUploads = 4
	// DefaultMaxAgentBytes is the default of Options.MaxAgentBytes.
	DefaultMaxAgentBytes = 1 << 20
	// DefaultRefreshInterval is the default of Options.RefreshInterval.
	DefaultRefreshInterval = 2 * time.Second
	// DefaultBodyIdleTimeout is the default of Options.BodyIdleTimeout.
	DefaultBodyIdleTimeout = 30 * time.Second
	// DefaultSessionLifetime is the default of Options.SessionLifetime.
	DefaultSessionLifetime = 12 * time.Hour
	// MaxJSONBody bounds the JSON body of a request (POST and PATCH).
	MaxJSONBody = 64 << 10
)

// Options configure a [Server].
type Options struct {
	// Token is the server's own bearer token, an admin token (see
	// [ScopeAdmin]): it opens every route, and creates the tokens the
	// platform issues (POST /api/v1/platform/tokens). A person may paste
	// it, or an issued one, into the page's login form. It is required
	// (at least MinTokenLength printable ASCII bytes, see [LoadToken])
	// unless InsecureNoAuth is set.
	Token string
	// InsecureNoAuth serves everything without authentication: for local
	// use only. The server logs a warning and the page shows a banner,
	// and it answers only requests whose Host is an IP address or
	// localhost: a web page cannot reach it by DNS rebinding.
	InsecureNoAuth bool
	// MaxPackageBytes bounds an uploaded package, enforced while the body
	// is read (default: toolpkg.DefaultMaxZipBytes, the store's default
	// zip limit; the store refuses what is above its own limit anyway).
	MaxPackageBytes int64
	// MaxConcurrentUploads bounds the uploads whose bodies are read and
	// handed to the store at the same time (default
	// DefaultMaxConcurrentUploads); further uploads wait for a slot as
	// long as their request lasts. Discovery is bounded by the store.
	MaxConcurrentUploads int
	// MaxAgentBytes bounds an agent file (default DefaultMaxAgentBytes).
	MaxAgentBytes int64
	// RefreshInterval is how often a page showing a pending toolset
	// reloads itself (default DefaultRefreshInterval).
	RefreshInterval time.Duration
	// BodyIdleTimeout bounds how long reading a request's body may wait
	// for the next bytes (default DefaultBodyIdleTimeout): a client that
	// stalls is answered 408 RequestTimeout and its upload slot freed,
	// whatever the http.Server's own timeouts.
	BodyIdleTimeout time.Duration
	// SessionLifetime is how long a login to the page lasts (default
	// DefaultSessionLifetime). Sessions end with the process too.
	SessionLifetime time.Duration
	// Logger receives the server's logs (default slog.Default()). The
	// token never reaches it.
	Logger *slog.Logger
	// Distributor, when set, hands the toolsets to runtimes that run
	// their tools elsewhere, and a toolset is ready only once one of them
	// confirmed every tool of its latest version (see the package
	// documentation, Runtimes). Nil: the store's status is the toolset's.
	Distributor Distributor
}

// Server serves the platform's JSON API under /api/v1/platform/ and its
// status page at /. It is an [http.Handler]; see the package
// documentation for the routes.
type Server struct {
	store *toolpkg.Store
	opts  Options
	log   *slog.Logger
	// tokenSum is the SHA-256 of the token (zero with InsecureNoAuth).
	tokenSum [sha256.Size]byte
	// sessionKey signs the page's session cookies; random per process.
	sessionKey [32]byte
	// sessions are the page's live sessions by id.
	sessMu   sync.Mutex
	sessions map[string]session
	// loginFails counts the wrong logins since loginLogged, when the
	// last was logged (see loginFailed); guarded by sessMu.
	loginFails  int
	loginLogged time.Time

	tmpDir string
	// storeDirs are the store's folder as given and as resolved, which
	// messages shown to clients name "<store>" instead (see scrub).
	storeDirs []string
	agents    *agentStore
	// tokens are the stored tokens, under <store>/.platform/tokens.
	tokens *tokenStore
	// table is every route with the scope it needs.
	table routeTable
	// skills are the uploaded skills (see skills.go).
	skills *skillStore
	// dist distributes the toolsets; nil without Options.Distributor.
	dist *distribution
	// uploads holds one token per upload slot.
	uploads chan struct{}

	// ctx is canceled by Close; uploads hand it to the store.
	ctx    context.Context
	cancel context.CancelFunc

	handler http.Handler
	mux     *http.ServeMux

	closeOnce sync.Once
}

// New returns a server for the store. The store stays the caller's: Close
// the server first, then the store. New cleans the server's temporary
// folder (<store>/.platform/tmp) and loads the agents stored in
// <store>/.platform/agents and the tokens in <store>/.platform/tokens.
func New(store *toolpkg.Store, opts *Options) (*Server, error) {
	if store == nil {
		return nil, errors.New("platform: New needs a store")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.InsecureNoAuth {
		if o.Token != "" {
			return nil, errors.New("platform: a token and InsecureNoAuth together: choose one")
		}
	} else {
		if o.Token == "" {
			return nil, errors.New("platform: a bearer token is required (Options.Token), unless InsecureNoAuth is set for local use")
		}
		if err := checkToken(o.Token); err != nil {
			return nil, err
		}
	}
	if o.MaxPackageBytes <= 0 {
		o.MaxPackageBytes = toolpkg.DefaultMaxZipBytes
	}
	if o.MaxConcurrentUploads <= 0 {
		o.MaxConcurrentUploads = DefaultMaxConcurrentUploads
	}
	if o.MaxAgentBytes <= 0 {
		o.MaxAgentBytes = DefaultMaxAgentBytes
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.BodyIdleTimeout <= 0 {
		o.BodyIdleTimeout = DefaultBodyIdleTimeout
	}
	if o.SessionLifetime <= 0 {
		o.SessionLifetime = DefaultSessionLifetime
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{store: store, opts: o, log: o.Logger, uploads: make(chan struct{}, o.MaxConcurrentUploads), sessions: map[string]session{}}
	if !o.InsecureNoAuth {
		s.tokenSum = sha256.Sum256([]byte(o.Token))
	}
	if _, err := rand.Read(s.sessionKey[:]); err != nil {
		return nil, fmt.Errorf("platform: session key: %w", err)
	}
	s.storeDirs = []string{store.Dir()}
	if real, err := filepath.EvalSymlinks(store.Dir()); err == nil && real != store.Dir() {
		s.storeDirs = append(s.storeDirs, real)
	}
	base := filepath.Join(store.Dir(), ".platform")
	s.tmpDir = filepath.Join(base, "tmp")
	if err := os.RemoveAll(s.tmpDir); err != nil {
		return nil, fmt.Errorf("platform: cleaning %s: %w", s.tmpDir, err)
	}
	if err := os.MkdirAll(s.tmpDir, 0o700); err != nil {
		return nil, fmt.Errorf("platform: %w", err)
	}
	agents, err := openAgents(filepath.Join(base, "agents"), o.MaxAgentBytes, s.log)
	if err != nil {
		return nil, err
	}
	s.agents = agents
	if s.tokens, err = openTokens(filepath.Join(base, "tokens"), s.log); err != nil {
		return nil, err
	}
	skills, err := openSkills(base, store, o.MaxPackageBytes, s.log)
	if err != nil {
		return nil, err
	}
	s.skills = skills
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if o.Distributor != nil {
		s.dist = newDistribution(s, o.Distributor)
		s.dist.start()
	}
	if o.InsecureNoAuth {
		s.log.Warn("platform: serving WITHOUT AUTHENTICATION (insecure-no-auth): anyone who reaches this address can upload packages and run their discovery; use it only locally")
	}
	s.routes()
	return s, nil
}

// Close stops accepting uploads and ends those waiting for a slot. It
// does not close the store; discovery already started finishes (or is
// picked up again) there. With a Distributor, it ends what it publishes
// and its watch of the reports, and waits for them. Closing twice is
// safe.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.cancel()
		err = s.skills.close()
	})
	s.agents.stopBackground()
	if s.dist != nil {
		s.dist.wait()
	}
	return err
}

// info is the store's record of a toolset, its status as the runtimes'
// reports make it (see distribution.gate).
func (s *Server) info(name string) (toolpkg.Info, error) {
	info, err := s.store.Info(name)
	if err != nil || s.dist == nil {
		return info, err
	}
	return s.dist.gate(info), nil
}

// list is the store's List, or with removed its ListAll, each status as
// the runtimes' reports make it.
func (s *Server) list(removed bool) []toolpkg.Info {
	all := s.store.List()
	if removed {
		all = s.store.ListAll()
	}
	if s.dist != nil {
		for i, info := range all {
			all[i] = s.dist.gate(info)
		}
	}
	return all
}

// distribute has the distributor, if any, catch up with the store's
// toolset: at once, or with discoveryEnds once its discovery ends.
func (s *Server) distribute(name string, discoveryEnds bool) {
	switch {
	case s.dist == nil:
	case discoveryEnds:
		s.dist.whenDiscovered(name)
	default:
		s.dist.enqueue(name)
	}
}

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

const apiPrefix = "/api/v1/platform/"

// routes registers every route, each with the scope it needs (see
// routeMux.handle). The table in the package documentation says the
// same.
func (s *Server) routes() {
	api := s.newRouteMux(false)
	api.handle("POST /api/v1/platform/toolsets", ScopePublish, s.createToolset)
	api.handle("GET /api/v1/platform/toolsets", ScopeRead, s.listToolsets)
	api.handle("GET /api/v1/platform/toolsets/buildTarget", ScopeRead, s.buildTarget)
	api.handle("GET /api/v1/platform/toolsets/{name}", ScopeRead, s.getToolset)
	api.handle("DELETE /api/v1/platform/toolsets/{name}", ScopePublish, s.deleteToolset)
	api.handle("PUT /api/v1/platform/toolsets/{name}/package", ScopePublish, s.putPackage)
	api.handle("GET /api/v1/platform/toolsets/{name}/package", ScopeRead, s.getPackage)
	api.handle("PATCH /api/v1/platform/toolsets/{name}/config", ScopePublish, s.patchConfig)
	api.handle("GET /api/v1/platform/toolsets/{name}/config", ScopeRead, s.getConfig)
	api.handle("GET /api/v1/platform/agents", ScopeRead, s.listAgents)
	api.handle("PUT /api/v1/platform/agents/{name}", ScopeAgents, s.putAgent)
	api.handle("POST /api/v1/platform/agents/{name}/check", ScopeAgents, s.postAgentCheck)
	api.handle("GET /api/v1/platform/agents/{name}", ScopeRead, s.getAgent)
	api.handle("DELETE /api/v1/platform/agents/{name}", ScopeAgents, s.deleteAgent)
	api.handle("POST /api/v1/platform/agents/{name}/deploy", ScopeAgents, s.deployAgent)
	api.handle("GET /api/v1/platform/agents/{name}/effective", ScopeRead, s.getEffective)
	api.handle("POST /api/v1/platform/tokens", ScopeAdmin, s.createToken)
	api.handle("GET /api/v1/platform/tokens", ScopeAdmin, s.listTokens)
	api.handle("DELETE /api/v1/platform/tokens/{name}", ScopeAdmin, s.revokeToken)
	s.skillRoutes(api)

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusForbidden, "CrossOriginRequest", "a cross-origin request was refused")
	}))

	// Who the request comes from, then whether its token holds the
	// scope of the route.
	apiH := s.authenticate(s.authorize(api.mux, jsonFallback(api.mux)))
	// A browser's cross-site request that needs no preflight (a POST of
	// text/plain) is refused: without a token it would reach the API.
	apiH = cop.Handler(apiH)

	page := s.newRouteMux(true)
	page.handle("GET /{$}", ScopeRead, s.pageList)
	page.handle("GET /toolsets/{name}", ScopeRead, s.pageToolset)
	page.handle("POST /upload", ScopePublish, s.pageUpload)
	page.handle("GET /agents", ScopeRead, s.pageAgents)
	page.handle("GET /agents/{name}", ScopeRead, s.pageAgent)
	page.handle("POST /agents/{name}/deploy", ScopeAgents, s.pageDeploy)
	page.handle("GET /agents/{name}/attach", ScopeAgents, s.pageAttachForm)
	page.handle("POST /agents/{name}/attach", ScopeAgents, s.pageAttach)
	page.handle("GET /skills", ScopeRead, s.pageSkills)
	page.handle("GET /skills/{name}", ScopeRead, s.pageSkill)
	page.handle("GET /style.css", "", s.pageStyle)
	page.handle("GET /login", "", s.pageLogin)
	page.handle("POST /login", "", s.pageLoginPost)
	page.handle("POST /logout", "", s.pageLogout)
	pageH := cop.Handler(jsonFallback(page.mux))

	s.mux = http.NewServeMux()
	s.mux.Handle(apiPrefix, apiH)
	// Not redirected to the prefix (the mux would answer 307 with HTML):
	// the API answers it, 401 or 404 in JSON.
	s.mux.Handle(strings.TrimSuffix(apiPrefix, "/"), apiH)
	s.mux.Handle("/", pageH)
	var h http.Handler = canonicalPath(s.mux)
	if s.opts.InsecureNoAuth {
		h = localHostOnly(h)
	}
	s.handler = securityHeaders(s.recoverer(h))
}

// localHostOnly answers 421 MisdirectedRequest to a request whose Host is
// a name other than localhost. Without authentication, a web page could
// otherwise reach a platform on loopback by DNS rebinding: its own name,
// resolved to 127.0.0.1, makes its requests same-origin, and their Host
// is that name. An IP address cannot be rebound and is accepted.
func localHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host) {
			WriteError(w, http.StatusMisdirectedRequest, "MisdirectedRequest",
				"without authentication the platform answers only requests to an IP address or localhost, not to "+quotePath(r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// localHost reports whether a Host header names an IP address or
// localhost (RFC 6761: localhost and its subdomains are loopback), or is
// absent (an HTTP/1.0 client's: no browser's).
func localHost(host string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// jsonFallback answers what mux has no route for with a JSON error: 404
// NotFound, or 405 MethodNotAllowed (with its Allow header).
func jsonFallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		probe := &statusProbe{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.code == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			WriteError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("%s is not allowed on %s", quoteMethod(r.Method), quotePath(r.URL.Path)))
			return
		}
		WriteError(w, http.StatusNotFound, "NotFound", "no such route: "+quotePath(r.URL.Path))
	})
}

// statusProbe records what the mux's own 404 or 405 handler answers.
type statusProbe struct {
	header http.Header
	code   int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(code int)        { p.code = code }

// canonicalPath answers 404 to a path that is not in its clean form
// ("..", ".", "//" segments, even percent-encoded), instead of
// redirecting it to somewhere else.
func canonicalPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		clean := path.Clean(p)
		if strings.HasSuffix(p, "/") && clean != "/" {
			clean += "/"
		}
		if p == "" || p != clean || strings.ContainsRune(p, 0) {
			WriteError(w, http.StatusNotFound, "NotFound", "the path is not in canonical form: "+quotePath(p))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy allows nothing from elsewhere, no script at all,
// and only the page's own stylesheet and forms.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// securityHeaders sets the headers every answer carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a handler's panic into 500 InternalError: the panic and
// its stack are logged, the client learns nothing of them.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("platform: a handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if rw.wrote {
				// The answer has begun: all that can be done is cutting it.
				panic(http.ErrAbortHandler)
			}
			WriteError(w, http.StatusInternalServerError, "InternalError", "the server failed to handle the request; its log says why")
		}()
		// The handlers bound bodies through the server's own writer,
		// which a wrapper would hide (see bodyLimit).
		next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), rawWriterKey{}, w)))
	})
}

// rawWriterKey keys the server's own ResponseWriter in a request's
// context.
type rawWriterKey struct{}

// bodyLimit bounds r's body to n bytes like http.MaxBytesReader, given
// the server's own writer: only that one learns that the limit was hit,
// so that the connection is closed after the answer instead of the rest
// of the body being read first (which a client still sending would make
// wait for ever). It bounds the wait for each part of the body too, by
// Options.BodyIdleTimeout (see idleBody).
func (s *Server) bodyLimit(w http.ResponseWriter, r *http.Request, n int64) io.ReadCloser {
	if raw, ok := r.Context().Value(rawWriterKey{}).(http.ResponseWriter); ok {
		w = raw
	}
	b := &idleBody{ReadCloser: http.MaxBytesReader(w, r.Body, n), rc: http.NewResponseController(w), idle: s.opts.BodyIdleTimeout}
	// The deadline set per read replaces the http.Server's for the
	// whole request: that one still bounds the body.
	if hs, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && hs.ReadTimeout > 0 {
		b.end = time.Now().Add(hs.ReadTimeout)
	}
	return b
}

// idleBody fails a body read that receives nothing for idle, so that a
// client that stalls (holding an upload slot, say) is cut off whatever
// the http.Server's timeouts; its error is os.ErrDeadlineExceeded.
type idleBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	end  time.Time // when not zero, no deadline is set past it
	done bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.done {
		return b.ReadCloser.Read(p)
	}
	d := time.Now().Add(b.idle)
	if !b.end.IsZero() && d.After(b.end) {
		d = b.end
	}
	// A writer that cannot set deadlines (not a net/http server's)
	// leaves the body unbounded in time, as before.
	_ = b.rc.SetReadDeadline(d)
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		// The body is over: the deadline must not outlive it, or it
		// would end the request (net/http cancels the request's context
		// when a read of the connection fails).
		b.done = true
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			_ = b.rc.SetReadDeadline(b.end)
		}
	}
	return n, err
}

// timedOut reports whether a body read failed for want of data.
func timedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// requestTimeout answers 408 to a client whose body stalled.
func (s *Server) requestTimeout(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	WriteError(w, http.StatusRequestTimeout, "RequestTimeout", fmt.Sprintf("the body did not arrive in time: nothing came for %s, or it took longer than the server allows a request", s.opts.BodyIdleTimeout))
}

// trackingWriter notes whether the answer has begun.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	if code >= 200 {
		t.wrote = true
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

func (t *trackingWriter) ReadFrom(r io.Reader) (int64, error) {
	t.wrote = true
	return io.Copy(t.ResponseWriter, r)
}

// Unwrap lets http.ResponseController reach the real writer.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// scrub replaces the store's folder in a message the store made (a
// discovery error, a problem of a package) by "<store>": where the
// server keeps its files is none of a client's business.
func (s *Server) scrub(msg string) string {
	for _, d := range s.storeDirs {
		if len(d) < 2 {
			continue
		}
		msg = strings.ReplaceAll(msg, d, "<store>")
		msg = scrubCut(msg, d)
	}
	return msg
}

// scrubCut replaces the start of dir where a message quoting a bounded
// part of another cut it short: `"... /srv/sto"...`.
func scrubCut(msg, dir string) string {
	const cutMark = `"...`
	var b strings.Builder
	for {
		i := strings.Index(msg, cutMark)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		head := msg[:i]
		for k := min(len(dir)-1, len(head)); k >= 2; k-- {
			if strings.HasSuffix(head, dir[:k]) {
				head = head[:len(head)-k] + "<store>"
				break
			}
		}
		b.WriteString(head)
		b.WriteString(cutMark)
		msg = msg[i+len(cutMark):]
	}
}

func (s *Server) scrubAll(msgs []string) []string {
	if msgs == nil {
		return []string{}
	}
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = s.scrub(m)
	}
	return out
}

// maxQuoted bounds the untrusted text quoted in a message.
const maxQuoted = 128

// quotePath quotes a path or name for a message, cut to maxQuoted bytes.
func quotePath(p string) string {
	if len(p) > maxQuoted {
		return fmt.Sprintf("%q... (%d bytes)", strings.ToValidUTF8(p[:maxQuoted], ""), len(p))
	}
	return fmt.Sprintf("%q", p)
}

func quoteMethod(m string) string { return quotePath(m) }
