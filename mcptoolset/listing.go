package mcptoolset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type listing struct {
	tools []toolset.Tool
	at    time.Time
	gen   uint64
	ttl   time.Duration // the server's ttlMs, bounded; 0 for none
}

// Bounds on the time a server's ttlMs keeps a listing (see
// [WithCacheTTL]): a longer one is cut to MaxListTTL, a shorter one is
// raised to MinListTTL, so that a server can neither keep a list for
// ever nor make every turn list again.
const (
	MaxListTTL = time.Hour
	MinListTTL = time.Second
)

func (c *conn) invalidate() {
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
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

// fresh reports whether l may still be used: the server did not say that
// its list changed, and neither WithCacheTTL's time nor the server's
// ttlMs has passed.
func (c *conn) fresh(l *listing) bool {
	if c.cfg.noCache || l.gen != c.gen {
		return false
	}
	ttl := c.cfg.ttl
	if l.ttl > 0 && (ttl <= 0 || l.ttl < ttl) {
		ttl = l.ttl
	}
	return ttl <= 0 || time.Since(l.at) < ttl
}

// list fetches the tool list for the callers waiting on f.
func (c *conn) list(ctx context.Context, f *flight) {
	s, err := c.session(ctx)
	var tools []toolset.Tool
	if err == nil {
		c.mu.Lock()
		gen := c.gen // a change notified from now on makes this list stale
		c.mu.Unlock()
		var l *listing
		l, err = guard(c, "list tools", "listing", func() (*listing, error) { return c.fetch(ctx, s) })
		c.mu.Lock()
		if err == nil {
			tools = l.tools
			if !c.ended {
				l.at, l.gen = time.Now(), gen
				c.cache = l
			}
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
// timeout, and makes them into tools. The listing's ttl is the shortest
// positive ttlMs of its pages, bounded.
func (c *conn) fetch(ctx context.Context, s *mcp.ClientSession) (*listing, error) {
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
	ttlMs := 0
	for page := 1; ; page++ {
		var slot pageTTL
		res, err := s.ListTools(context.WithValue(lctx, pageTTLKey{}, &slot), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			if lctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("no complete answer to tools/list within %v (see WithListTimeout): %w", c.cfg.listTimeout, err)
			}
			if connectionLost(err) {
				err = c.explainLost(s, err)
			}
			return nil, c.errorf("list tools", "", err)
		}
		ms := res.TTLMs
		if slot.seen {
			ms = slot.ms
		}
		if ms > 0 && (ttlMs == 0 || ms < ttlMs) {
			ttlMs = ms
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
			return nil, c.errorf("list tools", "", fmt.Errorf("the server's pages do not end (cursor %q after %d pages)", textcut.Clip(res.NextCursor, 64), page))
		}
		cursor = res.NextCursor
	}
	tools, err := c.makeTools(defs)
	if err != nil {
		return nil, err
	}
	return &listing{tools: tools, ttl: listTTL(ttlMs)}, nil
}

// listTTL is the time a server's ttlMs keeps a listing: none for zero or
// less, else within [MinListTTL, MaxListTTL].
func listTTL(ms int) time.Duration {
	switch {
	case ms <= 0:
		return 0
	case ms >= int(MaxListTTL/time.Millisecond):
		return MaxListTTL
	}
	return max(time.Duration(ms)*time.Millisecond, MinListTTL)
}

// pageTTL receives, from takeListTTL, the ttlMs of the page of tools/list
// a ListTools call under a context holding it under pageTTLKey returned.
type pageTTL struct {
	ms   int
	seen bool
}

type pageTTLKey struct{}

// takeListTTL is a sending middleware of the sessions a Toolset opens: it
// moves the ttlMs of each tools/list page out of the result, into the
// call's pageTTL, so that the SDK's own cache (which would keep the page
// for as long as the server says, past a list change asked for by hand,
// WithoutCache and MaxListTTL) never holds it, and the Toolset's cache
// alone decides.
func takeListTTL(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if l, ok := res.(*mcp.ListToolsResult); ok && err == nil && l != nil {
			if slot, ok := ctx.Value(pageTTLKey{}).(*pageTTL); ok {
				slot.ms, slot.seen = l.TTLMs, true
			}
			l.TTLMs = 0
		}
		return res, err
	}
}

// makeTools turns the server's tool definitions into tools, reusing the
// tools of the last listing whose definitions did not change. It refuses
// the definitions that are invalid (see [InvalidToolError]): they are left
// out with a warning, logged once per definition (the first
// maxWarnings of a listing one by one, the others counted in one line),
// or, with WithFailOnInvalidTools, fail the listing.
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
	// The name each tool is offered under, or why it has none, and the
	// server's names of the tools offered under each name.
	offered := make([]string, len(defs))
	why := make([]error, len(defs))
	byOffered := make(map[string][]string, len(defs))
	for i, d := range defs {
		if d == nil || count[d.Name] > 1 {
			continue
		}
		name, err := c.offeredName(d.Name)
		if _, ok := errors.AsType[*toolset.PanicError](err); ok {
			return nil, c.errorf("list tools", "", err) // a bug of the application's, not the server's
		}
		offered[i], why[i] = name, err
		if err == nil {
			byOffered[name] = append(byOffered[name], d.Name)
		}
	}
	groups := map[string]string{} // the clashKey of each offered name given to many
	var invalid []*InvalidToolError
	warned, unwarned := 0, 0
	refuse := func(key string, d *mcp.Tool, err error) {
		ie, ok := c.refused[key]
		if !ok || key == "" {
			ie = &InvalidToolError{Server: c.cfg.name, Tool: textcut.Clip(d.Name, maxNameBytes), Err: err}
			if warned < maxWarnings {
				warned++
				c.cfg.logger.Warn("mcptoolset: refusing an invalid tool of an MCP server", "server", c.cfg.name, "tool", ie.Tool, "error", ie.Err)
			} else {
				unwarned++
			}
		}
		if key != "" {
			refused[key] = ie
		}
		invalid = append(invalid, ie)
	}
	for i, d := range defs {
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
		if why[i] != nil {
			refuse(key, d, why[i])
			continue
		}
		if others := byOffered[offered[i]]; len(others) > 1 {
			// The refusal depends on the others too: keyed by all of them.
			g, ok := groups[offered[i]]
			if !ok {
				g = clashKey(others)
				groups[offered[i]] = g
			}
			refuse(g+key, d, clashError(d.Name, offered[i], others))
			continue
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
		t, err := c.makeTool(d, offered[i])
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
	if unwarned > 0 {
		c.cfg.logger.Warn("mcptoolset: refusing more invalid tools of an MCP server; Toolset.InvalidTools lists them all", "server", c.cfg.name, "more", unwarned)
	}
	if len(invalid) > 0 && c.cfg.failInvalid {
		return nil, c.errorf("list tools", "", joinRefusals(invalid))
	}
	c.known, c.refused = known, refused
	c.mu.Lock()
	c.invalid = invalid
	c.mu.Unlock()
	return tools, nil
}

// maxWarnings bounds the refusals a listing logs one by one.
const maxWarnings = 10

// clashKey is the start of the keys of the refusals of the tools the
// server calls names, to which the mapping gives one name.
func clashKey(names []string) string {
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	return "clash:" + hex.EncodeToString(h.Sum(nil)) + ":"
}

// maxRefusalsJoined bounds the refusals that a listing failed under
// WithFailOnInvalidTools quotes.
const maxRefusalsJoined = 10

// joinRefusals is the error of a listing failed under
// WithFailOnInvalidTools: its first refusals, and how many more there are.
func joinRefusals(invalid []*InvalidToolError) error {
	var errs []error
	for _, e := range invalid[:min(len(invalid), maxRefusalsJoined)] {
		errs = append(errs, e)
	}
	if n := len(invalid) - maxRefusalsJoined; n > 0 {
		errs = append(errs, fmt.Errorf("and %d more invalid tools", n))
	}
	return errors.Join(errs...)
}
