package mcptoolset

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/tracefields"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// call sends tools/call for the tool named name on the server.
func (c *conn) call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	if c.identity {
		h, err := c.held()
		if err != nil {
			return nil, err
		}
		defer func() { _ = h.release() }()
		c = h
	}
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
	ctx, f, land := c.fly(ctx, name, args)
	defer land()
	if ans, err := c.pendingAnswer(ctx, name, args); err != nil {
		return nil, err
	} else if ans != nil {
		// The run approved what the server asked about: answer it.
		ans.Meta, params = params.Meta, ans
	}
	for round := 0; ; round++ {
		res, callErr = s.CallTool(cctx, params)
		if callErr != nil || !res.NeedsInput() {
			break
		}
		ans, err := c.inputRequired(ctx, name, args, res)
		if err != nil {
			return nil, err
		}
		if round > 0 {
			return nil, &InputRequestError{Server: c.cfg.name, Tool: name, Asked: "a confirmation again after it was given"}
		}
		ans.Meta, params = params.Meta, ans
	}
	if id, ok := createdTask(res); callErr == nil && ok {
		// The server runs the call as a task: wait for it.
		if res, callErr = c.awaitTask(ctx, s, name, id); callErr != nil {
			err := callErr
			if connectionLost(err) {
				c.drop(s)
				err = c.explainLost(s, err)
			}
			return nil, c.errorf("call tool", name, err)
		}
	}
	f.mu.Lock()
	ferr := f.err
	f.mu.Unlock()
	if ferr != nil {
		// The server asked on the session, and the run had no answer.
		return nil, ferr
	}
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
