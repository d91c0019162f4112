package mcptoolset

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 server keeps no sessions: the state of a conversation (a
// run, for a server of this package) is named by a handle the server puts
// in each result's _meta and the client sends back in its next request
// (see [MetaRunHandle]). The client side of a connection keeps the latest
// handle it was given and sends it with every request of the connection,
// so that a served toolset keeps one run per connection, as it does per
// session for an older client.

// heldHandle is the run handle a connection was last given.
type heldHandle struct {
	mu     sync.Mutex
	handle string
}

func (h *heldHandle) get() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.handle
}

func (h *heldHandle) set(s string) {
	h.mu.Lock()
	h.handle = s
	h.mu.Unlock()
}

// forget drops the handle if it is still old: a server refused it.
func (h *heldHandle) forget(old string) {
	h.mu.Lock()
	if h.handle == old {
		h.handle = ""
	}
	h.mu.Unlock()
}

// carryRunHandle is the client's sending middleware that sends back the
// connection's run handle and keeps the one each result gives. A server
// that refuses the handle (it expired, or the server's key changed) is
// asked once more without it, which begins a new run there: the request
// was refused before anything ran. A handle longer than a server of this
// package mints is not kept.
//
// A tools/call result that says the run's list changed
// ([MetaListChanged]) calls changed, so that the next turn lists again.
func carryRunHandle(h *heldHandle, changed func()) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p := req.GetParams()
			if p == nil || !carriesRun(method) {
				return next(ctx, method, req)
			}
			sent := h.get()
			if sent != "" {
				setMeta(p, sent)
			}
			res, err := next(ctx, method, req)
			if sent != "" && refusedHandle(err) {
				h.forget(sent)
				setMeta(p, "")
				res, err = next(ctx, method, req)
			}
			if err == nil && res != nil {
				meta := res.GetMeta()
				if s, ok := meta[MetaRunHandle].(string); ok && s != "" && len(s) <= maxRunHandleLen {
					h.set(s)
				}
				if more, _ := meta[MetaListChanged].(bool); more && method == "tools/call" {
					changed()
				}
			}
			return res, err
		}
	}
}

// carriesRun reports whether a request of method belongs to the run.
func carriesRun(method string) bool {
	return method == "tools/list" || method == "tools/call"
}

// setMeta puts handle in p's _meta (or takes it out, for ""), leaving the
// caller's other _meta entries as they are.
func setMeta(p mcp.Params, handle string) {
	old := p.GetMeta()
	m := make(map[string]any, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	if handle == "" {
		delete(m, MetaRunHandle)
	} else {
		m[MetaRunHandle] = handle
	}
	p.SetMeta(m)
}

// refusedHandle reports whether err is a server's refusal of the run
// handle a request carried.
func refusedHandle(err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams && strings.Contains(je.Message, MetaRunHandle)
}
