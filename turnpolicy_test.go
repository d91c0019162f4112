package toolset_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnabledAndPrepare(t *testing.T) {
	var prepares atomic.Int64
	report := toolset.NewTool("report", "Build a report.", func(context.Context, struct{}) (string, error) { return "r", nil },
		toolset.WithEnabled(func(ctx context.Context, _ toolset.Tool) (bool, error) {
			return Role.Get(ctx) != "guest", nil
		}),
		toolset.WithPrepare(func(ctx context.Context, t toolset.Tool) (toolset.Tool, bool, error) {
			prepares.Add(1)
			switch Role.Get(ctx) {
			case "intern":
				return t, false, nil
			case "broken":
				return t, true, errors.New("no quota")
			case "thief":
				t.Name = "stolen"
				return t, true, nil
			}
			t.Description += " Tenant: " + Tenant.Get(ctx) + "."
			return t, true, nil
		}))
	f := toolset.NewFunction(report, echoTool("other"))
	entries := []toolset.Toolset{f.Prefixed("p"), beta{toolset.Wrapper{Wrapped: f.Renamed(map[string]string{"report": "renamed", "other": "other2"})}}, report}
	turn := func(role string) (*toolset.ToolList, error) {
		return toolset.BuildTools(withRole(t, role, toolset.WithValue(Tenant, "acme")), "a", entries...)
	}
	tools, err := turn("admin")
	require.NoError(t, err)
	assert.Equal(t, []string{"p_report", "p_other", "renamed", "other2", "report"}, tools.Names())
	for _, name := range []string{"p_report", "report"} {
		tool, _ := tools.Lookup(name)
		assert.Equal(t, "Build a report. Tenant: acme.", tool.Description)
	}
	tool, _ := tools.Lookup("renamed")
	assert.Equal(t, "[beta] Build a report. Tenant: acme.", tool.Description, "prepared once, below the user's wrapper")
	assert.Equal(t, int64(3), prepares.Load())

	tools, err = turn("guest")
	require.NoError(t, err)
	assert.Equal(t, []string{"p_other", "other2"}, tools.Names())
	tools, err = turn("intern")
	require.NoError(t, err)
	assert.Equal(t, []string{"p_other", "other2"}, tools.Names())
	_, err = turn("broken")
	require.ErrorContains(t, err, `tool "report": prepare: no quota`)
	_, err = turn("thief")
	require.ErrorContains(t, err, "not rename or replace it")
}
