package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/gotoolset/toolset/toolpkg/skill"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of serve --http.
const (
	// maxRequestBody bounds the body of a request to /mcp: one JSON-RPC
	// message (a batch is refused), read whole before it is handled.
	maxRequestBody = 4 << 20
	// idleTimeout closes a keep-alive connection idle for that long.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds the request line and header.
	maxHeaderBytes = 64 << 10
	// defaultShutdownTimeout is how long in-flight requests may go on
	// after SIGINT or SIGTERM, by default.
	defaultShutdownTimeout = 10 * time.Second
	// writeMargin is added to the longest tool timeout to bound the time
	// a response may take to write.
	writeMargin = time.Minute
)

// Bounds of serve --http that the tests lower.
var (
	// readHeaderTimeout bounds the time a client may take to send the
	// request line and header.
	readHeaderTimeout = 10 * time.Second
	// bodyReadTimeout bounds the time a client may take to send the body.
	bodyReadTimeout = 30 * time.Second
	// maxListens bounds the notification streams held open (a 2026-07-28
	// client's subscriptions/listen, an older client's session GET);
	// beyond it the runner answers 503, so that a load balancer tries
	// another. A stream holds no process, only a connection.
	maxListens int64 = 1024
	// callsPerCPU is the default bound on the calls handled at once, by
	// CPU of the machine: each call of a packaged tool is a process.
	callsPerCPU = 32
	// maxBodiesInFlight bounds the bytes of the bodies of the calls read
	// or handled at once: decoded, a body of small JSON values takes some
	// thirty times its size.
	maxBodiesInFlight int64 = 32 << 20
	// maxListenBody bounds the body of a subscriptions/listen request,
	// which the stream holds as long as it lasts.
	maxListenBody = 64 << 10
	// maxConns bounds the connections open at once, idle ones included;
	// beyond it the runner accepts no more until one closes.
	maxConns = 4096
)

// httpFlags are the flags of serve --http.
type httpFlags struct {
	addr       string
	tokenFile  string
	insecure   bool
	shutdown   time.Duration
	maxCalls   int
	runKeyFile string

	oauthIssuer, oauthAudience, oauthResource string
}

func addHTTPFlags(fs *flag.FlagSet) *httpFlags {
	hf := &httpFlags{}
	fs.StringVar(&hf.addr, "http", "", "serve MCP over streamable HTTP at ADDR (host:port) instead of stdio")
	fs.StringVar(&hf.tokenFile, "token-file", "", "the file holding the bearer tokens clients may send, one per line (default: the one of $"+platform.TokenEnv+"); each token's clients have runs of their own")
	fs.BoolVar(&hf.insecure, "insecure-no-auth", false, "serve over HTTP without a bearer token (local use only)")
	fs.DurationVar(&hf.shutdown, "shutdown-timeout", defaultShutdownTimeout, "how long calls in flight may go on after SIGINT or SIGTERM")
	fs.IntVar(&hf.maxCalls, "max-calls", 0, fmt.Sprintf("how many calls the runner handles at once, beyond which it answers 503 (default: %d per CPU)", callsPerCPU))
	fs.StringVar(&hf.oauthIssuer, "oauth-issuer", "", "accept OAuth access tokens (JWTs) of the authorization server at URL instead of static tokens: its keys are found from its metadata, and each token's scopes are its runs' \"scopes\" (which required_scopes read); needs --oauth-audience, excludes --token-file and --insecure-no-auth")
	fs.StringVar(&hf.oauthAudience, "oauth-audience", "", "with --oauth-issuer: the audience (aud) tokens must name, usually the endpoint's URL")
	fs.StringVar(&hf.oauthResource, "oauth-resource", "", "with --oauth-issuer: the endpoint's public URL (https://host/mcp) published in its protected resource metadata (default: made from each request's Host)")
	fs.StringVar(&hf.runKeyFile, "run-key-file", "", "the file holding the key (at least 32 bytes) that signs the run handles of 2026-07-28 clients, for replicas to share (default: a random key of this process); runs are kept in the process's memory")
	return hf
}

// httpAuth is what serve --http authenticates with and signs run
// handles with.
type httpAuth struct {
	// tokens are the bearer tokens clients may send; none for
	// --insecure-no-auth, or without --http.
	tokens []string
	// runKey signs run handles; nil for a random key of the process.
	runKey []byte
	// oauthIssuer, oauthAudience and oauthResource are those of
	// --oauth-issuer: tokens are verified against the issuer's keys
	// rather than compared with tokens.
	oauthIssuer, oauthAudience, oauthResource string
}

// auth checks the flags and returns the bearer tokens that clients may
// send (none for --insecure-no-auth) and the run key. It is called before
// the package is loaded, so that a runner without a token refuses to
// start at once.
func (hf *httpFlags) auth() (httpAuth, error) {
	if hf.addr == "" {
		if hf.tokenFile != "" || hf.insecure || hf.maxCalls != 0 || hf.runKeyFile != "" || hf.oauthIssuer != "" || hf.oauthAudience != "" || hf.oauthResource != "" {
			return httpAuth{}, usagef("--token-file, --insecure-no-auth, --oauth-issuer, --oauth-audience, --oauth-resource, --max-calls and --run-key-file go with --http ADDR")
		}
		return httpAuth{}, nil
	}
	if hf.shutdown <= 0 {
		return httpAuth{}, usagef("--shutdown-timeout must be positive, got %v", hf.shutdown)
	}
	if hf.maxCalls < 0 {
		return httpAuth{}, usagef("--max-calls must be positive, got %d", hf.maxCalls)
	}
	var a httpAuth
	if hf.runKeyFile != "" {
		key, err := loadRunKey(hf.runKeyFile)
		if err != nil {
			return httpAuth{}, err
		}
		a.runKey = key
	}
	if hf.oauthIssuer == "" && (hf.oauthAudience != "" || hf.oauthResource != "") {
		return httpAuth{}, usagef("--oauth-audience and --oauth-resource go with --oauth-issuer URL")
	}
	if hf.oauthIssuer != "" {
		switch {
		case hf.tokenFile != "":
			return httpAuth{}, usagef("--oauth-issuer and --token-file contradict each other: give one")
		case hf.insecure:
			return httpAuth{}, usagef("--oauth-issuer and --insecure-no-auth contradict each other: give one")
		case hf.oauthAudience == "":
			return httpAuth{}, usagef("--oauth-issuer needs --oauth-audience AUD, the audience its tokens name for this server")
		}
		if u, err := url.Parse(hf.oauthIssuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return httpAuth{}, usagef("--oauth-issuer %q is not an http(s) URL", hf.oauthIssuer)
		}
		if hf.oauthResource != "" {
			if u, err := url.Parse(hf.oauthResource); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return httpAuth{}, usagef("--oauth-resource %q is not an http(s) URL", hf.oauthResource)
			}
		}
		a.oauthIssuer, a.oauthAudience, a.oauthResource = hf.oauthIssuer, hf.oauthAudience, hf.oauthResource
		return a, nil
	}
	if hf.insecure {
		if hf.tokenFile != "" {
			return httpAuth{}, usagef("--insecure-no-auth and --token-file contradict each other: give one")
		}
		return a, nil
	}
	toks, err := loadTokens(hf.tokenFile)
	if errors.Is(err, platform.ErrNoToken) {
		return httpAuth{}, fmt.Errorf("refusing to serve over HTTP without authentication: set %s or give --token-file FILE (or, for local use only, --insecure-no-auth)", platform.TokenEnv)
	}
	if err != nil {
		return httpAuth{}, err
	}
	a.tokens = toks
	return a, nil
}

// httpServer is what serveHTTP serves.
type httpServer struct {
	srv *mcptoolset.Server
	// tokens are the bearer tokens clients may send; none for no
	// authentication.
	tokens []string
	// oauth, when not nil, verifies OAuth access tokens instead of
	// tokens.
	oauth *mcptoolset.OAuthConfig
	// bindingKey keys the tokens' bindings (see tokenBinding): the run
	// key, nil for a random key of the process.
	bindingKey []byte
	// callBound bounds the time a tools/call takes: the longest timeout
	// of the tools served.
	callBound time.Duration
	logger    *slog.Logger
	// drain ends when the server begins to shut down; nil for never.
	drain context.Context
	// maxCalls bounds the calls handled at once; 0 for callsPerCPU by
	// CPU of the machine.
	maxCalls int64
}

// handler returns the handler of the runner's endpoints: the MCP server
// at /mcp, behind the bearer tokens, and /healthz for load balancers.
//
// The MCP endpoint is mcptoolset.Server.HTTPHandler's: a client before
// 2026-07-28 has a session (Mcp-Session-Id), which is one run, and a
// 2026-07-28 client carries on one run by the run handle each result
// gives it (see runServerOptions). A session, and a run handle, is bound
// to the token its client authenticated with: another token's requests
// cannot use it.
func (h *httpServer) handler() http.Handler {
	mcpHandler := h.srv.HTTPHandler(&mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: maxRequestBody,
		Logger:              h.logger,
		SessionTimeout:      sessionTimeout,
	})
	maxCalls := h.maxCalls
	if maxCalls <= 0 {
		maxCalls = int64(callsPerCPU * runtime.NumCPU())
	}
	var protected http.Handler = boundBody(mcpHandler, h.drain, maxCalls)
	mux := http.NewServeMux()
	switch {
	case h.oauth != nil:
		protected = h.oauth.Protect(protected)
		mux.Handle(mcptoolset.ProtectedResourceMetadataPath+"/", h.oauth.MetadataHandler())
	case len(h.tokens) > 0:
		protected = requireTokens(h.tokens, h.bindingKey, protected)
	default:
		protected = literalHostOnly(protected)
	}
	mux.Handle("/mcp", protected)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		platform.WriteError(w, http.StatusNotFound, "NotFound", "no such endpoint: the MCP server is at /mcp")
	})
	return mux
}

// literalHostOnly guards a runner without a token against DNS
// rebinding: a web page at http://attacker.example:PORT, whose name then
// resolves to the runner's address, would post to the runner as to its
// own origin and read the answers. The SDK refuses such a Host only on a
// loopback listener, not in a container or on a LAN address. An IP
// address or "localhost" is a Host that no DNS answer changes; any other
// is refused with 403.
func literalHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if _, err := netip.ParseAddr(host); err != nil && !strings.EqualFold(host, "localhost") {
			platform.WriteError(w, http.StatusForbidden, "Forbidden", "without authentication (--insecure-no-auth) the runner answers only requests whose Host is an IP address or localhost, against DNS rebinding")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// boundBody reads the request body whole before next sees it: at most
// maxRequestBody bytes (413 beyond) within the server's ReadTimeout. A
// body that fails closes the connection, rather than have the server
// discard the rest of it. A JSON-RPC batch is refused (400).
//
// Then it bounds the requests handled at once: maxCalls calls and
// maxListens subscriptions/listen streams, counted apart since a client
// holds one of these open as long as it lives, and maxBodiesInFlight
// bytes of the calls' bodies, counted from before they are read; a
// request beyond is answered 503. The context of a listen stream ends
// when drain does.
func boundBody(next http.Handler, drain context.Context, maxCalls int64) http.Handler {
	var calls, listens, bodies atomic.Int64
	busy := func(w http.ResponseWriter, msg string) {
		w.Header().Set("Retry-After", "1")
		platform.WriteError(w, http.StatusServiceUnavailable, "Busy", msg+"; try again")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxRequestBody {
			w.Header().Set("Connection", "close")
			platform.WriteError(w, http.StatusRequestEntityTooLarge, "TooLarge", fmt.Sprintf("the request body is over %d bytes", maxRequestBody))
			return
		}
		// The body's bytes are held from before it is read (as many as
		// it says, or the most it may be) until the call is done.
		held := r.ContentLength
		if held < 0 {
			held = maxRequestBody
		}
		defer func() { bodies.Add(-held) }()
		if bodies.Add(held) > maxBodiesInFlight {
			w.Header().Set("Connection", "close") // its body unread
			busy(w, fmt.Sprintf("the runner holds %d bytes of requests already", maxBodiesInFlight))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
		if err != nil {
			w.Header().Set("Connection", "close")
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				platform.WriteError(w, http.StatusRequestEntityTooLarge, "TooLarge", fmt.Sprintf("the request body is over %d bytes", maxRequestBody))
				return
			}
			platform.WriteError(w, http.StatusBadRequest, "BadRequest", "reading the request body failed (or took over "+bodyReadTimeout.String()+")")
			return
		}
		if isBatch(body) {
			// Each message of a batch is handled at once, on a goroutine
			// of its own: one request could run thousands of tools, past
			// the bound on calls below. Clients of the protocol since
			// 2025-06-18 send none.
			platform.WriteError(w, http.StatusBadRequest, "BadRequest", "JSON-RPC batches are not accepted: send one message per request")
			return
		}
		bodies.Add(int64(len(body)) - held)
		held = int64(len(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		count, bound, what := &calls, maxCalls, "calls"
		// A session's GET is its stream of notifications from the
		// server, as long-lived as a 2026-07-28 client's listen stream.
		listen := drain != nil && (r.Method == http.MethodGet || isListen(body))
		if listen {
			// A listen stream may last as long as the client: it holds
			// no share of the bodies' bytes, and may have no big body.
			if len(body) > maxListenBody {
				platform.WriteError(w, http.StatusRequestEntityTooLarge, "TooLarge", fmt.Sprintf("a subscriptions/listen request is over %d bytes", maxListenBody))
				return
			}
			bodies.Add(-held)
			held = 0
			count, bound, what = &listens, maxListens, "notification streams (subscriptions/listen, or a session's GET)"
		}
		defer count.Add(-1)
		if count.Add(1) > bound {
			busy(w, fmt.Sprintf("the runner is handling %d %s already", bound, what))
			return
		}
		if listen {
			// A subscriptions/listen stream lasts as long as the client
			// wants: it ends when the runner begins to shut down, rather
			// than holding the shutdown up.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(drain, cancel)()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// isBatch reports whether body is a JSON array: a JSON-RPC batch.
func isBatch(body []byte) bool {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '['
}

// isListen reports whether body is a subscriptions/listen request: the
// long-lived stream on which a client of a stateless server receives
// notifications such as notifications/tools/list_changed. The body is
// decoded as the SDK decodes it (encoding/json would match "METHOD" too,
// and take the last of two keys), so that a call is never counted as a
// listen stream.
func isListen(body []byte) bool {
	if !bytes.Contains(body, []byte("subscriptions/listen")) {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	return err == nil && ok && req.Method == "subscriptions/listen"
}

// serveHTTP serves h on hf.addr until ctx ends (SIGINT or SIGTERM), then
// shuts down: it stops accepting, lets requests in flight finish for at
// most hf.shutdown, then cancels those left (which ends their tools'
// processes) and returns once every handler has returned.
func serveHTTP(ctx context.Context, h *httpServer, hf *httpFlags, stderr io.Writer) error {
	// Every request's context, and so every tool call's, ends when hard is
	// cancelled: when the shutdown's grace is over.
	hard, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	h.srv.MCP().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, stop := context.WithCancel(ctx)
			defer stop()
			defer context.AfterFunc(hard, stop)()
			return next(ctx, method, req)
		}
	})
	drain, drained := context.WithCancel(context.Background())
	defer drained()
	h.drain = drain
	var inflight atomic.Int64
	handler := h.handler()
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Add(-1)
		handler.ServeHTTP(w, r)
	})
	tcp, err := net.Listen("tcp", hf.addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", hf.addr, err)
	}
	ln := newLimitListener(tcp, maxConns)
	hs := &http.Server{
		Handler:           counted,
		ReadHeaderTimeout: readHeaderTimeout,
		// The header and the body must come within ReadTimeout; net/http
		// lifts the read deadline once the body is read, so a call or a
		// listen stream may then last (within WriteTimeout).
		ReadTimeout:    readHeaderTimeout + bodyReadTimeout,
		WriteTimeout:   h.callBound + writeMargin,
		IdleTimeout:    idleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
		BaseContext:    func(net.Listener) context.Context { return hard },
		ErrorLog:       slog.NewLogLogger(h.logger.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(drained)
	if len(h.tokens) == 0 && h.oauth == nil {
		fmt.Fprintf(stderr, "toolset serve: warning: serving without authentication (--insecure-no-auth): anyone who reaches %s can run these tools\n", ln.Addr())
	}
	fmt.Fprintf(stderr, "toolset serve: listening on http://%s/mcp\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintf(stderr, "toolset serve: shutting down: calls in flight have %v to finish\n", hf.shutdown)
	sctx, scancel := context.WithTimeout(context.Background(), hf.shutdown)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil {
		fmt.Fprintln(stderr, "toolset serve: calls still in flight: cancelling them")
		cancel()
		// Wait for the handlers, now that their contexts are done, so
		// that none is left running when the store is closed.
		deadline := time.Now().Add(hf.shutdown)
		for inflight.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if inflight.Load() > 0 {
			fmt.Fprintln(stderr, "toolset serve: calls did not end when cancelled: closing their connections")
		}
		_ = hs.Close()
	}
	<-served // http.ErrServerClosed
	return nil
}

// limitListener accepts at most n connections open at once: beyond,
// Accept waits until one is closed, and the kernel holds the newcomers in
// its backlog. Anyone who reaches the runner may open connections, and
// each held open (idle, or sending its header slowly) holds one of the
// runner's file descriptors, which its tools need too.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, max(n, 1)), closed: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

// Close closes the listener, ending an Accept that waits for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitConn gives its slot back when closed.
type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// longestTimeout returns the longest timeout of the package's tools.
func longestTimeout(info toolpkg.Info) time.Duration {
	var d time.Duration
	for _, t := range info.Tools {
		d = max(d, t.Timeout())
	}
	return d
}

// warnLogger logs warnings and errors to w.
func warnLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// agentCallBound bounds a call of an agent file's toolsets, whose tools
// come from packages and MCP servers: the store's default bound on a
// package tool's timeout (toolpkg.Limits.MaxTimeoutSeconds).
const agentCallBound = time.Hour

// agentFlags are the flags of serve --agent.
type agentFlags struct {
	file, store, role string
	broker            *brokerFlags
	// platform, with --agent NAME, is the platform the deployed agent is
	// loaded from, with its token file and the agent's secrets.
	platform, platformToken, secrets string
}

func addAgentFlags(fs *flag.FlagSet) *agentFlags {
	af := &agentFlags{}
	fs.StringVar(&af.file, "agent", "", "serve the toolsets of this agent file (see package platform/agentfile) instead of a ZIP")
	fs.StringVar(&af.store, "store", "", "with --agent: the store its packages come from")
	fs.StringVar(&af.role, "role", "", "with --agent: the role of every request's run (the run value the file's roleKey names, \"role\" by default)")
	af.broker = addBrokerFlags(fs, "with --agent: the broker whose runtimes run its packages, instead of a store's")
	fs.StringVar(&af.platform, "platform", "", "with --agent NAME: load the agent deployed as NAME on the platform at this URL (its effective document)")
	fs.StringVar(&af.platformToken, "platform-token-file", "", "with --platform: a file holding the platform's bearer token (default: $"+platform.TokenEnv+")")
	fs.StringVar(&af.secrets, "secrets", "", "with --platform: a JSON file of the agent's secrets, keyed by the references of its effective document (agent/TOOLSET/TOOL/KEY)")
	return af
}

// serveAgent serves the toolsets of an agent file: its packages from the
// store, its MCP servers, composed and with their policies as the file
// says. Local toolsets are registered by the program that runs an agent,
// so they are left out, with a note.
func serveAgent(ctx context.Context, pos []string, af *agentFlags, pf *pkgFlags, hf *httpFlags, ha httpAuth, stdout, stderr io.Writer) error {
	if len(pos) != 0 {
		return usagef("--agent FILE serves the file's toolsets: give no ZIP (got %d argument(s))", len(pos))
	}
	if len(pf.config) > 0 || *pf.name != "" {
		return usagef("--config and --name go with a ZIP; an agent file says its packages' configuration")
	}
	if af.platform == "" && (af.platformToken != "" || af.secrets != "") {
		return usagef("--platform-token-file and --secrets go with --platform URL")
	}
	if af.broker.url != "" && af.store != "" {
		return usagef("--store and --broker together: choose one")
	}
	var f *agentfile.File
	var err error
	var deployed func(*packageSource) (*agentfile.File, error)
	var fetched map[string]*skill.Skill
	if af.platform != "" {
		// Read before anything starts: the platform's token leaves the
		// environment when the agent is resolved.
		base, err := platformURL(af.platform)
		if err != nil {
			return err
		}
		ea, doc, err := fetchEffective(ctx, base, af.platformToken, af.file)
		if err != nil {
			return err
		}
		secrets, err := readSecrets(af.secrets)
		if err != nil {
			return err
		}
		token, err := platform.LoadToken(af.platformToken)
		if errors.Is(err, platform.ErrNoToken) {
			token = ""
		} else if err != nil {
			return err
		}
		if fetched, err = fetchSkills(ctx, base, token, ea, doc, stderr); err != nil {
			return err
		}
		deployed = func(src *packageSource) (*agentfile.File, error) {
			return deployedAgentFile(base, ea, doc, src.packages(), secrets, stderr)
		}
	} else if f, err = readAgent(af.file, stderr, stderr); err != nil { // stdout may carry the protocol
		return err
	}
	var artifacts *toolpkg.ArtifactOptions
	if hf.addr != "" {
		artifacts = serveArtifacts()
	}
	src, err := openPackageSource(ctx, af.store, *pf.mode, af.broker, artifacts, stderr)
	if err != nil {
		return err
	}
	defer src.close()
	var skills func(context.Context, string) (*skill.Skill, error)
	if deployed != nil {
		if f, err = deployed(src); err != nil {
			return err
		}
		done, err := installSkillTools(ctx, fetched, src.store, stderr)
		if err != nil {
			return err
		}
		defer done()
		skills = skillSource(fetched)
	}
	// The file is the runner's operator's, as are the commands it runs.
	a, err := resolveOwnAgent(ctx, f, src, skills, stderr, mcptoolset.WithLogger(warnLogger(stderr)))
	if err != nil {
		return printProblems(f.Filename, err, stderr)
	}
	defer a.Close()
	ts := toolset.NewCombined(a.Toolsets...)
	var role []toolset.RunOption
	if af.role != "" {
		role = append(role, a.WithRole(af.role))
	}
	// Check the toolsets now rather than on the client's first request.
	run := toolset.NewRun("", role...)
	_, err = toolset.BuildTools(run.Turn(ctx), a.Name, ts)
	run.End()
	if err != nil {
		return err
	}
	opts := []mcptoolset.ServerOption{
		mcptoolset.WithImplementation(&mcp.Implementation{Name: a.Name, Version: "v0"}),
		mcptoolset.WithAgent(a.Name),
	}
	if hf.addr != "" {
		// A session's run, or a run by handle, per client conversation.
		opts = append(opts, runServerOptions(a.Name, ha.runKey, role...)...)
	} else {
		opts = append(opts, mcptoolset.WithRunContext(func(context.Context, *mcptoolset.Request) (*toolset.RunContext, error) {
			return toolset.NewRun("", role...), nil
		}))
	}
	return serveMCP(ctx, mcptoolset.NewServer(ts, opts...), hf, ha, agentCallBound, stdout, stderr)
}

// oauthConfig discovers the keys of the issuer of --oauth-issuer and
// returns the configuration that verifies its tokens for the audience
// of --oauth-audience.
func oauthConfig(ctx context.Context, ha httpAuth) (*mcptoolset.OAuthConfig, error) {
	v, err := mcptoolset.NewTokenVerifier(ctx, ha.oauthIssuer, ha.oauthAudience, nil)
	if err != nil {
		return nil, fmt.Errorf("--oauth-issuer: %w", err)
	}
	return &mcptoolset.OAuthConfig{
		Verifier:             v.Verify,
		AuthorizationServers: []string{ha.oauthIssuer},
		Resource:             ha.oauthResource,
	}, nil
}
