package toolsettest

import (
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/gotoolset/toolset"
)

type geminiWire struct{}

// geminiPath is the path of generateContent, naming the model.
var geminiPath = regexp.MustCompile(`^/v1(?:beta|alpha)?/models/([^/:]+):generateContent$`)

func (geminiWire) match(path string) (string, bool) {
	m := geminiPath.FindStringSubmatch(path)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func (geminiWire) decode(body []byte, req *ModelRequest) (rules, error) {
	type declaration struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description"`
		Parameters           json.RawMessage `json:"parameters"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
	}
	var r struct {
		Tools []struct {
			FunctionDeclarations []declaration `json:"functionDeclarations"`
		} `json:"tools"`
		Contents []struct {
			Parts []struct {
				FunctionResponse *struct {
					ID       string                     `json:"id"`
					Name     string                     `json:"name"`
					Response map[string]json.RawMessage `json:"response"`
					Parts    []json.RawMessage          `json:"parts"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return rules{}, err
	}
	for _, t := range r.Tools {
		for _, d := range t.FunctionDeclarations {
			params := d.ParametersJSONSchema
			if params == nil {
				params = d.Parameters
			}
			req.Tools = append(req.Tools, SentTool{Name: d.Name, Description: d.Description, Parameters: params})
		}
	}
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			fr := p.FunctionResponse
			if fr == nil {
				continue
			}
			res := ToolResult{CallID: fr.ID, Name: fr.Name, Media: len(fr.Parts)}
			v, ok := fr.Response["output"]
			if e, isErr := fr.Response["error"]; isErr {
				v, ok, res.IsError = e, true, true
			}
			if !ok {
				v, _ = json.Marshal(fr.Response)
			}
			if err := json.Unmarshal(v, &res.Text); err != nil {
				res.Text = string(v)
			}
			req.Results = append(req.Results, res)
		}
	}
	return rules{}, nil
}

func (geminiWire) reply(n int, model string, calls []toolset.ToolCall, text string) (any, error) {
	var parts []any
	for _, c := range calls {
		args, err := objectArgs(c)
		if err != nil {
			return nil, err
		}
		fc := map[string]any{"name": c.Name, "args": args}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		parts = append(parts, map[string]any{"functionCall": fc})
	}
	if len(calls) == 0 {
		parts = append(parts, map[string]any{"text": text})
	}
	return map[string]any{
		"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0,
		}},
		"modelVersion": model, "responseId": fmt.Sprintf("resp_%d", n),
	}, nil
}
