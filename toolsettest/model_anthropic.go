package toolsettest

import (
	"encoding/json"
	"fmt"

	"github.com/gotoolset/toolset"
)

type anthropicWire struct{}

func (anthropicWire) match(path string) (string, bool) { return "", path == "/v1/messages" }

func (anthropicWire) decode(body []byte, req *ModelRequest) (rules, error) {
	var r struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
		Tools  []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return rules{}, err
	}
	req.Model = r.Model
	for _, t := range r.Tools {
		if t.Type == "" || t.Type == "custom" { // not a server tool
			req.Tools = append(req.Tools, SentTool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
		}
	}
	for _, msg := range r.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			IsError   bool            `json:"is_error"`
			Content   json.RawMessage `json:"content"`
		}
		if len(msg.Content) == 0 || msg.Content[0] != '[' {
			continue // text
		}
		if err := json.Unmarshal(msg.Content, &blocks); err != nil {
			return rules{}, fmt.Errorf("message content: %w", err)
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				if err := req.addResult(b.ToolUseID, b.Content, b.IsError); err != nil {
					return rules{}, err
				}
			}
		}
	}
	return rules{stream: r.Stream}, nil
}

func (anthropicWire) reply(n int, model string, calls []toolset.ToolCall, text string) (any, error) {
	var content []any
	if text != "" || len(calls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	for _, c := range calls {
		args, err := objectArgs(c)
		if err != nil {
			return nil, err
		}
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": args})
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": model,
		"stop_reason": stop, "stop_sequence": nil, "content": content,
		"usage": map[string]any{"input_tokens": 0, "output_tokens": 0},
	}, nil
}

// stream is the n-th reply as the Messages API streams it: message_start,
// then each content block (its start, its text cut after each space or a
// call's input in two pieces, its stop), message_delta with the stop
// reason, and message_stop.
func (anthropicWire) stream(n int, model string, calls []toolset.ToolCall, text string) ([]sseEvent, error) {
	for _, c := range calls {
		if _, err := objectArgs(c); err != nil {
			return nil, err
		}
	}
	event := func(name string, fields map[string]any) sseEvent {
		fields["type"] = name
		return sseEvent{name: name, data: fields}
	}
	events := []sseEvent{event("message_start", map[string]any{"message": map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": model,
		"stop_reason": nil, "stop_sequence": nil, "content": []any{},
		"usage": map[string]any{"input_tokens": 0, "output_tokens": 0},
	}})}
	index := 0
	if text != "" || len(calls) == 0 {
		events = append(events, event("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "text", "text": ""}}))
		for _, piece := range words(text) {
			events = append(events, event("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": piece}}))
		}
		events = append(events, event("content_block_stop", map[string]any{"index": index}))
		index++
	}
	for _, c := range calls {
		args, _ := objectArgs(c)
		events = append(events, event("content_block_start", map[string]any{"index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}}))
		for _, piece := range halves(string(args)) {
			events = append(events, event("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}}))
		}
		events = append(events, event("content_block_stop", map[string]any{"index": index}))
		index++
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	return append(events,
		event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 0}}),
		event("message_stop", map[string]any{})), nil
}
