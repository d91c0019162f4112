package einotoolset_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/einotoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run's turn budget holds for the calls of a model step through
// the bridge: the step's results together stay within it, the first to
// finish reaching the model whole and the others cut with the marker;
// the next step begins afresh.
func TestGraphTurnResultBudget(t *testing.T) {
	text := strings.Repeat("x", 3000)
	dump := toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil })
	ts := einotoolset.New("assistant", toolset.NewFunction(dump))
	m := newScripted(
		calls(call("c1", "dump", `{}`), call("c2", "dump", `{}`), call("c3", "dump", `{}`)),
		calls(call("c4", "dump", `{}`)),
		answer("done"))
	run := toolset.NewRun("eino-budget", toolset.WithTurnResultBudget(toolset.ResultBudget{MaxBytes: 5000}))
	defer run.End()
	ctx := toolset.NewContext(t.Context(), run)
	defer ts.Forget(ctx)
	out, err := agentGraph(t, m, ts).Invoke(ctx, []*schema.Message{schema.UserMessage("dump")})
	require.NoError(t, err)
	assert.Equal(t, "done", out.Content)
	require.Len(t, *m.seen, 3)
	total, whole, cut := 0, 0, 0
	for _, id := range []string{"c1", "c2", "c3"} {
		c := (*m.seen)[1][id]
		total += len(c)
		switch {
		case c == text:
			whole++
		case strings.Contains(c, "bytes left out"):
			cut++
		}
	}
	assert.Equal(t, 1, whole, "one result fits whole")
	assert.Equal(t, 2, cut, "the others are cut, with the marker")
	assert.LessOrEqual(t, total, 5000+256, "the step's results stay within the budget and the least a cut result gets")
	assert.Equal(t, text, (*m.seen)[2]["c4"], "the next step's budget begins afresh")
}
