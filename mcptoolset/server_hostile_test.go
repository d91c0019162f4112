package mcptoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const secretMarker = "SECRET-7f3a-postgres://admin:hunter2@10.0.0.5"

// A handler's internal error never reaches the client: it gets an error ID,
// the server's log the error under that ID. An error meant for the model
// still reaches it with its text.
func TestServedInternalErrorTextIsNotSentToClients(t *testing.T) {
	checkLeaks(t)
	leak := toolset.NewTool("leak", "Fails with a secret in its error.", func(context.Context, struct{}) (string, error) {
		return "", fmt.Errorf("connecting to %s: refused", secretMarker)
	})
	model := toolset.NewTool("model", "Fails for the model.", func(context.Context, struct{}) (string, error) {
		return "", toolset.NewModelError("pick another city")
	})
	log, buf := logBuffer()
	srv := mcptoolset.NewServer(toolset.NewFunction(leak, model), mcptoolset.WithServerLogger(log),
		mcptoolset.WithRunContext(func(_ context.Context, req *mcptoolset.Request) (*toolset.RunContext, error) {
			if req.Client != nil && req.Client.Name == "leaky-hook" {
				return nil, errors.New("token store: " + secretMarker)
			}
			return nil, nil
		}))
	cs := connect(t, srv, nil)

	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "leak"})
	id := requireInternal(t, err, buf, secretMarker)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, int64(jsonrpc.CodeInternalError), je.Code)
	assert.Equal(t, "internal error (id "+id+")", je.Message)
	assert.Contains(t, buf.String(), "tool=leak")

	text, isErr := callText(t, cs, "model", nil)
	assert.True(t, isErr)
	assert.Equal(t, "pick another city", text, "errors for the model keep their text")

	// The run context function's own errors are internal too.
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	defer ss.Close()
	_, err = mcp.NewClient(&mcp.Implementation{Name: "leaky-hook", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	requireInternal(t, err, buf, secretMarker)

	// And through a proxy: the consumer sees the ID, not the text.
	remote := mcptoolset.NewInMemory("remote", srv.MCP())
	defer remote.Close()
	tools, err := toolset.BuildTools(context.Background(), "agent", remote)
	require.NoError(t, err)
	_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "leak", Args: nil})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secretMarker)
	assert.Regexp(t, internalErrorRE, err.Error())
}

// A remote client whose crafted request makes a callback panic gets an
// error; the server logs the panic and serves the next request.
func TestServedCallbackPanicsDoNotKillTheServer(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	tool := func(ctx context.Context) string { return mcptoolset.RequestFromContext(ctx).Tool }
	crash := func(ctx context.Context) bool { return tool(ctx) == "crash_filter" }
	handler := toolset.NewTool("echo_args", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		if in.Text == "panic" {
			panic("handler: " + secretMarker)
		}
		return in.Text, nil
	})
	keyed := toolset.NewTool("keyed", "Cached.", func(context.Context, struct {
		K string `json:"k"`
	}) (string, error) {
		return "ok", nil
	}, toolset.WithCache(toolset.CachePolicy{Key: func(_ context.Context, args json.RawMessage) (string, error) {
		if strings.Contains(string(args), "explode") {
			panic("cache key")
		}
		return string(args), nil
	}}))
	approved := toolset.NewTool("approved", "Needs approval.", func(context.Context, struct {
		N int `json:"n"`
	}) (string, error) {
		return "ok", nil
	}, toolset.WithApprovalRequired(func(_ context.Context, _ toolset.Tool, args json.RawMessage) (bool, error) {
		if strings.Contains(string(args), "13") {
			panic("approval predicate")
		}
		return false, nil
	}))
	filtered := toolset.NewFunction(handler, keyed, approved).Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) {
		if crash(ctx) {
			panic("filter")
		}
		if tool(ctx) == "goexit_filter" {
			runtime.Goexit()
		}
		return true, nil
	})
	dynamic := toolset.NewDynamic(func(ctx context.Context) (toolset.Toolset, error) {
		if name := tool(ctx); name == "crash_dynamic" {
			var none []toolset.Toolset
			return none[len(name)], nil // a runtime error, not a value panic
		}
		return filtered, nil
	})
	log, buf := logBuffer()
	srv := mcptoolset.NewServer(dynamic, mcptoolset.WithServerLogger(log),
		mcptoolset.WithRunContext(func(_ context.Context, req *mcptoolset.Request) (*toolset.RunContext, error) {
			if req.Client != nil && req.Client.Name == "crash_hook" {
				panic("run context function")
			}
			return nil, nil
		}))
	srv.MCP().AddPrompt(&mcp.Prompt{Name: "crash"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		panic("an SDK handler")
	})
	cs := connect(t, srv, nil)

	works := func() {
		t.Helper()
		text, isErr := callText(t, cs, "echo_args", map[string]any{"text": "still here"})
		require.False(t, isErr)
		require.Equal(t, "still here", text)
	}
	cases := []struct {
		name, tool string
		args       any
		detail     string
	}{
		{"handler", "echo_args", map[string]any{"text": "panic"}, "handler: " + secretMarker},
		{"filter", "crash_filter", nil, "panicked: filter"},
		{"dynamic function", "crash_dynamic", nil, "index out of range"},
		{"cache key", "keyed", map[string]any{"k": "explode"}, "cache key"},
		{"approval predicate", "approved", map[string]any{"n": 13}, "approval predicate"},
		{"filter calling runtime.Goexit", "goexit_filter", nil, "called runtime.Goexit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			requireInternal(t, err, buf, tc.detail)
			works()
		})
	}
	// The run context function begins a session's run, at its first
	// request: the session's client is refused, the server goes on.
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	_, err = mcp.NewClient(&mcp.Implementation{Name: "crash_hook", Version: "v1"}, nil).Connect(ctx, ct, nil)
	requireInternal(t, err, buf, "run context function")
	_ = ss.Close()
	_ = ss.Wait()
	works()

	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "crash"})
	requireInternal(t, err, buf, "an SDK handler")
	works()
	assert.Contains(t, buf.String(), "stack=", "the panic's stack is logged")

	// A listing whose filter panics: the same.
	var panicking atomic.Bool
	crashList := mcptoolset.NewServer(toolset.NewFunction(echoTool("x")).Filtered(func(context.Context, toolset.Tool) (bool, error) {
		if panicking.Load() {
			panic("listing filter")
		}
		return true, nil
	}), mcptoolset.WithServerLogger(log))
	lc := connect(t, crashList, nil)
	panicking.Store(true)
	_, err = lc.ListTools(ctx, nil)
	requireInternal(t, err, buf, "listing filter")
	panicking.Store(false)
	res, err := lc.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Len(t, res.Tools, 1)
}
