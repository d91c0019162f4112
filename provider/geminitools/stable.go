package geminitools

import (
	"encoding/json"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"google.golang.org/genai"
)

// StableTools keeps the function declarations of one conversation the
// same, byte for byte, when a turn shows only some of the tools sent
// before (a filter hid one, a failure budget was spent), so that Gemini's
// cache of the prompt is kept: the earlier declarations are sent again,
// with a function calling config that restricts the model to the turn's
// tools by name (mode VALIDATED with allowed_function_names, which lets
// the model answer in text too; mode NONE when the turn shows no tools).
// A turn that shows a tool not sent before, or a changed one, sends its
// own tools, and the conversation goes on from those.
//
// Gemini has no tool search of its own: deferred tools are revealed by the
// library's search tool from the next turn on, which adds them to the
// declarations.
//
// The tools sent again can be read by the model, not called: the turn's
// list refuses a call of a tool it does not hold. Do not use StableTools
// where tools are hidden because the user may not know of them.
//
// Use one StableTools per conversation, for every turn of it; the zero
// value is ready to use, and it is safe for concurrent use.
type StableTools struct {
	s provider.Stable[*genai.FunctionDeclaration]
}

// Tools returns the turn's tools as [Tools] does (with the same options),
// or the declarations sent before with the tool config that restricts the
// model to the turn's tools; the config is nil when there is nothing to
// restrict. Set both on the GenerateContentConfig.
func (st *StableTools) Tools(tools *toolset.ToolList, opts ...Option) ([]*genai.Tool, *genai.ToolConfig, error) {
	gt, err := Tools(tools, opts...)
	if err != nil {
		return nil, nil, err
	}
	var decls []*genai.FunctionDeclaration
	if len(gt) > 0 {
		decls = gt[0].FunctionDeclarations
	}
	send, restrict, err := st.s.Next(decls,
		func(d *genai.FunctionDeclaration) string { return d.Name },
		func(d *genai.FunctionDeclaration) ([]byte, error) { return json.Marshal(d) })
	if err != nil {
		return nil, nil, err
	}
	if len(send) == 0 {
		return nil, nil, nil
	}
	out := []*genai.Tool{{FunctionDeclarations: send}}
	if restrict == nil {
		return out, nil, nil
	}
	if len(restrict) == 0 {
		return out, &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeNone}}, nil
	}
	names := make([]string, len(restrict))
	for i, d := range restrict {
		names[i] = d.Name
	}
	return out, &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
		Mode:                 genai.FunctionCallingConfigModeValidated,
		AllowedFunctionNames: names,
	}}, nil
}
