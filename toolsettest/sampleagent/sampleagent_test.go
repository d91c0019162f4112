package sampleagent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/gotoolset/toolset/toolsettest/sampleagent"
	"github.com/stretchr/testify/require"
)

// A loop written against the Chat Completions wire JSON by hand, without
// an SDK, runs the sample agent end to end, and AssertRun accepts it.
func TestSampleAgentRunsAgainstTheScriptedModel(t *testing.T) {
	model := toolsettest.NewScriptedModel(t, toolsettest.OpenAIChat, sampleagent.Script()...)
	tools, err := toolset.BuildTools(t.Context(), "assistant", sampleagent.Tools()...)
	require.NoError(t, err)
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var sent []map[string]any
	for tl := range tools.All() {
		params, err := tl.ParametersJSON()
		require.NoError(t, err)
		sent = append(sent, map[string]any{"type": "function", "function": fn{tl.Name, tl.Description, params}})
	}
	messages := []map[string]any{{"role": "user", "content": sampleagent.Question}}
	for range 3 {
		body, err := json.Marshal(map[string]any{"model": "gpt-test", "messages": messages, "tools": sent})
		require.NoError(t, err)
		resp, err := model.Client().Post(model.URL()+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		var reply struct {
			Choices []struct {
				Message struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(raw, &reply), string(raw))
		msg := reply.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			require.Equal(t, sampleagent.Answer, msg.Content)
			sampleagent.AssertRun(t, model.Requests(), sampleagent.SentTools(), false)
			return
		}
		var verbatim struct {
			Choices []struct {
				Message struct {
					ToolCalls []json.RawMessage `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(raw, &verbatim))
		raws := verbatim.Choices[0].Message.ToolCalls
		messages = append(messages, map[string]any{"role": "assistant", "tool_calls": raws})
		for _, c := range msg.ToolCalls {
			res, err := tools.Execute(t.Context(), toolset.ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)})
			text := fmt.Sprint(res)
			if err != nil {
				var ok bool
				text, ok = toolset.ErrorText(err)
				require.True(t, ok, "an error the model sees: %v", err)
			}
			messages = append(messages, map[string]any{"role": "tool", "tool_call_id": c.ID, "content": text})
		}
	}
	t.Fatal("no answer")
}
