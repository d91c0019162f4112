package geminitools

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
)

// FuzzLower checks that any schema the core takes is either refused with
// problems or lowered to one the core takes too, which has none of the
// keywords the lowering removes, and which decides a few arguments as the
// original does.
func FuzzLower(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":["string","null"],"enum":["x",null]}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/A","maxLength":2}},"$defs":{"A":{"type":"string"}}}`,
		`{"type":"object","allOf":[{"properties":{"a":{"const":1}}},{"required":["a"]}]}`,
		`{"properties":{"a":{"oneOf":[{"type":"integer"},{"type":"array","items":{"$ref":"#"}}]}}}`,
		`true`,
	} {
		f.Add([]byte(s))
	}
	args := []string{`{}`, `{"a":1}`, `{"a":"x"}`, `{"a":null}`, `{"a":[1]}`, `{"a":{"a":"xy"}}`}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := toolset.ParseSchema(data)
		if err != nil {
			return
		}
		orig := toolset.NewRawTool("f", "", s, echo)
		if orig.Err() != nil {
			return
		}
		raw, err := orig.ParametersJSON()
		if err != nil {
			return
		}
		low, findings := lower(raw)
		if low == nil {
			if !findings.Failed() {
				t.Fatalf("no schema and no problem for %s", raw)
			}
			return
		}
		if findings.Failed() {
			t.Fatalf("a schema and a problem for %s", raw)
		}
		lv, _ := provider.ParseBounded(low, &provider.Findings{})
		provider.Walk(lv, &provider.Findings{}, func(o *provider.Object, path string) {
			_, schema := o.Lookup("$schema")
			_, isList := o.Get("type").([]any)
			if schema || isList {
				t.Fatalf("lowered schema keeps at %q what lowering removes: %s", path, low)
			}
		})
		ls, err := toolset.ParseSchema(low)
		if err != nil {
			t.Fatalf("lowered schema %s does not parse: %v", low, err)
		}
		lowTool := toolset.NewRawTool("f", "", ls, echo)
		if lowTool.Err() != nil {
			t.Fatalf("lowered schema %s does not compile: %v", low, lowTool.Err())
		}
		for _, a := range args {
			if want, got := valid(t, orig, a), valid(t, lowTool, a); want != got {
				t.Fatalf("arguments %s: original %s says %v, lowered %s says %v", a, raw, want, low, got)
			}
		}
	})
}

func echo(context.Context, json.RawMessage) (any, error) { return "ok", nil }

func valid(t *testing.T, tool toolset.Tool, args string) bool {
	list, err := toolset.BuildTools(t.Context(), "fuzz", tool)
	if err != nil {
		t.Fatal(err)
	}
	_, err = list.Execute(t.Context(), toolset.ToolCall{ID: "1", Name: "f", Args: json.RawMessage(args)})
	var ae *toolset.ArgumentError
	if errors.As(err, &ae) {
		return false
	}
	if err != nil {
		t.Fatalf("arguments %s: %v", args, err)
	}
	return true
}
