package openaitools

import (
	"encoding/json"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// StableTools keeps the tools array of one conversation the
// same, byte for byte, when a turn shows only some of the tools sent
// before (a filter hid one, a failure budget was spent), so that the
// prompt cache is kept: the earlier array is sent again, with a tool
// choice of allowed_tools naming the turn's tools (or "none" when it shows
// none). A turn that shows a tool not sent before, or a changed one, sends
// its own tools, and the conversation goes on from those.
//
// The tools sent again can be read by the model, not called: the turn's
// list refuses a call of a tool it does not hold. Do not use StableTools
// where tools are hidden because the user may not know of them.
//
// Chat Completions takes the same restriction (a tool_choice of
// allowed_tools): [StableTools.ChatTools] is the same for it.
//
// Use one StableTools per conversation, for every turn of it, and one API
// (ResponseTools or ChatTools) throughout; the zero value is ready to use,
// and it is safe for concurrent use.
type StableTools struct {
	s provider.Stable[responses.ToolUnionParam]
	c provider.Stable[openai.ChatCompletionToolUnionParam]
}

// ChatTools returns the turn's tools as [ChatTools] does (with the same
// options), or the array sent before with the tool choice that restricts
// the model to the turn's tools (allowed_tools, or "none" when the turn
// shows none); the choice is unset when there is nothing to restrict. Set
// both on the request.
func (st *StableTools) ChatTools(tools *toolset.ToolList, opts ...Option) ([]openai.ChatCompletionToolUnionParam, openai.ChatCompletionToolChoiceOptionUnionParam, error) {
	var choice openai.ChatCompletionToolChoiceOptionUnionParam
	params, err := ChatTools(tools, opts...)
	if err != nil {
		return nil, choice, err
	}
	send, restrict, err := st.c.Next(params, chatToolName, func(p openai.ChatCompletionToolUnionParam) ([]byte, error) { return json.Marshal(p) })
	if err != nil {
		return nil, choice, err
	}
	switch {
	case restrict == nil:
	case len(restrict) == 0:
		choice.OfAuto = openai.String(string(openai.ChatCompletionToolChoiceOptionAutoNone))
	default:
		allowed := make([]map[string]any, len(restrict))
		for i, p := range restrict {
			allowed[i] = map[string]any{"type": "function", "function": map[string]any{"name": chatToolName(p)}}
		}
		choice = openai.ToolChoiceOptionAllowedTools(openai.ChatCompletionAllowedToolsParam{Mode: openai.ChatCompletionAllowedToolsModeAuto, Tools: allowed})
	}
	return send, choice, nil
}

// chatToolName is the name of a Chat Completions tool this package sends,
// a function.
func chatToolName(p openai.ChatCompletionToolUnionParam) string {
	if p.OfFunction != nil {
		return p.OfFunction.Function.Name
	}
	return ""
}

// ResponseTools returns the turn's tools as [ResponseTools] does (with the
// same options), or the array sent before with the tool choice that
// restricts the model to the turn's tools; the choice is unset when there
// is nothing to restrict. Set both on the request.
func (st *StableTools) ResponseTools(tools *toolset.ToolList, opts ...Option) ([]responses.ToolUnionParam, responses.ResponseNewParamsToolChoiceUnion, error) {
	var choice responses.ResponseNewParamsToolChoiceUnion
	params, err := ResponseTools(tools, opts...)
	if err != nil {
		return nil, choice, err
	}
	send, restrict, err := st.s.Next(params, toolName, func(p responses.ToolUnionParam) ([]byte, error) { return json.Marshal(p) })
	if err != nil {
		return nil, choice, err
	}
	switch {
	case restrict == nil:
	case len(restrict) == 0:
		choice.OfToolChoiceMode = openai.Opt(responses.ToolChoiceOptionsNone)
	default:
		allowed := make([]map[string]any, len(restrict))
		for i, p := range restrict {
			if p.OfToolSearch != nil {
				allowed[i] = map[string]any{"type": "tool_search"}
				continue
			}
			allowed[i] = map[string]any{"type": "function", "name": toolName(p)}
		}
		choice.OfAllowedTools = &responses.ToolChoiceAllowedParam{Mode: responses.ToolChoiceAllowedModeAuto, Tools: allowed}
	}
	return send, choice, nil
}

// toolName is the name of a tool this package sends: a function's, or
// "tool_search" for the client-executed search.
func toolName(p responses.ToolUnionParam) string {
	if p.OfFunction != nil {
		return p.OfFunction.Name
	}
	return "tool_search"
}
