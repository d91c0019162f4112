package toolpkg

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// Policies says what the layered configuration makes of each tool, so
// that a toolset served elsewhere can give its tools the same options.
func TestPoliciesResolveApprovalScopesAndMissingKeys(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: available(t)[0]})
	goToolset(t, s, "demo")
	ts := s.ToolsetWithConfig("demo", Config{
		Toolset: map[string]any{"required_scopes": "admin"},
		Tools:   map[string]map[string]any{"greet": {"hil": "true", "required_scopes": []any{"audit", "admin"}}},
	})
	assert.Nil(t, ts.Policies(), "nothing before a listing")
	tools, err := ts.GetTools(context.Background())
	require.NoError(t, err)
	for _, tl := range tools {
		assert.NotEqual(t, "demo__secure", tl.Name, "a tool left out for a missing value stays out when the configuration is discovered again")
	}
	p := ts.Policies()
	assert.Equal(t, ToolPolicy{Approval: true, Scopes: []string{"admin", "audit"}}, p["greet"])
	assert.Equal(t, ToolPolicy{Missing: []string{"api_key"}}, p["secure"], "secure is left out for its key")
	p["greet"].Scopes[0] = "changed"
	assert.Equal(t, "admin", ts.Policies()["greet"].Scopes[0], "a copy")

	// The options apply the policy as the toolset's own tools do.
	tool := toolset.NewRawTool("x", "x", nil, func(context.Context, json.RawMessage) (any, error) { return "ok", nil },
		ToolPolicy{Approval: true, Scopes: []string{"admin"}}.Options()...)
	for _, tc := range []struct {
		scopes []string
		shown  bool
	}{{nil, false}, {[]string{"audit"}, false}, {[]string{"admin", "audit"}, true}} {
		run := toolset.NewRun("policy", toolset.WithValue(Scopes, tc.scopes))
		ctx := run.Turn(context.Background())
		list, err := toolset.BuildTools(ctx, "agent", tool)
		require.NoError(t, err)
		assert.Equal(t, tc.shown, len(list.Names()) == 1, "scopes %v", tc.scopes)
		assert.Equal(t, tc.shown, HasScopes(ctx, []string{"admin"}))
		need, err := tool.NeedsApproval(ctx, nil)
		require.NoError(t, err)
		assert.True(t, need)
		run.End()
	}
	assert.Empty(t, ToolPolicy{}.Options())

	// A failed listing has no policies.
	bad := s.ToolsetWithConfig("demo", Config{Toolset: map[string]any{"hil": 3}})
	_, err = bad.GetTools(context.Background())
	require.Error(t, err)
	assert.Nil(t, bad.Policies())
}
