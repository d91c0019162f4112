package mcptoolset

import (
	"context"
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
}

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
			return nil, c.errorf("list tools", "", fmt.Errorf("the server's pages do not end (cursor %q after %d pages)", textcut.Clip(res.NextCursor, 64), page))
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
			ie = &InvalidToolError{Server: c.cfg.name, Tool: textcut.Clip(d.Name, maxNameBytes), Err: err}
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
		return nil, c.errorf("list tools", "", joinRefusals(invalid))
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
