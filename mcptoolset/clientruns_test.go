package mcptoolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// names builds a turn of the run from ts and returns the names listed.
func names(t *testing.T, run *toolset.RunContext, ts toolset.Toolset) (context.Context, *toolset.ToolList, []string) {
	t.Helper()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "agent", ts)
	require.NoError(t, err)
	return turn, tools, tools.Names()
}

// This package's client keeps a 2026-07-28 server's run handle and sends
// it back: a toolset served over HTTP behind two runners behaves as it
// does in process. A tool search's reveal is listed in the next turn and
// callable, though every request may reach another runner.
func TestClientKeepsTheServersRunAcrossRequests(t *testing.T) {
	checkLeaks(t)
	url, hits := runners(t, searchable)
	ts := mcptoolset.NewHTTP(url, mcptoolset.WithName("billing"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()

	turn, tools, listed := names(t, run, ts)
	assert.Equal(t, []string{"tool_search"}, listed)
	res, err := tools.Execute(turn, toolset.ToolCall{ID: "1", Name: "tool_search", Args: json.RawMessage(`{"query":"refund","top_k":1}`)})
	require.NoError(t, err)
	require.NotNil(t, res)

	for range 3 {
		turn, tools, listed = names(t, run, ts)
		assert.Equal(t, []string{"refund_payment", "tool_search"}, listed, "the reveal is listed: the result said the list changed")
		res, err = tools.Execute(turn, toolset.ToolCall{ID: "2", Name: "refund_payment", Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		text, _ := toolset.ResultText(res)
		assert.Equal(t, "refunded", text)
	}
	assert.Positive(t, hits[0].Load())
	assert.Positive(t, hits[1].Load())
}

// A failure budget of the served tool binds across requests of this
// package's client: the server's run, named by the handle the client sends
// back, counts every failure.
func TestClientsFailuresCountInOneServerRun(t *testing.T) {
	checkLeaks(t)
	var calls atomic.Int32
	flaky := func() toolset.Toolset {
		return toolset.NewFunction(toolset.NewTool("flaky", "Fails.", func(context.Context, struct{}) (string, error) {
			calls.Add(1)
			return "", toolset.NewModelError("the backend is down")
		}, toolset.WithMaxFailures(2)))
	}
	url, _ := runners(t, flaky)
	ts := mcptoolset.NewHTTP(url, mcptoolset.WithName("ops"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()
	for range 4 {
		turn := run.Turn(context.Background())
		tools, err := toolset.BuildTools(turn, "agent", ts)
		require.NoError(t, err)
		if _, ok := tools.Lookup("flaky"); !ok {
			continue
		}
		_, err = tools.Execute(turn, toolset.ToolCall{ID: "c", Name: "flaky", Args: json.RawMessage(`{}`)})
		_, visible := toolset.ErrorText(err)
		assert.True(t, visible)
	}
	assert.Equal(t, int32(2), calls.Load(), "the server's budget of two failures binds its client")
}

// A server that no longer knows the handle (its key changed, or the handle
// expired) refuses it before anything runs; the client asks once more
// without it, beginning a new run there, and the call succeeds.
func TestClientBeginsANewRunWhenTheServerRefusesItsHandle(t *testing.T) {
	checkLeaks(t)
	var calls atomic.Int32
	echo := toolset.NewFunction(toolset.NewTool("echo", "Echo.", func(context.Context, struct{}) (string, error) {
		calls.Add(1)
		return "ok", nil
	}))
	serve := func(key byte) http.Handler {
		return mcptoolset.NewServer(echo, mcptoolset.WithRunKey(bytes.Repeat([]byte{key}, 32))).HTTPHandler(nil)
	}
	var current atomic.Pointer[http.Handler]
	h := serve(1)
	current.Store(&h)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(hs.Close)

	ts := mcptoolset.NewHTTP(hs.URL, mcptoolset.WithName("echo"))
	t.Cleanup(func() { _ = ts.Close() })
	run := toolset.NewRun("agent-run")
	defer run.End()
	call := func() error {
		turn, tools, _ := names(t, run, ts)
		_, err := tools.Execute(turn, toolset.ToolCall{ID: "c", Name: "echo", Args: json.RawMessage(`{}`)})
		return err
	}
	require.NoError(t, call())
	h2 := serve(2) // the server's key changed: its old handles are refused
	current.Store(&h2)
	require.NoError(t, call(), "the refused handle is dropped and the call made again")
	assert.Equal(t, int32(2), calls.Load(), "each call ran once")
}
