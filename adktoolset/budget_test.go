package adktoolset_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/adktoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"
)

// The run's turn budget holds for the calls of a model step through
// the bridge: the step's results together stay within it, the first
// reaching the model whole and the others cut with the marker; the next
// step begins afresh.
func TestRunnerTurnResultBudget(t *testing.T) {
	text := strings.Repeat("x", 3000)
	dump := toolset.NewTool("dump", "Dumps.", func(context.Context, struct{}) (string, error) { return text, nil })
	var step1, step2 map[string]map[string]any
	m := &scripted{steps: []func(*model.LLMRequest) *genai.Content{
		func(*model.LLMRequest) *genai.Content {
			return calls(call("c1", "dump", nil), call("c2", "dump", nil), call("c3", "dump", nil))
		},
		func(req *model.LLMRequest) *genai.Content {
			step1 = responses(req)
			return calls(call("c4", "dump", nil))
		},
		func(req *model.LLMRequest) *genai.Content { step2 = responses(req); return answer("done") },
	}}
	ts := adktoolset.New("lib", []toolset.Toolset{toolset.NewFunction(dump)}, adktoolset.WithRunOptions(func(agent.ReadonlyContext) []toolset.RunOption {
		return []toolset.RunOption{toolset.WithTurnResultBudget(toolset.ResultBudget{MaxBytes: 5000})}
	}))
	t.Cleanup(func() { _ = ts.Close() })
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Toolsets: []tool.Toolset{ts}})
	require.NoError(t, err)
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: svc})
	require.NoError(t, err)
	_, err = svc.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	require.NoError(t, err)
	for _, err := range r.Run(t.Context(), "u", "s", userText("dump"), agent.RunConfig{}) {
		require.NoError(t, err)
	}
	total, whole, cut := 0, 0, 0
	for _, id := range []string{"c1", "c2", "c3"} {
		c := fmt.Sprint(step1[id]["result"])
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
	assert.Equal(t, text, step2["c4"]["result"], "the next step's budget begins afresh")
}
