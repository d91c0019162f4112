package mcptoolset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
	_ toolset.RefusalReporter      = (*Toolset)(nil)
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
// left behind may hold its stderr open for ever. A variable only for the
// tests, which wait it out.
var commandWaitDelay = time.Second

// NewHTTP returns the tools of a server at a streamable HTTP endpoint
// ("http://127.0.0.1:8080/mcp"). It does not connect until it is used.
func NewHTTP(endpoint string, opts ...Option) *Toolset {
	name := endpoint
	u, err := url.Parse(endpoint)
	if err == nil && u.Host != "" {
		name = u.Host
	}
	dial := func(cfg *config, oauth *identityAuth) DialFunc {
		return func(ctx context.Context) (mcp.Transport, error) {
			if oauth != nil {
				if err := oauth.resolve(ctx); err != nil {
					return nil, err
				}
			}
			if err != nil {
				return nil, fmt.Errorf("invalid URL: %w", err)
			}
			if u.Scheme != "http" && u.Scheme != "https" {
				return nil, fmt.Errorf("invalid URL %q: the scheme must be http or https", endpoint)
			}
			hc := boundedClient(cfg.httpClient, u)
			if len(cfg.httpHeader) > 0 {
				hc.Transport = originHeaders{base: hc.Transport, scheme: u.Scheme, host: u.Host, header: cfg.httpHeader}
			}
			tr := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}
			if oauth != nil {
				tr.OAuthHandler = oauth
			}
			return tr, nil
		}
	}
	ts := NewTransport(name, nil, opts...)
	cfg := &ts.c.cfg
	ts.c.dial = dial(cfg, nil)
	if cfg.hasIdentity || cfg.tokenSource != nil || cfg.authz != nil {
		ts.c.ids = newIdentities(cfg, cfg.name, func(_ string, a *identityAuth) *conn {
			c := newConn(name, nil, opts)
			c.dial, c.identity = dial(&c.cfg, a), true
			return c
		})
	}
	return ts
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
	c, done, err := t.route(ctx, "list tools")
	if err != nil {
		return nil, err
	}
	defer done()
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
	c, done, err := t.route(ctx, "connect")
	if err != nil {
		return "", err
	}
	defer done()
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
// what the toolset does not cover (prompts, resources); for a toolset of
// identities ([WithIdentity]), the session of the identity of the run of
// ctx. Do not close it: it belongs to the toolset.
func (t *Toolset) Session(ctx context.Context) (*mcp.ClientSession, error) {
	if t == nil || t.c == nil {
		return nil, errZero
	}
	if t.released.Load() {
		return nil, t.c.errorf("connect", "", ErrClosed)
	}
	c, done, err := t.route(ctx, "connect")
	if err != nil {
		return nil, err
	}
	defer done()
	return c.session(ctx)
}

// route returns the connection of the run of ctx: the toolset's, or,
// for a toolset of identities, the identity's, held until done is called
// so that another identity's turn does not close it meanwhile.
func (t *Toolset) route(ctx context.Context, op string) (c *conn, done func(), err error) {
	ids := t.c.ids
	if ids == nil {
		return t.c, func() {}, nil
	}
	c, err = ids.conn(ids.of(ctx))
	if err != nil {
		return nil, nil, t.c.errorf(op, "", err)
	}
	return c, func() { _ = c.release() }, nil
}

// ToolsChanged drops the cached tool list, so the next GetTools lists the
// tools again. The toolset calls it itself when the server sends
// notifications/tools/list_changed on a connection it opened.
func (t *Toolset) ToolsChanged() {
	if t != nil && t.c != nil {
		t.c.invalidate()
		if t.c.ids != nil {
			t.c.ids.each((*conn).invalidate)
		}
	}
}

// InvalidTools returns the tools that the last listing refused, with why:
// a schema that does not compile or refers outside itself, a tool over the
// limits of [WithListLimits], a name listed twice. They are not offered to
// the model; each was logged once as a warning.
//
// For a toolset of identities ([WithIdentity], [WithTokenSource]), each
// identity's connection lists on its own: InvalidTools gathers the
// refusals of every identity's last listing, and [Toolset.RefusedTools]
// gives those of the run's identity.
func (t *Toolset) InvalidTools() []*InvalidToolError {
	if t == nil || t.c == nil {
		return nil
	}
	out := t.c.invalidTools()
	if t.c.ids != nil {
		t.c.ids.each(func(c *conn) { out = append(out, c.invalidTools()...) })
	}
	return out
}

// invalidTools returns the refusals of c's last listing.
func (c *conn) invalidTools() []*InvalidToolError {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.invalid)
}

// RefusedTools implements [toolset.RefusalReporter], so that
// [toolset.Explain] lists the tools that the last listing refused (those of
// [Toolset.InvalidTools]), under the server's names, each with a
// [toolset.ReasonRefused] that says why: "the name is not one a model can
// call (...); offer it under a mapped name with
// mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNames)".
func (t *Toolset) RefusedTools(ctx context.Context) []toolset.ToolExplanation {
	var invalid []*InvalidToolError
	if t != nil && t.c != nil && t.c.ids != nil {
		if c := t.c.ids.lookup(t.c.ids.of(ctx)); c != nil {
			invalid = c.c.invalidTools()
		}
	} else {
		invalid = t.InvalidTools()
	}
	if len(invalid) == 0 {
		return nil
	}
	out := make([]toolset.ToolExplanation, len(invalid))
	for i, ie := range invalid {
		out[i] = toolset.ToolExplanation{Name: ie.Tool, Reasons: []toolset.Reason{{
			Kind: toolset.ReasonRefused, Detail: textcut.Clip(fmt.Sprint(ie.Err), maxCauseShown),
		}}}
	}
	return out
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

// Guarded returns t with each tool offered again with the options guard
// returns for it; see [toolset.NewGuarded].
func (t *Toolset) Guarded(guard func(toolset.Tool) []toolset.ToolOption) *toolset.Guarded {
	return toolset.NewGuarded(t, guard)
}
