package mcptoolset

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn is the connection and tool cache shared by the handles of a Toolset.
type conn struct {
	cfg   config
	label string
	dial  DialFunc
	// ids are the connections of each identity, which a toolset of
	// WithIdentity or WithTokenSource uses instead of this one; nil for
	// none.
	ids *identities
	// identity marks the connection of one identity of ids: a call in
	// flight holds a reference (see hold), and reroute returns the
	// identity's connection, held, once this one is evicted.
	identity bool
	reroute  func() (*conn, error)

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

	run  heldHandle // the run handle a 2026-07-28 server last gave
	asks askTable   // the server's requests to confirm a call, waiting for the run
	// calls are the tools/call requests in flight, for an older
	// server's elicitation on the session (see sessionElicit).
	calls map[*callFlight]struct{}

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
	var are *AuthRequiredError
	if !c.cfg.skip || ctx.Err() != nil || errors.Is(err, ErrClosed) || errors.As(err, &are) {
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
	c.hookNotifications(&opts)
	c.askInRun(&opts)
	declareTasks(&opts)
	client := mcp.NewClient(impl, &opts)
	if err := addTaskMethods(client); err != nil {
		return nil, nil, c.errorf("connect", "", err)
	}
	client.AddSendingMiddleware(takeListTTL, carryRunHandle(&c.run, c.invalidate))
	s, err := client.Connect(ctx, withTaskTransport(tr), nil)
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

// hold takes a reference for a call in flight on an identity's
// connection, so that the eviction of the identity closes it only once
// the call has returned; false when it is closed.
func (c *conn) hold() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	c.refs++
	return true
}

// held returns c held or, when it is an evicted identity's, the
// identity's connection now, held; the caller releases it.
func (c *conn) held() (*conn, error) {
	if c.hold() {
		return c, nil
	}
	if c.reroute == nil {
		return nil, c.errorf("connect", "", ErrClosed)
	}
	nc, err := c.reroute()
	if err != nil {
		return nil, c.errorf("connect", "", err)
	}
	return nc, nil
}

// shut closes the connection, whatever references calls in flight hold.
func (c *conn) shut() error {
	c.mu.Lock()
	c.refs = 1
	c.mu.Unlock()
	return c.release()
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
	if c.ids != nil {
		err = c.ids.close()
	}
	if s != nil {
		err = errors.Join(err, s.Close())
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
