package toolset_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// researcher is a sub-agent.
type researcher struct{}

func (researcher) Name() string { return "researcher" }

func (researcher) Description() string { return "Researches a topic in depth." }

func (researcher) Run(_ context.Context, prompt string) (string, error) {
	return "findings on " + prompt, nil
}

func TestAgentTool(t *testing.T) {
	tool := toolset.NewAgentTool(researcher{}, toolset.WithTimeout(time.Second, toolset.TimeoutTellModel))
	assert.Equal(t, "researcher", tool.Name)
	assert.Equal(t, "Researches a topic in depth.", tool.Description)
	assert.JSONEq(t, `{"type":"object","properties":{"prompt":{"type":"string","description":"The task for the agent, with everything it needs to know"}},"required":["prompt"],"additionalProperties":false}`, schemaJSON(t, tool))

	wrapped := toolset.Wrapper{Wrapped: toolset.NewFunction(tool).Prefixed("team").Renamed(map[string]string{"team_researcher": "ask_research"}),
		Middleware: []toolset.Middleware{func(next toolset.Handler) toolset.Handler { return next }}}
	tools, err := toolset.BuildTools(context.Background(), "lead", wrapped)
	require.NoError(t, err)
	copy, ok := tools.Lookup("ask_research")
	require.True(t, ok)
	assert.Equal(t, researcher{}, copy.DelegateAgent(), "the agent behind the tool, through every layer")
	got, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "ask_research", Args: json.RawMessage(`{"prompt":"tides"}`)})
	require.NoError(t, err)
	assert.Equal(t, "findings on tides", got)
	assert.Nil(t, echoTool("x").DelegateAgent())
	require.ErrorContains(t, toolset.NewAgentTool(nil).Err(), "nil Agent")
}
