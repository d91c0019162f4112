package toolsettest

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gotoolset/toolset"
)

// created is the creation time of every reply, for stable bodies.
const created = 1700000000

// openAITool is a function tool of either OpenAI API: Chat Completions
// nests the fields under "function", the Responses API does not.
type openAITool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
	Function    *openAITool     `json:"function"`
}

// openAIRequest is what both OpenAI APIs' requests share.
type openAIRequest struct {
	Model             string          `json:"model"`
	Stream            bool            `json:"stream"`
	Tools             *[]openAITool   `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls"`
}

// sent returns the function tools of the request.
func (r openAIRequest) sent() []SentTool {
	if r.Tools == nil {
		return nil
	}
	var out []SentTool
	for _, t := range *r.Tools {
		if t.Function != nil {
			t = *t.Function
		} else if t.Type != "function" {
			continue
		}
		out = append(out, SentTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict})
	}
	return out
}

type chatWire struct{}

func (chatWire) match(path string) (string, bool) { return "", path == "/v1/chat/completions" }

func (chatWire) decode(body []byte, req *ModelRequest) (rules, error) {
	var r struct {
		openAIRequest
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return rules{}, err
	}
	req.Model, req.Tools = r.Model, r.sent()
	for _, msg := range r.Messages {
		if msg.Role == "tool" {
			if err := req.addResult(msg.ToolCallID, msg.Content, false); err != nil {
				return rules{}, err
			}
		}
	}
	// OpenAI answers these with status 400.
	ru := rules{stream: r.Stream}
	switch {
	case r.Tools != nil && len(*r.Tools) == 0:
		ru.refusal = "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead."
	case r.Tools == nil && r.ToolChoice != nil:
		ru.refusal = "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
	case r.Tools == nil && r.ParallelToolCalls != nil:
		ru.refusal = "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified."
	}
	return ru, nil
}

func (chatWire) reply(n int, model string, calls []toolset.ToolCall, text string) (any, error) {
	msg := map[string]any{"role": "assistant", "content": text, "refusal": nil}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
		msg["content"] = nil
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": stringArgs(c)}})
		}
		msg["tool_calls"] = tcs
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": created, "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil, "message": msg}},
		"usage":   map[string]any{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
	}, nil
}

// stream is the n-th reply as Chat Completions streams it: a chunk with
// the role, the text cut after each space or each call (its ID and name,
// then its arguments in two pieces), and a last chunk with the finish
// reason.
func (chatWire) stream(n int, model string, calls []toolset.ToolCall, text string) ([]sseEvent, error) {
	id := fmt.Sprintf("chatcmpl-%d", n)
	chunk := func(delta map[string]any, finish any) sseEvent {
		return sseEvent{data: map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		}}
	}
	events := []sseEvent{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
		for i, c := range calls {
			events = append(events, chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""},
			}}}, nil))
			for _, piece := range halves(stringArgs(c)) {
				events = append(events, chunk(map[string]any{"tool_calls": []any{map[string]any{
					"index": i, "function": map[string]any{"arguments": piece},
				}}}, nil))
			}
		}
	} else {
		for _, piece := range words(text) {
			events = append(events, chunk(map[string]any{"content": piece}, nil))
		}
	}
	return append(events, chunk(map[string]any{}, finish), sseEvent{data: "[DONE]"}), nil
}

// halves cuts s in two pieces of whole characters, as JSON strings are
// UTF-8.
func halves(s string) []string {
	half := len(s) / 2
	for half > 0 && !utf8.RuneStart(s[half]) {
		half--
	}
	return []string{s[:half], s[half:]}
}

// words cuts s after each space.
func words(s string) []string {
	var out []string
	for s != "" {
		piece := s
		if i := strings.IndexByte(s, ' '); i >= 0 {
			piece = s[:i+1]
		}
		s = s[len(piece):]
		out = append(out, piece)
	}
	return out
}

type responsesWire struct{}

func (responsesWire) match(path string) (string, bool) { return "", path == "/v1/responses" }

func (responsesWire) decode(body []byte, req *ModelRequest) (rules, error) {
	var r struct {
		openAIRequest
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return rules{}, err
	}
	req.Model, req.Tools = r.Model, r.sent()
	var items []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	if len(r.Input) > 0 && r.Input[0] == '[' {
		if err := json.Unmarshal(r.Input, &items); err != nil {
			return rules{}, fmt.Errorf("input: %w", err)
		}
	}
	for _, it := range items {
		if it.Type == "function_call_output" {
			if err := req.addResult(it.CallID, it.Output, false); err != nil {
				return rules{}, err
			}
		}
	}
	return rules{stream: r.Stream}, nil
}

func (responsesWire) reply(n int, model string, calls []toolset.ToolCall, text string) (any, error) {
	var output []any
	for i, c := range calls {
		output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", n, i+1),
			"call_id": c.ID, "name": c.Name, "arguments": stringArgs(c), "status": "completed"})
	}
	if len(calls) == 0 {
		output = append(output, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}})
	}
	return map[string]any{
		"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": created, "status": "completed",
		"model": model, "output": output,
	}, nil
}
