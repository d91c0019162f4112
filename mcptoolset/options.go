package mcptoolset

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	nameMap        func(string) string
	listTimeout    time.Duration
	callTimeout    time.Duration
	limits         ListLimits
	failInvalid    bool
	trace          toolset.TracePropagator
	requests       RequestObserver
	maxTaskWait    time.Duration

	identity      toolset.Key[string]
	hasIdentity   bool
	tokenSource   TokenSourceFunc
	maxIdentities int
	authz         *auth.AuthorizationCodeHandlerConfig
	authzTimeout  time.Duration
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
