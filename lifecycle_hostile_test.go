package toolset_test

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A child of a run that has ended is no way to go on working in it.
func TestChildOfEndedRunIsUnusable(t *testing.T) {
	run := toolset.NewRun("")
	run.End()
	child := run.NewChild("")
	require.ErrorIs(t, child.Err(), toolset.ErrRunEnded)
	_, err := toolset.BuildTools(child.Turn(context.Background()), "a", toolset.NewFunction())
	require.ErrorIs(t, err, toolset.ErrRunEnded)
	child.End()
}

// A child of a run that cannot be used does not silently become a fresh
// run without the values (a role, a tenant) its parent was meant to have.
func TestChildOfUnusableRunIsUnusable(t *testing.T) {
	live := toolset.NewRun("taken")
	defer live.End()
	dup := toolset.NewRun("taken", toolset.WithValue(Role, "viewer"))
	child := dup.NewChild("")
	defer child.End()
	var conflict *toolset.RunConflictError
	require.ErrorAs(t, child.Err(), &conflict)
	_, err := toolset.BuildTools(child.Turn(context.Background()), "a", toolset.NewFunction())
	require.ErrorAs(t, err, &conflict)

	zero := (&toolset.RunContext{}).NewChild("")
	defer zero.End()
	require.Error(t, zero.Err(), "a child of a RunContext literal")
}

// A run ended while one of its calls runs a sub-agent (an MCP session
// evicted, say) does not let the sub-agent go on building tools and
// calling them in a child of the ended run.
func TestAgentCalledUnderRunEndedMeanwhileDoesNotRun(t *testing.T) {
	run := toolset.NewRun("")
	defer run.End()
	var built error
	agent := &funcAgent{run: func(ctx context.Context, _ string) (string, error) {
		rc := toolset.FromContext(ctx)
		_, built = toolset.BuildTools(rc.Turn(ctx), "helper", toolset.NewFunction())
		return "done", built
	}}
	endFirst := toolset.WithMiddleware(func(next toolset.Handler) toolset.Handler {
		return func(ctx context.Context, call toolset.ToolCall) (any, error) {
			run.End()
			return next(ctx, call)
		}
	})
	tool := toolset.NewAgentTool(agent, endFirst)
	_, err := tool.Execute(run.Turn(context.Background()), toolset.ToolCall{ID: "c1", Args: []byte(`{"prompt":"go"}`)})
	require.Error(t, err)
	assert.ErrorIs(t, built, toolset.ErrRunEnded, "the sub-agent's turn is refused")
}

type funcAgent struct {
	run func(ctx context.Context, prompt string) (string, error)
}

func (a *funcAgent) Name() string        { return "helper" }
func (a *funcAgent) Description() string { return "Helps." }
func (a *funcAgent) Run(ctx context.Context, prompt string) (string, error) {
	return a.run(ctx, prompt)
}
