package mcptoolset

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/gotoolset/toolset/internal/tracefields"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Metadata keys set on every tool of a [Toolset]. The hint keys are set only
// when the server sent annotations; their values are "true" or "false".
// [NewServer] reads the title and hint keys back into the MCP tool
// definition it serves.
const (
	// MetaServer is the name of the server the tool comes from.
	MetaServer = "mcp.server"
	// MetaTool is the tool's name on the server, which a prefix or a
	// renaming does not change.
	MetaTool = "mcp.tool"
	// MetaTitle is the tool's human-readable title: its title, or else the
	// title of its annotations.
	MetaTitle = "mcp.title"
	// MetaReadOnly is the readOnlyHint annotation: the tool does not modify
	// its environment.
	MetaReadOnly = "mcp.readOnlyHint"
	// MetaDestructive is the destructiveHint annotation: the tool may
	// destroy or overwrite data (meaningful when not read-only).
	MetaDestructive = "mcp.destructiveHint"
	// MetaIdempotent is the idempotentHint annotation: calling the tool
	// again with the same arguments has no further effect.
	MetaIdempotent = "mcp.idempotentHint"
	// MetaOpenWorld is the openWorldHint annotation: the tool interacts with
	// an open world of external entities (the web, say).
	MetaOpenWorld = "mcp.openWorldHint"
)

// DialFunc opens a transport to an MCP server. A [Toolset] calls it when it
// is first used and again after its connection is lost.
type DialFunc func(ctx context.Context) (mcp.Transport, error)

// Option configures a [Toolset].
type Option func(*config)

type config struct {
	name           string
	label          string
	ttl            time.Duration
	noCache        bool
	skip           bool
	logger         *slog.Logger
	retryDelay     time.Duration
	connectTimeout time.Duration
	impl           *mcp.Implementation
	clientOpts     *mcp.ClientOptions
	httpClient     *http.Client
	httpHeader     http.Header
	toolOpts       func(*mcp.Tool) []toolset.ToolOption
	listTimeout    time.Duration
	callTimeout    time.Duration
	limits         ListLimits
	failInvalid    bool
	trace          toolset.TracePropagator
	requests       RequestObserver
}

// Defaults of the options.
const (
	DefaultRetryDelay     = 2 * time.Second
	DefaultConnectTimeout = 30 * time.Second
	DefaultListTimeout    = 30 * time.Second
	DefaultCallTimeout    = 5 * time.Minute
)

// WithName sets the server's name, used in the label ("mcp:" + name), in
// errors and in the [MetaServer] metadata. The default depends on the
// constructor: the name the server reported for [New], the command's base
// name for [NewCommand], the URL's host for [NewHTTP].
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithLabel sets the toolset's whole label (see [toolset.Labeler]) instead
// of "mcp:" + name.
func WithLabel(label string) Option { return func(c *config) { c.label = label } }

// WithCacheTTL makes GetTools list the tools again once the last list is
// older than d, even if the server did not say that its list changed. Use
// it for servers that change their tools without notifying (their
// capabilities do not include tools.listChanged). Zero, the default, keeps
// the list until the server notifies.
func WithCacheTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithoutCache makes every GetTools list the tools from the server.
// Concurrent calls still share one request.
func WithoutCache() Option { return func(c *config) { c.noCache = true } }

// WithSkipUnavailable makes GetTools and Instructions treat a server that
// cannot be reached, or fails to list its tools, as a server without tools:
// they log a warning (once per failed attempt, not once per turn) and
// return no tools and a nil error, so the turn goes on without it. Without
// this option they return a [*ServerError].
func WithSkipUnavailable() Option { return func(c *config) { c.skip = true } }

// WithLogger sets the logger for warnings; the default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithRetryDelay sets how long after a failed connection attempt the
// toolset returns that failure again without trying anew, so that a server
// that is down is not dialled by every run of every turn; the default is
// [DefaultRetryDelay]. Zero retries on every use.
func WithRetryDelay(d time.Duration) Option { return func(c *config) { c.retryDelay = d } }

// WithConnectTimeout bounds the time to open a connection and initialize
// the session; the default is [DefaultConnectTimeout]. Zero means no bound
// beyond the caller's context.
func WithConnectTimeout(d time.Duration) Option { return func(c *config) { c.connectTimeout = d } }

// WithListTimeout bounds the time to list the server's tools, all pages
// together, so that a server that never answers tools/list cannot hang a
// turn; the default is [DefaultListTimeout]. Zero means no bound beyond
// the caller's context.
func WithListTimeout(d time.Duration) Option { return func(c *config) { c.listTimeout = d } }

// WithCallTimeout bounds the time a tool call waits for the server's
// answer, so that a server that never answers tools/call (or answers
// under another request ID) cannot hang a turn; the default is
// [DefaultCallTimeout]. A call that gets no answer in time fails with a
// [*ServerError] wrapping context.DeadlineExceeded. Zero means no bound
// beyond the caller's context. A tool's own timeout
// ([toolset.WithTimeout], see [WithToolOptions]) applies within it.
func WithCallTimeout(d time.Duration) Option { return func(c *config) { c.callTimeout = d } }

// WithListLimits bounds what a listing may hold: the number of tools and
// their total size, and per tool the size and nesting of its schemas and
// the size of its description. A zero field keeps its default (see
// [ListLimits]). A listing with too many tools, or too large, fails; a
// tool over a per-tool limit is refused like a tool whose schema does not
// compile (see [WithFailOnInvalidTools]).
func WithListLimits(l ListLimits) Option { return func(c *config) { c.limits = l } }

// WithTracePropagator makes every tools/call carry the trace context of the
// call's context in its params._meta, as "traceparent" and "tracestate"
// (see [toolset.TracePropagator]), so that the server's work on the call
// belongs to the caller's trace; a server made with [WithServerTracePropagator]
// takes it out. oteltoolset.Propagator makes p from OpenTelemetry.
func WithTracePropagator(p toolset.TracePropagator) Option {
	return func(c *config) { c.trace = p }
}

// WithRequestObserver makes o observe every tools/call the Toolset sends
// (see [RequestObserver]).
func WithRequestObserver(o RequestObserver) Option {
	return func(c *config) { c.requests = o }
}

// WithFailOnInvalidTools makes a listing that holds an invalid tool fail, with
// a [*ServerError] whose cause joins the [*InvalidToolError] of each. By
// default an invalid tool is left out of the list, with a warning, and the
// others are offered (see [Toolset.InvalidTools]).
func WithFailOnInvalidTools() Option { return func(c *config) { c.failInvalid = true } }

// WithClient sets the client's identity sent to the server and the SDK's
// client options (handlers for sampling, elicitation, logging, ...). The
// toolset chains its own ToolListChangedHandler before the one given. It
// has no effect with [New], whose session is already connected.
func WithClient(impl *mcp.Implementation, opts *mcp.ClientOptions) Option {
	return func(c *config) { c.impl, c.clientOpts = impl, opts }
}

// WithHTTPClient sets the HTTP client of [NewHTTP], for example one that
// adds an Authorization header. The toolset uses a copy whose transport
// fails a response body of one message over 16 MiB (the SDK's bound on a
// message over stdio), so a server cannot make the process hold an
// answer of any size.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithHTTPHeader adds a header to the requests [NewHTTP] sends to its
// endpoint's origin (scheme, host and port), for example
// WithHTTPHeader("Authorization", "Bearer "+token). The header is not
// sent to any other origin, so a redirect elsewhere does not carry a
// credential along. Headers add up; a later value for a key replaces an
// earlier one. The HTTP client ([WithHTTPClient]) is kept as it is.
func WithHTTPHeader(key, value string) Option {
	return func(c *config) {
		if c.httpHeader == nil {
			c.httpHeader = http.Header{}
		}
		c.httpHeader.Set(key, value)
	}
}

// WithToolOptions sets a function that picks the core's tool options
// (timeout, approval, cache, rate limit, retries, middleware, ...) for each
// of the server's tools, from its definition: for example an approval for
// every tool whose destructiveHint is not false. It runs once per tool
// definition, when a listing first shows it.
func WithToolOptions(fn func(def *mcp.Tool) []toolset.ToolOption) Option {
	return func(c *config) { c.toolOpts = fn }
}

// Toolset is an MCP server's tools as a [toolset.Toolset]. It is a handle
// on a connection shared by every handle that [Toolset.Acquire] makes from
// it; see the package documentation for how the connection is opened,
// cached and closed. A Toolset is safe for concurrent use.
type Toolset struct {
	c        *conn
	released atomic.Bool
}

var (
	_ toolset.Toolset              = (*Toolset)(nil)
	_ toolset.Labeler              = (*Toolset)(nil)
	_ toolset.InstructionsProvider = (*Toolset)(nil)
)

// New returns the tools of the server at the other end of a connected
// session. The toolset owns the session from now on: the last Close closes
// it. A session cannot be reopened, so once it ends (the server went away)
// every use fails with a [*ServerError].
//
// The toolset cannot hook into the notifications of a client it did not
// make, so to drop the cached tool list when the server's list changes,
// call [Toolset.ToolsChanged] from the client's ToolListChangedHandler, or
// use [WithCacheTTL]. The constructors that connect for you do this
// themselves.
func New(session *mcp.ClientSession, opts ...Option) *Toolset {
	name := "mcp"
	if session != nil {
		if r := session.InitializeResult(); r != nil && r.ServerInfo != nil && r.ServerInfo.Name != "" {
			name = r.ServerInfo.Name
		}
	}
	c := newConn(name, nil, opts)
	c.given = session
	if session == nil {
		c.givenErr = errors.New("nil *mcp.ClientSession")
	}
	return &Toolset{c: c}
}

// NewTransport returns the tools of the server that dial connects to. It
// does not connect until it is used.
func NewTransport(name string, dial DialFunc, opts ...Option) *Toolset {
	if dial == nil {
		dial = func(context.Context) (mcp.Transport, error) { return nil, errors.New("nil DialFunc") }
	}
	return &Toolset{c: newConn(name, dial, opts)}
}

// NewCommand returns the tools of a server run as a subprocess and spoken
// to over its stdin and stdout. cmd is a template: each connection runs a
// fresh command with its Path, Args, Env, Dir, Stderr and SysProcAttr, so
// the toolset can start the server again if it exits. A command made with
// exec.CommandContext is run without its context. The subprocess is
// started on first use and stopped by the last Close.
//
// The server's stderr is copied to Stderr, if set, and its last
// [MaxStderrTail] bytes are kept: when the connection fails (the server
// exited at start, say) or is lost during a request (it crashed), the
// [*ServerError]'s cause is a [*CommandError] that says how the process
// ended and what it last wrote there; such a request returns once the
// process is stopped, and the warning logged when the server ends a
// session says the same. The copying stops one second (or the template's WaitDelay)
// after the server exited, so a child that the server left behind with its
// stderr open does not keep Close waiting; when Stderr is a writer other
// than a file, Close then reports exec.ErrWaitDelay, since part of its
// output was lost.
func NewCommand(cmd *exec.Cmd, opts ...Option) *Toolset {
	name := "command"
	if cmd != nil {
		name = filepath.Base(cmd.Path)
	}
	return NewTransport(name, func(context.Context) (mcp.Transport, error) {
		if cmd == nil {
			return nil, errors.New("nil *exec.Cmd")
		}
		c := &exec.Cmd{
			Path: cmd.Path, Args: slices.Clone(cmd.Args), Env: cmd.Env, Dir: cmd.Dir,
			Stderr: cmd.Stderr, SysProcAttr: cmd.SysProcAttr, Err: cmd.Err,
			WaitDelay: cmp.Or(cmd.WaitDelay, commandWaitDelay),
		}
		return newCommandTransport(c), nil
	}, opts...)
}

// commandWaitDelay is how long a subprocess server's output is still
// copied after it exited, when the command has no WaitDelay: a child it
// left behind may hold its stderr open for ever.
const commandWaitDelay = time.Second

// NewHTTP returns the tools of a server at a streamable HTTP endpoint
// ("http://127.0.0.1:8080/mcp"). It does not connect until it is used.
func NewHTTP(endpoint string, opts ...Option) *Toolset {
	name := endpoint
	u, err := url.Parse(endpoint)
	if err == nil && u.Host != "" {
		name = u.Host
	}
	ts := NewTransport(name, nil, opts...)
	ts.c.dial = func(context.Context) (mcp.Transport, error) {
		if err != nil {
			return nil, fmt.Errorf("invalid URL: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("invalid URL %q: the scheme must be http or https", endpoint)
		}
		hc := boundedClient(ts.c.cfg.httpClient, u)
		if len(ts.c.cfg.httpHeader) > 0 {
			hc.Transport = originHeaders{base: hc.Transport, scheme: u.Scheme, host: u.Host, header: ts.c.cfg.httpHeader}
		}
		return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil
	}
	return ts
}

// originHeaders adds its headers to the requests for one origin.
type originHeaders struct {
	base         http.RoundTripper
	scheme, host string
	header       http.Header
}

func (t originHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != t.scheme || !strings.EqualFold(req.URL.Host, t.host) {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not change the request it is given
	for k, v := range t.header {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the transport
// wrapped.
func (t originHeaders) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// maxResponseBytes bounds an HTTP response body that holds one message
// (not an event stream, whose events the SDK bounds itself), as the SDK
// bounds a message over stdio; a var for the tests.
var maxResponseBytes int64 = mcp.DefaultMaxLineLength

// boundedClient returns a copy of hc (or of http.DefaultClient) whose
// response bodies, other than event streams, fail past maxResponseBytes:
// the SDK reads such a body whole, so a server could otherwise make the
// process hold any amount of memory.
func boundedClient(hc *http.Client, endpoint *url.URL) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = boundedTransport{base}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, endpoint) {
			return &RedirectError{From: origin(endpoint), To: origin(req.URL)}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

type boundedTransport struct{ base http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxResponseBytes}
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the transport
// wrapped, as http.Client.CloseIdleConnections expects.
func (t boundedTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// boundedBody fails a read past its limit.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("the server's HTTP response is over %d bytes", maxResponseBytes)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("the server's HTTP response is over %d bytes", maxResponseBytes)
	}
	return n, err
}

// NewInMemory returns the tools of an SDK server running in this process,
// connected through in-memory transports: each connection is a new session
// of server. It is handy in tests and for serving and consuming within one
// program.
func NewInMemory(name string, server *mcp.Server, opts ...Option) *Toolset {
	return NewTransport(name, func(ctx context.Context) (mcp.Transport, error) {
		if server == nil {
			return nil, errors.New("nil *mcp.Server")
		}
		st, ct := mcp.NewInMemoryTransports()
		if _, err := server.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}, opts...)
}

// GetTools implements [toolset.Toolset]: it returns the server's tools,
// listed on first use and cached as the package documentation describes.
// The tools are the same values from one call to the next until the list
// changes.
func (t *Toolset) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	if t == nil || t.c == nil {
		return nil, errZero
	}
	c := t.c
	if t.released.Load() {
		return nil, c.errorf("list tools", "", ErrClosed)
	}
	tools, err := c.tools(ctx)
	if err != nil {
		if c.skippable(ctx, err) {
			return nil, nil
		}
		return nil, err
	}
	return slices.Clone(tools), nil
}

// Label implements [toolset.Labeler]: "mcp:" + the server's name unless
// [WithLabel] says otherwise.
func (t *Toolset) Label() string {
	if t == nil || t.c == nil {
		return ""
	}
	return t.c.label
}

// Name returns the server's name.
func (t *Toolset) Name() string {
	if t == nil || t.c == nil {
		return ""
	}
	return t.c.cfg.name
}

// errZero is the error of a Toolset that no constructor made.
var errZero = errors.New("mcptoolset: a Toolset must be made with New, NewTransport, NewCommand, NewHTTP or NewInMemory")

// Instructions implements [toolset.InstructionsProvider]: the instructions
// the server sent when the session was initialized.
func (t *Toolset) Instructions(ctx context.Context) (string, error) {
	if t == nil || t.c == nil {
		return "", errZero
	}
	c := t.c
	if t.released.Load() {
		return "", c.errorf("connect", "", ErrClosed)
	}
	s, err := c.session(ctx)
	if err != nil {
		if c.skippable(ctx, err) {
			return "", nil
		}
		return "", err
	}
	if r := s.InitializeResult(); r != nil {
		return r.Instructions, nil
	}
	return "", nil
}

// Session returns the connected session, connecting first if needed, for
// what the toolset does not cover (prompts, resources). Do not close it:
// it belongs to the toolset.
func (t *Toolset) Session(ctx context.Context) (*mcp.ClientSession, error) {
	if t == nil || t.c == nil {
		return nil, errZero
	}
	if t.released.Load() {
		return nil, t.c.errorf("connect", "", ErrClosed)
	}
	return t.c.session(ctx)
}

// ToolsChanged drops the cached tool list, so the next GetTools lists the
// tools again. The toolset calls it itself when the server sends
// notifications/tools/list_changed on a connection it opened.
func (t *Toolset) ToolsChanged() {
	if t != nil && t.c != nil {
		t.c.invalidate()
	}
}

// InvalidTools returns the tools that the last listing refused, with why:
// a schema that does not compile or refers outside itself, a tool over the
// limits of [WithListLimits], a name listed twice. They are not offered to
// the model; each was logged once as a warning.
func (t *Toolset) InvalidTools() []*InvalidToolError {
	if t == nil || t.c == nil {
		return nil
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return slices.Clone(t.c.invalid)
}

// Acquire returns a new handle on the same connection, which stays open
// until every handle is closed. Give one to each owner (agent, component)
// that closes what it holds. Acquiring from a toolset whose last handle is
// closed returns a closed handle.
func (t *Toolset) Acquire() *Toolset {
	if t == nil || t.c == nil {
		return &Toolset{}
	}
	c := t.c
	h := &Toolset{c: c}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		h.released.Store(true)
	} else {
		c.refs++
	}
	return h
}

// Close releases this handle. Closing the last handle closes the session
// (and stops a subprocess server); closing a handle again does nothing.
func (t *Toolset) Close() error {
	if t == nil || t.c == nil || !t.released.CompareAndSwap(false, true) {
		return nil
	}
	return t.c.release()
}

// Prefixed returns t with every tool name prefixed; see [toolset.NewPrefixed].
func (t *Toolset) Prefixed(prefix string, opts ...toolset.PrefixOption) *toolset.Prefixed {
	return toolset.NewPrefixed(t, prefix, opts...)
}

// Renamed returns t with some tools renamed; see [toolset.NewRenamed].
func (t *Toolset) Renamed(names map[string]string) *toolset.Renamed {
	return toolset.NewRenamed(t, names)
}

// Filtered returns t showing only the tools pred accepts each turn; see
// [toolset.NewFiltered].
func (t *Toolset) Filtered(pred toolset.Predicate) *toolset.Filtered {
	return toolset.NewFiltered(t, pred)
}

// Prepared returns t with its tool list edited each turn by fn; see
// [toolset.NewPrepared].
func (t *Toolset) Prepared(fn toolset.PrepareFunc) *toolset.Prepared {
	return toolset.NewPrepared(t, fn)
}

// CombinedWith returns a toolset of t followed by others; see
// [toolset.NewCombined].
func (t *Toolset) CombinedWith(others ...toolset.Toolset) *toolset.Combined {
	return toolset.NewCombined(append([]toolset.Toolset{t}, others...)...)
}

// conn is the connection and tool cache shared by the handles of a Toolset.
type conn struct {
	cfg   config
	label string
	dial  DialFunc

	mu       sync.Mutex
	refs     int
	ended    bool
	given    *mcp.ClientSession // New's session, until first used
	givenErr error              // why there is no session to use
	sess     *mcp.ClientSession
	watchers sync.WaitGroup // one per session opened
	// command is the subprocess of session commandOf, the last one opened
	// by NewCommand; kept once the session is dropped, to say how it ended.
	command   *commandTransport
	commandOf *mcp.ClientSession
	opening   *flight
	failErr   error // the last failed connection attempt
	failAt    time.Time
	warned    *ServerError // the failure last logged under WithSkipUnavailable

	gen     uint64 // bumped when the tool list changes
	cache   *listing
	listing *flight
	// watching maps the progress tokens of calls in flight to their
	// callers' contexts.
	watching  map[string]*watch
	lastToken uint64

	known   map[string]toolset.Tool      // tools of the last listing by definition; used by the listing leader only
	refused map[string]*InvalidToolError // refusals of the last listing by definition; used by the listing leader only
	invalid []*InvalidToolError          // the refusals of the last listing
}

// flight is a connection attempt or a listing that concurrent callers
// share.
type flight struct {
	done  chan struct{}
	sess  *mcp.ClientSession
	tools []toolset.Tool
	err   error
	// abandoned is set when the attempt failed because the context of the
	// caller that made it ended: the others try again.
	abandoned bool
}

type listing struct {
	tools []toolset.Tool
	at    time.Time
	gen   uint64
}

func newConn(name string, dial DialFunc, opts []Option) *conn {
	c := &conn{
		dial: dial,
		refs: 1,
		cfg: config{
			name:           name,
			retryDelay:     DefaultRetryDelay,
			connectTimeout: DefaultConnectTimeout,
			listTimeout:    DefaultListTimeout,
			callTimeout:    DefaultCallTimeout,
		},
	}
	for _, o := range opts {
		if o != nil {
			o(&c.cfg)
		}
	}
	if c.cfg.logger == nil {
		c.cfg.logger = slog.Default()
	}
	c.cfg.limits = c.cfg.limits.withDefaults()
	c.label = c.cfg.label
	if c.label == "" {
		c.label = "mcp:" + c.cfg.name
	}
	return c
}

func (c *conn) errorf(op, tool string, err error) error {
	var se *ServerError
	if errors.As(err, &se) && se.Server == c.cfg.name && se.Op == op {
		return err
	}
	return &ServerError{Server: c.cfg.name, Op: op, Tool: tool, Err: err}
}

// skippable reports whether err may be skipped under WithSkipUnavailable, and
// logs the warning when it is.
func (c *conn) skippable(ctx context.Context, err error) bool {
	if !c.cfg.skip || ctx.Err() != nil || errors.Is(err, ErrClosed) {
		return false
	}
	// A failure returned again during the retry delay is the same value:
	// warn once per attempt, not once per turn.
	se, _ := err.(*ServerError)
	c.mu.Lock()
	repeat := se != nil && se == c.warned
	c.warned = se
	c.mu.Unlock()
	if !repeat {
		c.cfg.logger.WarnContext(ctx, "mcptoolset: skipping unavailable MCP server", "server", c.cfg.name, "error", err)
	}
	return true
}

func (c *conn) invalidate() {
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
}

// session returns the connected session, opening it if needed. Concurrent
// callers share one attempt; a caller whose context ends stops waiting, and
// the others try again if the attempt failed only because the context of
// the caller that made it ended.
func (c *conn) session(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		c.mu.Lock()
		if c.ended {
			c.mu.Unlock()
			return nil, c.errorf("connect", "", ErrClosed)
		}
		if c.sess != nil {
			s := c.sess
			c.mu.Unlock()
			return s, nil
		}
		f := c.opening
		leader := f == nil
		if leader {
			if c.failErr != nil && time.Since(c.failAt) < c.cfg.retryDelay {
				err := c.failErr
				c.mu.Unlock()
				return nil, err
			}
			f = &flight{done: make(chan struct{})}
			c.opening = f
		}
		c.mu.Unlock()
		if leader {
			c.open(ctx, f)
			return f.sess, f.err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, c.errorf("connect", "", ctx.Err())
		}
		if f.abandoned && ctx.Err() == nil {
			continue
		}
		return f.sess, f.err
	}
}

// open makes one connection attempt for the callers waiting on f.
func (c *conn) open(ctx context.Context, f *flight) {
	var tr mcp.Transport
	s, err := guard(c, "connect", "DialFunc", func() (s *mcp.ClientSession, err error) {
		s, tr, err = c.connect(ctx)
		return s, err
	})
	c.mu.Lock()
	c.opening = nil
	switch {
	case err != nil:
		if ctx.Err() == nil {
			c.failErr, c.failAt = err, time.Now()
		}
	case c.ended:
		// Closed while connecting: nobody will use the session.
		c.mu.Unlock()
		_ = s.Close()
		f.err = c.errorf("connect", "", ErrClosed)
		close(f.done)
		return
	default:
		c.sess, c.failErr = s, nil
		c.gen++ // a new session may have other tools
		c.command, _ = tr.(*commandTransport)
		c.commandOf = s
		c.watchers.Go(func() { c.watch(s) })
	}
	c.mu.Unlock()
	f.sess, f.err = s, err
	f.abandoned = err != nil && ctx.Err() != nil
	close(f.done)
}

// connect opens a session: New's session, or a new one through dial, with
// the transport it was opened with.
func (c *conn) connect(ctx context.Context) (*mcp.ClientSession, mcp.Transport, error) {
	if c.dial == nil {
		c.mu.Lock()
		s, err := c.given, c.givenErr
		c.given = nil
		if s == nil && err == nil {
			err = errors.New("the session has ended, and a session given to New cannot be reopened")
			c.givenErr = err
		}
		c.mu.Unlock()
		if err != nil {
			return nil, nil, c.errorf("connect", "", err)
		}
		return s, nil, nil
	}
	if d := c.cfg.connectTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	tr, err := c.dial(ctx)
	if err != nil {
		return nil, nil, c.errorf("connect", "", err)
	}
	impl := c.cfg.impl
	if impl == nil {
		impl = &mcp.Implementation{Name: "toolset", Version: "v0"}
	}
	var opts mcp.ClientOptions
	if c.cfg.clientOpts != nil {
		opts = *c.cfg.clientOpts
	}
	next := opts.ToolListChangedHandler
	opts.ToolListChangedHandler = func(ctx context.Context, req *mcp.ToolListChangedRequest) {
		c.invalidate()
		if next != nil {
			defer func() {
				if p := recover(); p != nil {
					c.cfg.logger.Error("mcptoolset: the ToolListChangedHandler panicked", "server", c.cfg.name, "panic", p, "stack", string(debug.Stack()))
				}
			}()
			next(ctx, req)
		}
	}
	nextProgress := opts.ProgressNotificationHandler
	opts.ProgressNotificationHandler = func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
		c.progress(req)
		if nextProgress != nil {
			defer func() {
				if p := recover(); p != nil {
					c.cfg.logger.Error("mcptoolset: the ProgressNotificationHandler panicked", "server", c.cfg.name, "panic", p, "stack", string(debug.Stack()))
				}
			}()
			nextProgress(ctx, req)
		}
	}
	s, err := mcp.NewClient(impl, &opts).Connect(ctx, tr, nil)
	if err != nil {
		if ct, ok := tr.(*commandTransport); ok {
			err = ct.explain(err)
		}
		return nil, nil, c.errorf("connect", "", err)
	}
	return s, tr, nil
}

// watch notices when the server ends the session, so that the next use
// reconnects and lists the tools again.
func (c *conn) watch(s *mcp.ClientSession) {
	err := s.Wait()
	_ = s.Close() // releases what the session still holds, such as its subscription
	err = c.explainLost(s, err)
	if c.drop(s) {
		c.cfg.logger.Warn("mcptoolset: MCP server closed the connection", "server", c.cfg.name, "error", err)
	}
}

// explainLost returns err, the error of session s that lost its
// connection, with how its subprocess ended and the end of its stderr,
// once the process is stopped; err itself if s is not a session of
// NewCommand.
func (c *conn) explainLost(s *mcp.ClientSession, err error) error {
	c.mu.Lock()
	ct := c.command
	if c.commandOf != s {
		ct = nil
	}
	c.mu.Unlock()
	if ct == nil {
		return err
	}
	return ct.explain(err)
}

// drop forgets s if it is the current session, and reports whether it was.
func (c *conn) drop(s *mcp.ClientSession) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != s || c.ended {
		return false
	}
	c.sess = nil
	c.gen++
	return true
}

// release drops one reference; the last one closes the session.
func (c *conn) release() error {
	c.mu.Lock()
	c.refs--
	if c.refs > 0 || c.ended {
		c.mu.Unlock()
		return nil
	}
	c.ended = true
	s, given := c.sess, c.given
	c.sess, c.given, c.cache = nil, nil, nil
	c.mu.Unlock()
	var err error
	if s != nil {
		err = s.Close()
	}
	c.watchers.Wait()
	if given != nil {
		err = given.Close()
	}
	if err != nil {
		return c.errorf("close", "", err)
	}
	return nil
}

// tools returns the tool list, from the cache while it is fresh.
// Concurrent callers share one listing.
func (c *conn) tools(ctx context.Context) ([]toolset.Tool, error) {
	for {
		c.mu.Lock()
		if c.ended {
			c.mu.Unlock()
			return nil, c.errorf("list tools", "", ErrClosed)
		}
		if l := c.cache; l != nil && c.fresh(l) {
			c.mu.Unlock()
			return l.tools, nil
		}
		f := c.listing
		leader := f == nil
		if leader {
			f = &flight{done: make(chan struct{})}
			c.listing = f
		}
		c.mu.Unlock()
		if leader {
			c.list(ctx, f)
			return f.tools, f.err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, c.errorf("list tools", "", ctx.Err())
		}
		if f.abandoned && ctx.Err() == nil {
			continue
		}
		return f.tools, f.err
	}
}

func (c *conn) fresh(l *listing) bool {
	return !c.cfg.noCache && l.gen == c.gen && (c.cfg.ttl <= 0 || time.Since(l.at) < c.cfg.ttl)
}

// list fetches the tool list for the callers waiting on f.
func (c *conn) list(ctx context.Context, f *flight) {
	s, err := c.session(ctx)
	var tools []toolset.Tool
	if err == nil {
		c.mu.Lock()
		gen := c.gen // a change notified from now on makes this list stale
		c.mu.Unlock()
		tools, err = guard(c, "list tools", "listing", func() ([]toolset.Tool, error) { return c.fetch(ctx, s) })
		c.mu.Lock()
		if err == nil && !c.ended {
			c.cache = &listing{tools: tools, at: time.Now(), gen: gen}
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.listing = nil
	c.mu.Unlock()
	f.tools, f.err = tools, err
	f.abandoned = err != nil && ctx.Err() != nil
	close(f.done)
}

// maxPages bounds the pages of one listing, against a server whose cursors
// never end.
var maxPages = 1000

// fetch lists the server's tools, page by page, within the listing
// timeout, and makes them into tools.
func (c *conn) fetch(ctx context.Context, s *mcp.ClientSession) ([]toolset.Tool, error) {
	lctx := ctx
	if d := c.cfg.listTimeout; d > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	var defs []*mcp.Tool
	size := 0 // of defs, encoded
	seen := map[string]bool{}
	cursor := ""
	for page := 1; ; page++ {
		res, err := s.ListTools(lctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			if lctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("no complete answer to tools/list within %v (see WithListTimeout): %w", c.cfg.listTimeout, err)
			}
			if connectionLost(err) {
				err = c.explainLost(s, err)
			}
			return nil, c.errorf("list tools", "", err)
		}
		defs = append(defs, res.Tools...)
		if len(defs) > c.cfg.limits.MaxTools {
			return nil, c.errorf("list tools", "", fmt.Errorf("the server lists more than %d tools (see WithListLimits)", c.cfg.limits.MaxTools))
		}
		for _, d := range res.Tools {
			b, _ := json.Marshal(d) // a definition that does not encode is refused later
			size += len(b)
		}
		if size > c.cfg.limits.MaxListBytes {
			return nil, c.errorf("list tools", "", fmt.Errorf("the server's tool definitions are more than %d bytes (see WithListLimits)", c.cfg.limits.MaxListBytes))
		}
		if res.NextCursor == "" {
			break
		}
		seen[cursor] = true
		if seen[res.NextCursor] || page == maxPages {
			return nil, c.errorf("list tools", "", fmt.Errorf("the server's pages do not end (cursor %q after %d pages)", truncate(res.NextCursor, 64), page))
		}
		cursor = res.NextCursor
	}
	return c.makeTools(defs)
}

// makeTools turns the server's tool definitions into tools, reusing the
// tools of the last listing whose definitions did not change. It refuses
// the definitions that are invalid (see [InvalidToolError]): they are left
// out with a warning, logged once per definition, or, with
// WithFailOnInvalidTools, fail the listing.
func (c *conn) makeTools(defs []*mcp.Tool) ([]toolset.Tool, error) {
	known := make(map[string]toolset.Tool, len(defs))
	refused := make(map[string]*InvalidToolError)
	tools := make([]toolset.Tool, 0, len(defs))
	count := make(map[string]int, len(defs))
	for _, d := range defs {
		if d != nil {
			count[d.Name]++
		}
	}
	var invalid []*InvalidToolError
	refuse := func(key string, d *mcp.Tool, err error) {
		ie, ok := c.refused[key]
		if !ok || key == "" {
			ie = &InvalidToolError{Server: c.cfg.name, Tool: truncate(d.Name, maxNameBytes), Err: err}
			c.cfg.logger.Warn("mcptoolset: refusing an invalid tool of an MCP server", "server", c.cfg.name, "tool", ie.Tool, "error", ie.Err)
		}
		if key != "" {
			refused[key] = ie
		}
		invalid = append(invalid, ie)
	}
	for _, d := range defs {
		if d == nil {
			continue // the SDK logs and drops these already
		}
		switch n := count[d.Name]; {
		case n > 1: // refused once per name, every definition left out
			refuse(fmt.Sprintf("dup:%d:%s", n, d.Name), d, fmt.Errorf("the server lists %d tools of this name", n))
			count[d.Name] = -1
			continue
		case n < 0:
			continue
		}
		b, kerr := json.Marshal(d)
		key := string(b)
		if kerr != nil {
			key = ""
		}
		if t, ok := c.known[key]; ok && key != "" {
			known[key] = t
			tools = append(tools, t)
			continue
		}
		if _, ok := c.refused[key]; ok && key != "" {
			refuse(key, d, nil)
			continue
		}
		t, err := c.makeTool(d)
		if _, ok := errors.AsType[*toolset.PanicError](err); ok {
			return nil, c.errorf("list tools", "", err) // a bug of the application's, not the server's
		}
		if err != nil {
			refuse(key, d, err)
			continue
		}
		if key != "" {
			known[key] = t
		}
		tools = append(tools, t)
	}
	if len(invalid) > 0 && c.cfg.failInvalid {
		var errs []error
		for _, e := range invalid[:min(len(invalid), maxRefusalsJoined)] {
			errs = append(errs, e)
		}
		if n := len(invalid) - maxRefusalsJoined; n > 0 {
			errs = append(errs, fmt.Errorf("and %d more invalid tools", n))
		}
		return nil, c.errorf("list tools", "", errors.Join(errs...))
	}
	c.known, c.refused = known, refused
	c.mu.Lock()
	c.invalid = invalid
	c.mu.Unlock()
	return tools, nil
}

// maxRefusalsJoined bounds the refusals that a listing failed under
// WithFailOnInvalidTools quotes.
const maxRefusalsJoined = 10

// makeTool makes the tool of one definition, or says why it is invalid.
func (c *conn) makeTool(d *mcp.Tool) (toolset.Tool, error) {
	lim := c.cfg.limits
	if err := checkName(d.Name); err != nil {
		return toolset.Tool{}, err
	}
	if len(d.Description) > lim.MaxDescriptionBytes {
		return toolset.Tool{}, fmt.Errorf("the description is %d bytes, more than the limit of %d", len(d.Description), lim.MaxDescriptionBytes)
	}
	title := d.Title
	if d.Annotations != nil && len(d.Annotations.Title) > len(title) {
		title = d.Annotations.Title
	}
	if len(title) > lim.MaxDescriptionBytes {
		return toolset.Tool{}, fmt.Errorf("the title is %d bytes, more than the limit of %d", len(title), lim.MaxDescriptionBytes)
	}
	if d.InputSchema == nil {
		return toolset.Tool{}, errors.New("the tool has no input schema")
	}
	in, err := schemaJSON(d.InputSchema, lim)
	if err != nil {
		return toolset.Tool{}, fmt.Errorf("input schema: %w", err)
	}
	params, err := toolset.ParseSchema(in)
	if err != nil {
		return toolset.Tool{}, fmt.Errorf("input schema: %w", err)
	}
	opts := []toolset.ToolOption{toolset.WithMetadata(metadataOf(c.cfg.name, d))}
	if d.OutputSchema != nil {
		out, err := schemaJSON(d.OutputSchema, lim)
		if err != nil {
			return toolset.Tool{}, fmt.Errorf("output schema: %w", err)
		}
		returns, err := toolset.ParseSchema(out)
		if err != nil {
			return toolset.Tool{}, fmt.Errorf("output schema: %w", err)
		}
		opts = append(opts, toolset.WithReturns(returns))
	}
	if c.cfg.toolOpts != nil {
		more, err := c.toolOptions(d)
		if err != nil {
			return toolset.Tool{}, err
		}
		opts = append(opts, more...)
	}
	name := d.Name
	call := func(ctx context.Context, args json.RawMessage) (any, error) { return c.call(ctx, name, args) }
	// NewRawTool compiles the schema at once, loading nothing: a schema
	// that does not compile on its own is refused here, not at every call.
	t := toolset.NewRawTool(d.Name, d.Description, params, call, opts...)
	if err := t.Err(); err != nil {
		return toolset.Tool{}, err
	}
	return t, nil
}

// toolOptions runs the WithToolOptions function for d, recovering a panic.
func (c *conn) toolOptions(d *mcp.Tool) (opts []toolset.ToolOption, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &toolset.PanicError{Tool: truncate(d.Name, maxNameBytes), Callback: "WithToolOptions function", Value: p, Stack: debug.Stack()}
		}
	}()
	return c.cfg.toolOpts(d), nil
}

// guard runs fn, turning a panic into a *ServerError for op, so that the
// callers waiting on a connection or a listing are always answered.
func guard[T any](c *conn, op, what string, fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = c.errorf(op, "", &toolset.PanicError{Callback: what, Value: p, Stack: debug.Stack()})
		}
	}()
	return fn()
}

// connectionLost reports whether err says that the session is over: the
// SDK reports a peer that went away mid-call as a bare EOF.
func connectionLost(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe)
}

func metadataOf(server string, d *mcp.Tool) map[string]string {
	md := map[string]string{MetaServer: server, MetaTool: d.Name}
	title := d.Title
	if a := d.Annotations; a != nil {
		if title == "" {
			title = a.Title
		}
		md[MetaReadOnly] = strconv.FormatBool(a.ReadOnlyHint)
		md[MetaIdempotent] = strconv.FormatBool(a.IdempotentHint)
		if a.DestructiveHint != nil {
			md[MetaDestructive] = strconv.FormatBool(*a.DestructiveHint)
		}
		if a.OpenWorldHint != nil {
			md[MetaOpenWorld] = strconv.FormatBool(*a.OpenWorldHint)
		}
	}
	if title != "" {
		md[MetaTitle] = title
	}
	return md
}

// call sends tools/call for the tool named name on the server.
func (c *conn) call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, err // names the server; the core adds the tool's name
	}
	ctx, endRequest := startRequest(ctx, c.cfg.requests, c.cfg.logger,
		RequestInfo{Client: true, Method: "tools/call", Tool: name, Server: c.cfg.name, SessionID: s.ID()})
	var (
		res     *mcp.CallToolResult
		callErr error
	)
	defer func() { endRequest(RequestEnd{Err: callErr, ToolError: callErr == nil && res != nil && res.IsError}) }()
	cctx := ctx
	if d := c.cfg.callTimeout; d > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if toolset.HasProgress(ctx) {
		// The server's progress notifications for this call reach the
		// caller's progress callback.
		token := c.watchProgress(ctx)
		defer c.unwatchProgress(token)
		params.SetProgressToken(token)
	}
	if parent, state := tracefields.Inject(ctx, c.cfg.trace); parent != "" {
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[toolset.TraceparentField] = parent
		if state != "" {
			params.Meta[toolset.TracestateField] = state
		}
	}
	res, callErr = s.CallTool(cctx, params)
	if err := callErr; err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer to tools/call within %v (see WithCallTimeout): %w", c.cfg.callTimeout, err)
		}
		if connectionLost(err) {
			c.drop(s) // the next use reconnects; the call is not retried, as it may have run
			err = c.explainLost(s, err)
		}
		return nil, c.errorf("call tool", name, err)
	}
	content := fromMCP(res)
	if res.IsError {
		return nil, &ResultError{Server: c.cfg.name, Tool: name, Content: content}
	}
	return content, nil
}

// maxProgressMessage bounds the message of a server's progress
// notification passed on to a caller.
const maxProgressMessage = 1024

// watch is a call in flight that wants progress.
type watch struct {
	ctx  context.Context
	mu   sync.Mutex // held while the callback runs
	done bool       // the call returned: no more callbacks
}

// watchProgress registers the context of a call that wants progress and
// returns the call's progress token.
func (c *conn) watchProgress(ctx context.Context) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastToken++
	token := "toolset-" + strconv.FormatUint(c.lastToken, 10)
	if c.watching == nil {
		c.watching = map[string]*watch{}
	}
	c.watching[token] = &watch{ctx: ctx}
	return token
}

// unwatchProgress ends a call's progress: once it returns, the callback
// is not called again for it.
func (c *conn) unwatchProgress(token string) {
	c.mu.Lock()
	w := c.watching[token]
	delete(c.watching, token)
	c.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	}
}

// progress passes a server's progress notification to the caller of the
// call it names; one naming no call in flight is ignored.
func (c *conn) progress(req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	c.mu.Lock()
	w := c.watching[token]
	c.mu.Unlock()
	if w == nil {
		return
	}
	p := toolset.Progress{Message: textcut.Prefix(req.Params.Message, maxProgressMessage), Fraction: -1}
	if t := req.Params.Total; t > 0 && req.Params.Progress >= 0 && req.Params.Progress <= t {
		p.Fraction = req.Params.Progress / t
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		toolset.ReportProgress(w.ctx, p)
	}
}
