package openaitools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
)

// FuzzCheck checks that the strict preflight and the strict conversion
// agree on any schema the core takes: what one refuses the other
// refuses, and every problem is placed in the tool's definition.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`,
		`{"type":"object","properties":{"a":{"allOf":[{"type":"string"}]}}}`,
		`{"properties":{}}`,
		`{"type":"object","anyOf":[{"required":["a"]}],"properties":{"a":{"type":"string"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := toolset.ParseSchema(data)
		if err != nil {
			return
		}
		tool := toolset.NewRawTool("f", "", s, func(context.Context, json.RawMessage) (any, error) { return nil, nil })
		if tool.Err() != nil {
			return
		}
		list, err := toolset.BuildTools(t.Context(), "fuzz", tool)
		if err != nil {
			t.Fatal(err)
		}
		problems, err := openaitools.Check(list, openaitools.WithStrict())
		for _, p := range problems {
			if p.Tool != "f" || !strings.HasPrefix(p.Path, "/parameters") || p.Problem == "" {
				t.Fatalf("problem %+v is not placed", p)
			}
		}
		_, convErr := openaitools.ChatTools(list, openaitools.WithStrict())
		var se *openaitools.StrictError
		if errors.As(convErr, &se) && err == nil {
			t.Fatalf("the conversion refused %s (%v), the preflight did not", data, convErr)
		}
		if err == nil && convErr != nil {
			t.Fatalf("the preflight passed %s, the conversion failed: %v", data, convErr)
		}
	})
}
