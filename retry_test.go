package toolset_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetries(t *testing.T) {
	var runs atomic.Int64
	flaky := toolset.NewTool("flaky", "Sometimes fails.", func(_ context.Context, in lookupArgs) (string, error) {
		runs.Add(1)
		if in.ID == 0 {
			return "", toolset.NewModelError("id must not be zero")
		}
		return "ok", nil
	}, toolset.WithMaxRetries(1))
	f := toolset.NewFunction(flaky, echoTool("steady"))
	entries := []toolset.Toolset{f.Prefixed("p"), f.Renamed(map[string]string{"flaky": "renamed", "steady": "steady2"})}
	rc := &toolset.RunContext{RunID: "r"}
	ctx := toolset.NewContext(context.Background(), rc)
	turn := func(step int, stable bool) (context.Context, *toolset.ToolList) {
		r := rc.WithStep(step)
		r.StableToolList = stable
		c := toolset.NewContext(ctx, r)
		tools, err := toolset.BuildTools(c, "a", entries...)
		require.NoError(t, err)
		return c, tools
	}

	c0, tools := turn(0, false)
	assert.Equal(t, []string{"p_flaky", "p_steady", "renamed", "steady2"}, tools.Names())
	for _, name := range []string{"p_flaky", "renamed"} { // two failures, one step
		_, err := call(t, c0, tools, name, `{"id":0}`)
		msg, visible := toolset.ErrorText(err)
		require.True(t, visible)
		assert.Equal(t, "id must not be zero", msg)
	}
	c1, tools := turn(1, false)
	assert.Equal(t, []string{"p_flaky", "p_steady", "renamed", "steady2"}, tools.Names(), "one failed step is within a budget of one retry")
	_, err := call(t, c1, tools, "renamed", `{"bad":true}`) // argument errors count too
	require.Error(t, err)

	_, tools = turn(2, false)
	assert.Equal(t, []string{"p_steady", "steady2"}, tools.Names(), "spent: left out under every name")

	c3, tools := turn(3, true)
	assert.Equal(t, []string{"p_flaky", "p_steady", "renamed", "steady2"}, tools.Names(), "a stable list keeps it")
	tool, _ := tools.Lookup("renamed")
	assert.Equal(t, "[UNAVAILABLE] Sometimes fails.", tool.Description)
	before := runs.Load()
	_, err = call(t, c3, tools, "p_flaky", `{"id":1}`)
	var ue *toolset.UnavailableToolError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, `tool "p_flaky" is not available: its retries are spent (a budget of 1 per run); do without it`, ue.ModelText())
	assert.Equal(t, before, runs.Load())

	// Another run has its own budget.
	other, err := toolset.BuildTools(newRun("r2"), "a", entries...)
	require.NoError(t, err)
	assert.Len(t, other.Names(), 4)
}
