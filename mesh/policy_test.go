package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// policyMesh publishes the demo package as "gated" (its stored
// configuration asks for approval) and "scoped" (it requires a scope), on
// one runtime, and returns a client that knows neither configuration.
func policyMesh(t *testing.T) (*Client, func(corr string) *call) {
	t.Helper()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "gated", 1, meshPackage(t, ""), map[string]any{"hil": "true"})
	publish(t, nc, "scoped", 1, meshPackage(t, ""), map[string]any{"required_scopes": "mesh:admin"})
	startRuntime(t, nc, "", "rt1", 2)
	// The calls' first status may take a while on a loaded machine (the
	// runtime starts the tool's process): how long is not what these
	// tests check.
	c, err := NewClient(context.Background(), connect(t, s), &ClientOptions{Agent: "agent1", Logger: quietLogger(), AcceptTimeout: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, func(corr string) *call { return listen(t, nc, "raw", corr) }
}

// approve runs call in the run of ctx as the provider adapters do: a call
// that waits for approval asks approver, the run records the answer, and
// the call runs again.
func approve(ctx context.Context, list *toolset.ToolList, call toolset.ToolCall, approver toolset.Approver) (any, error) {
	out, err := list.Execute(ctx, call)
	var are *toolset.ApprovalRequiredError
	if !errors.As(err, &are) {
		return out, err
	}
	ok, reason, err := approver(ctx, are.Call)
	if err != nil {
		return nil, err
	}
	rc := toolset.FromContext(ctx)
	if ok {
		rc.RecordApproval(are.Call)
	} else {
		rc.RecordDenial(are.Call, reason)
	}
	return list.Execute(ctx, call)
}

// A tool whose runtime-side configuration asks for approval waits for the
// run's Approver over the mesh, as in process.
func TestHILOverTheMesh(t *testing.T) {
	t.Parallel()
	c, _ := policyMesh(t)
	run := toolset.NewRun("hil")
	defer run.End()
	ctx := run.Turn(context.Background())
	ts := c.Toolset("gated", nil)
	list, err := toolset.BuildTools(ctx, "agent1", ts)
	require.NoError(t, err)
	assert.Equal(t, toolpkg.ToolPolicy{Approval: true}, ts.Policies()["echo"])
	assert.Equal(t, []string{"api_key"}, ts.Policies()["keyed"].Missing)

	var asked atomic.Int32
	yes := func(_ context.Context, call toolset.ToolCall) (bool, string, error) {
		asked.Add(1)
		assert.Equal(t, "gated__echo", call.Name)
		return true, "", nil
	}
	out, err := approve(ctx, list, toolset.ToolCall{ID: "c1", Name: "gated__echo", Args: json.RawMessage(`{"text":"hi"}`)}, yes)
	require.NoError(t, err)
	assert.Equal(t, "echo: hi", modelText(t, out))
	assert.Equal(t, int32(1), asked.Load())

	no := func(context.Context, toolset.ToolCall) (bool, string, error) { return false, "not today", nil }
	out, err = approve(ctx, list, toolset.ToolCall{ID: "c2", Name: "gated__echo", Args: json.RawMessage(`{"text":"hi"}`)}, no)
	if err == nil {
		assert.Contains(t, modelText(t, out), "not today")
	} else {
		assert.Contains(t, err.Error(), "not today")
	}

	// Without an approver, the call stops the run, and never reaches a
	// runtime.
	_, err = list.Execute(ctx, toolset.ToolCall{ID: "c3", Name: "gated__echo", Args: json.RawMessage(`{"text":"hi"}`)})
	var are *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &are)
}

// A tool that requires a scope is hidden from a run without it, and
// callable with it; the runtime refuses an invoke whose scopes do not
// cover it, and one of a tool that needs approval that does not say it
// was given.
func TestRequiredScopesOverTheMesh(t *testing.T) {
	t.Parallel()
	c, raw := policyMesh(t)
	ts := c.Toolset("scoped", nil)

	without := toolset.NewRun("no-scope", toolset.WithValue(toolpkg.Scopes, []string{"mesh:read"}))
	defer without.End()
	list, err := toolset.BuildTools(without.Turn(context.Background()), "agent1", ts)
	require.NoError(t, err)
	assert.Empty(t, list.Names())

	with := toolset.NewRun("scope", toolset.WithValue(toolpkg.Scopes, []string{"mesh:read", "mesh:admin"}))
	defer with.End()
	ctx := with.Turn(context.Background())
	list, err = toolset.BuildTools(ctx, "agent1", ts)
	require.NoError(t, err)
	assert.Contains(t, list.Names(), "scoped__echo")
	out, err := list.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "scoped__echo", Args: json.RawMessage(`{"text":"in"}`)})
	require.NoError(t, err)
	assert.Equal(t, "echo: in", modelText(t, out))
	assert.Equal(t, []string{"mesh:admin"}, ts.Policies()["echo"].Scopes)

	// The runtime's own checks, for a caller that does not apply them.
	nc := c.nc
	for i, tc := range []struct {
		tool   string
		extra  func(*InvokeParams)
		code   string
		errMsg string
	}{
		{"scoped__echo", nil, CodeToolNotFound, "requires scopes the call does not carry: mesh:admin"},
		{"scoped__echo", func(p *InvokeParams) { p.Scopes = []string{"mesh:read"} }, CodeToolNotFound, "mesh:admin"},
		{"scoped__echo", func(p *InvokeParams) { p.Scopes = []string{"mesh:admin"} }, "", ""},
		{"gated__echo", nil, CodeInvalidRequest, "requires a human's approval"},
		{"gated__echo", func(p *InvokeParams) { p.Approved = true }, "", ""},
	} {
		corr := "p" + string(rune('a'+i))
		rc := raw(corr)
		resp, _ := rc.send(t, nc, invokeMsg(t, "", "raw", corr, tc.tool, map[string]any{"text": "x"}, tc.extra), 30*time.Second)
		if tc.code == "" {
			assert.Equal(t, "echo: x", result(t, resp).ToolResult.Text)
			continue
		}
		require.NotNil(t, resp.Error, "%d", i)
		assert.Equal(t, tc.code, resp.Error.Code)
		assert.Contains(t, resp.Error.Message, tc.errMsg)
		if tc.code == CodeToolNotFound {
			assert.Equal(t, []string{"mesh:admin"}, errorData(t, resp).MissingScopes)
		}
	}
}

// An invoke's scopes are bounded like every other field.
func TestHostileInvokeScopes(t *testing.T) {
	t.Parallel()
	c, raw := policyMesh(t)
	many := make([]string, MaxScopes+1)
	for i := range many {
		many[i] = "s"
	}
	for i, scopes := range [][]string{many, {strings.Repeat("s", MaxScopeBytes+1)}, {""}} {
		corr := "s" + string(rune('a'+i))
		rc := raw(corr)
		resp, _ := rc.send(t, c.nc, invokeMsg(t, "", "raw", corr, "scoped__echo", map[string]any{"text": "x"}, func(p *InvokeParams) { p.Scopes = scopes }), 30*time.Second)
		require.NotNil(t, resp.Error)
		assert.Equal(t, CodeInvalidRequest, resp.Error.Code)
		assert.Contains(t, resp.Error.Message, "scopes")
	}
}

// An init answer's required scopes are checked before they are used: a
// runtime cannot make a tool's filter unbounded or meaningless.
func TestHostileInitScopes(t *testing.T) {
	t.Parallel()
	base := InitParams{ToolName: "demo__echo", Toolset: "demo", Tool: "echo", Version: 1, Description: "d"}
	ok := base
	ok.RequiredScopes = []string{"a", "b"}
	require.NoError(t, checkInit(&ok))
	for _, scopes := range [][]string{make([]string, MaxScopes+1), {""}, {" "}, {strings.Repeat("s", MaxScopeBytes+1)}, {"\xff"}} {
		ip := base
		ip.RequiredScopes = scopes
		assert.Error(t, checkInit(&ip), "%q", scopes)
	}
}
