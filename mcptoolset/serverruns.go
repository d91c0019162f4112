package mcptoolset

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunOptionsFunc gives the options (values, dependencies, an observer) of
// the run that a request without a session carries on with a run handle
// (see [WithRunStore]): it is called at each such request, since a run's
// values are not saved with it. It says who the client is, as a
// [RunContextFunc] does for a session's run; req is the request, and
// req.RunID the ID of the run. Requests of one run that this server
// handles at once share the run, and the options of the one that resumed
// it: decide from what the handle is bound to (see [WithRunBinding]), not
// from what may differ between a client's requests.
//
// An error refuses the request, as a RunContextFunc's does: a
// [*jsonrpc.Error] is sent as it is, any other error is internal.
type RunOptionsFunc func(ctx context.Context, req *Request) ([]toolset.RunOption, error)

// MinRunKeyBytes is the shortest key [WithRunKey] takes.
const MinRunKeyBytes = 32

// WithRunStore sets the store in which the runs of requests without a
// session are kept between requests; the default is one in the server's
// memory, which keeps [DefaultMaxStoredRuns] runs at most, dropping the
// least recently saved (any client may begin runs: a store shared by
// servers should expire and bound what it keeps too).
//
// A 2026-07-28 client has no session, and neither has a request to a
// stateless HTTP handler. Such a request carries on the run named by the
// run handle in its params._meta ([MetaRunHandle]), or begins a new run;
// the run is resumed from the store ([toolset.ResumeRun]), the request is
// its next turn, and it is suspended back to the store
// ([toolset.RunContext.Suspend]) once the server's requests of it are
// done. Every tools/list and tools/call result sent without a session
// carries the run's handle in its _meta, with a new expiry. So a client
// that sends the latest handle back keeps one run across its requests:
// tool search reveals, failure budgets and the run-scoped caches that
// persist hold across them, as in a session.
//
// Several servers with the same key ([WithRunKey]) and one shared store
// (package redistoolset's, say) serve one client's run as one, whichever
// of them each request reaches; a run is held by one server at a time
// (see [toolset.WithRunLease]), and a request for a run another server
// is using waits for it, for five seconds at most.
//
// With a [WithRunContext] function and no [WithRunOptions], requests
// without a session are runs of their own, ended with the request, and
// carry no handle: the run context function is what says who a client is,
// and it cannot be applied to a run resumed from a store.
func WithRunStore(store toolset.RunStore) ServerOption {
	return func(c *serverConfig) { c.store = store }
}

// WithRunKey sets the key that signs and checks run handles (see
// [WithRunStore]), at least [MinRunKeyBytes] long; the default is a
// random key made for the server, so that its handles are good with it
// alone. Give servers that share a run store the same key. Handles signed
// with one of the previous keys are still good until they expire: to
// change keys, give every server the new key with the old one as
// previous, then, once the old handles have expired, the new one alone.
// NewServer panics with a key shorter than MinRunKeyBytes.
//
// A handle is signed with HMAC-SHA256 over the run's random ID, its
// expiry and the client's binding (see [WithRunBinding]): it cannot be
// forged or changed without the key, and it is refused when it expired
// or another client presents it.
func WithRunKey(key []byte, previous ...[]byte) ServerOption {
	return func(c *serverConfig) {
		c.key, c.keySet = append([]byte(nil), key...), true
		c.previousKeys = nil
		for _, k := range previous {
			c.previousKeys = append(c.previousKeys, append([]byte(nil), k...))
		}
	}
}

// WithRunHandleTTL sets how long a run handle is good for after the
// result that carried it, and how long its run's saved state is kept
// after its latest save; the default is [DefaultRunHandleTTL].
func WithRunHandleTTL(d time.Duration) ServerOption {
	return func(c *serverConfig) { c.handleTTL = d }
}

// WithRunOptions sets the function that gives the options of the runs of
// requests without a session (see [RunOptionsFunc]).
func WithRunOptions(fn RunOptionsFunc) ServerOption {
	return func(c *serverConfig) { c.runOpts = fn }
}

// WithRunBinding sets the function that names the client a request comes
// from, to which a run handle is bound: a handle minted for one binding
// is refused from another. The default is the user ID of the request's
// verified bearer token (the SDK's auth.TokenInfo), or "" for a request
// without one. A panic in fn fails the request. A handle bound to ""
// (no authentication) is a bearer secret: whoever holds it has the run.
func WithRunBinding(fn func(*Request) string) ServerOption {
	return func(c *serverConfig) { c.binding = fn }
}

// WithListTTL sets the ttlMs that tools/list results carry (SEP-2549):
// how long a 2026-07-28 client may use a list before it lists again. The
// default is zero: the list is stale at once, since a tool search's reveal
// or a spent failure budget changes it from one request to the next.
// Clients that listen for list changes (subscriptions/listen) are told of
// a reveal, so a server whose clients all listen may set it higher. The
// cacheScope is always "private": a list is the client's run's.
func WithListTTL(d time.Duration) ServerOption {
	return func(c *serverConfig) { c.listTTL = d }
}

// defaultBinding is the default of WithRunBinding.
func defaultBinding(r *Request) string {
	if r.Extra != nil && r.Extra.TokenInfo != nil {
		return r.Extra.TokenInfo.UserID
	}
	return ""
}

// setupHandles sets up the server's run handles from cfg.
func (s *Server) setupHandles(cfg *serverConfig) {
	if cfg.runCtx != nil && cfg.runOpts == nil {
		return
	}
	key := cfg.key
	if !cfg.keySet {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails
	}
	for _, k := range append([][]byte{key}, cfg.previousKeys...) {
		if len(k) < MinRunKeyBytes {
			panic(fmt.Sprintf("mcptoolset: WithRunKey: a key of %d bytes; it must have %d at least", len(k), MinRunKeyBytes))
		}
	}
	ttl := cfg.handleTTL
	if ttl <= 0 {
		ttl = DefaultRunHandleTTL
	}
	store := cfg.store
	if store == nil {
		store = newLocalRunStore(DefaultMaxStoredRuns)
	}
	s.keys = &handleKeys{key: key, previous: cfg.previousKeys, ttl: ttl, now: time.Now}
	s.runOpts, s.binding = cfg.runOpts, cfg.binding
	if s.binding == nil {
		s.binding = defaultBinding
	}
	s.handles = &handleRuns{store: store, logger: s.logger}
}

// usesHandle reports whether r, a request without a session of its own,
// carries on a run by handle: a request over HTTP whose session has no
// ID (a stateless handler's, or a 2026-07-28 client's).
func (s *Server) usesHandle(r *Request) bool {
	return s.handles != nil && (r.Method == "tools/list" || r.Method == "tools/call") &&
		r.Session != nil && r.Session.ID() == "" && r.Extra != nil
}

// handleContext is context for a request that carries on a run by handle.
func (s *Server) handleContext(ctx context.Context, method string, req mcp.Request, r *Request) (_ context.Context, built, end func(), err error) {
	binding := s.binding(r)
	var id [handleIDLen]byte
	h, present, err := requestHandle(req)
	if err != nil {
		return nil, nil, nil, err
	}
	if present {
		if id, err = s.keys.check(h, binding); err != nil {
			return nil, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error() + "; send the request without _meta[" + MetaRunHandle + "] to begin a new run"}
		}
	} else {
		id = newRunID()
	}
	r.RunID = runIDString(id)
	r.handle = s.keys.mint(id, binding)
	options := func(ctx context.Context) ([]toolset.RunOption, error) {
		if s.runOpts == nil {
			return nil, nil
		}
		opts, err := s.runOpts(ctx, r)
		if err != nil {
			return nil, s.refusal(ctx, method, req, err)
		}
		return opts, nil
	}
	if !present && method == "tools/list" {
		// A new run that only lists has nothing to save: its handle
		// names a run with no state yet, which is what the store has.
		opts, err := options(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		rc := toolset.NewRun(r.RunID, opts...)
		if err := rc.Err(); err != nil {
			rc.End()
			return nil, nil, nil, s.internal(ctx, method, req, fmt.Errorf("mcptoolset: run %s: %w", r.RunID, err))
		}
		return rc.Turn(context.WithValue(ctx, requestKey{}, r)), func() {}, rc.End, nil
	}
	resume := func(ctx context.Context) (*toolset.RunContext, error) {
		opts, err := options(ctx)
		if err != nil {
			return nil, err
		}
		opts = append(opts, toolset.WithStateTTL(s.keys.ttl))
		rc, err := toolset.ResumeRun(ctx, s.handles.store, r.RunID, opts...)
		if err != nil {
			return nil, err
		}
		return rc, nil
	}
	e, err := s.handles.acquire(ctx, r.RunID, resume)
	if err != nil {
		var je *jsonrpc.Error
		switch {
		case errors.As(err, &je):
			return nil, nil, nil, je
		case heldElsewhere(err):
			return nil, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the run of this run handle is busy on another server; retry"}
		case ctx.Err() != nil:
			return nil, nil, nil, ctx.Err()
		}
		return nil, nil, nil, s.internal(ctx, method, req, fmt.Errorf("mcptoolset: resuming run %s: %w", r.RunID, err))
	}
	if err := e.turn.lock(ctx); err != nil {
		s.handles.release(r.RunID, e)
		return nil, nil, nil, err
	}
	built = sync.OnceFunc(e.turn.unlock)
	end = func() {
		built()
		s.handles.release(r.RunID, e)
	}
	return e.rc.Turn(context.WithValue(ctx, requestKey{}, r)), built, end, nil
}

// requestHandle returns the run handle req carries in params._meta, and
// whether it carries one; a value that is not a string is an error.
func requestHandle(req mcp.Request) (string, bool, error) {
	p := req.GetParams()
	if p == nil {
		return "", false, nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return "", false, nil
	}
	v, ok := p.GetMeta()[MetaRunHandle]
	if !ok {
		return "", false, nil
	}
	h, ok := v.(string)
	if !ok {
		return "", false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "malformed run handle: _meta[" + MetaRunHandle + "] is not a string"}
	}
	return h, true, nil
}

// setHandle puts the run handle of the request under ctx, if any, in
// meta, which it returns.
func setHandle(ctx context.Context, meta mcp.Meta) mcp.Meta {
	r := RequestFromContext(ctx)
	if r == nil || r.handle == "" {
		return meta
	}
	if meta == nil {
		meta = mcp.Meta{}
	}
	meta[MetaRunHandle] = r.handle
	return meta
}
