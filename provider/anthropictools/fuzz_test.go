package anthropictools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/anthropictools"
)

// FuzzCheck checks that a preflight of any schema the core takes ends
// with problems, each placed in the tool's definition, or lets a
// conversion through that then succeeds.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}}`,
		`{"anyOf":[{"type":"object"}]}`,
		`{"type":"string"}`,
		`true`,
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
		problems, err := anthropictools.Check(list)
		for _, p := range problems {
			if p.Tool != "f" || !strings.HasPrefix(p.Path, "/parameters") || p.Problem == "" {
				t.Fatalf("problem %+v is not placed", p)
			}
		}
		if err != nil {
			return
		}
		if _, err := anthropictools.Tools(list, anthropictools.WithPreflight()); err != nil {
			t.Fatalf("the preflight passed %s, and the conversion failed: %v", data, err)
		}
	})
}
