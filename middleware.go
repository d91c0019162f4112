package toolset

import (
	"context"
	"sync"
	"unsafe"
)

// Handler runs one tool call: the tool's code, or the next middleware in
// the chain.
type Handler func(ctx context.Context, call ToolCall) (any, error)

// Middleware wraps a tool's handler, like net/http middleware: logging,
// tracing, metrics, redaction. It runs after the arguments are validated and
// sees the call as the model made it (surface name, call ID, arguments) and
// the result or error of the handler.
type Middleware func(next Handler) Handler

// WithMiddleware wraps the tool's handler in mws, the first outermost. The
// middleware belongs to the tool: every renamed or prefixed copy runs it.
// The chain is composed here, once; a middleware that panics while it
// wraps the handler makes the tool unusable ([Tool.Err] reports a
// [*PanicError]).
func WithMiddleware(mws ...Middleware) ToolOption {
	return func(t *Tool) {
		for _, m := range mws {
			if m != nil {
				t.core.mw = append(t.core.mw, m)
			}
		}
		t.core.chain = t.core.base
		if len(t.core.mw) > 0 {
			t.core.chain = t.core.composeChain()
		}
	}
}

// composeChain wraps the handler in the tool's middleware. A panic leaves
// the chain a handler that fails, and the tool unusable.
func (c *toolCore) composeChain() (h Handler) {
	defer func() {
		if p := recover(); p != nil {
			pe := newPanicError("middleware", c.name, "", p)
			if c.err == nil {
				c.err = pe
			}
			h = func(context.Context, ToolCall) (any, error) { return nil, pe }
		}
	}()
	return compose(c.guardedBase, c.mw)
}

// compose wraps h in mws, the first outermost.
func compose(h Handler, mws []Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			h = mws[i](h)
		}
	}
	return h
}

// layer is the middleware a Wrapper adds to the copies of the tools it
// yields. A copy that went through several wrappers has a chain of layers,
// the outermost first; the tool's state is still the original's.
type layer struct {
	mws   []Middleware
	inner *layer

	mu       sync.Mutex
	handlers map[*toolCore]Handler
}

// handler returns the composed handler of c under this layer and the ones
// inside it, composing it once per tool.
func (l *layer) handler(c *toolCore) Handler {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.handlers[c]; ok {
		return h
	}
	next := c.chain
	if len(c.mw) == 0 {
		next = c.guardedBase // tell a panicking handler from the middleware
	}
	if l.inner != nil {
		next = l.inner.handler(c)
	}
	h := compose(next, l.mws)
	if l.handlers == nil {
		l.handlers = make(map[*toolCore]Handler)
	}
	l.handlers[c] = h
	return h
}

// wrapped memoises a Wrapper's middleware copies of one snapshot.
type wrapped struct {
	mws *Middleware // identity of the Wrapper's middleware slice
	n   int
	out *snapshot
}

// withMiddleware returns v with every tool copied under a layer of mws,
// memoised on the input snapshot and the identity of mws.
func withMiddleware(v view, mws []Middleware) view {
	key, n := unsafe.SliceData(mws), len(mws)
	in := v.snap
	if w := in.wrapped.find(func(w *wrapped) bool { return w.mws == key && w.n == n }); w != nil {
		return view{snap: w.out, keep: v.keep}
	}
	tools := make([]Tool, len(in.tools))
	layers := make(map[*layer]*layer)
	for i, t := range in.tools {
		l, ok := layers[t.mw]
		if !ok {
			l = &layer{mws: mws, inner: t.mw}
			layers[t.mw] = l
		}
		t.mw = l
		tools[i] = t
	}
	out := &snapshot{tools: tools, from: in}
	in.wrapped.store(&wrapped{mws: key, n: n, out: out})
	return view{snap: out, keep: v.keep}
}
