package mcptoolset

import (
	"context"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

// hookNotifications makes the client of opts drop the cached tool list
// when the server says it changed, and pass the server's progress
// notifications on to the calls they name, before calling the handlers
// the application set, under recover.
func (c *conn) hookNotifications(opts *mcp.ClientOptions) {
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
}
