package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gotoolset/toolset"
)

// FuzzCallArgs feeds arbitrary bytes to a call as its arguments. Whatever
// the model sends, the call must not panic, and must either run the handler
// with arguments that decode into the struct, or return an *ArgumentError
// the model can read.
func FuzzCallArgs(f *testing.F) {
	for _, seed := range []string{
		`{"city":"Paris","days":3,"units":"metric"}`,
		`{"city":"Paris","days":3,"stops":[{"name":"a"},{"name":"b"}]}`,
		`{"city":"Par\u00eds","days":14}`,
		`{"city":"Paris","days":1.0}`,
		`{"city":"Paris","days":1e1}`,
		`{"city":"Paris","days":99999999999999999999999}`,
		`{"city":"Paris","days":1e999999}`,
		`{"city":"Paris","days":-1e-999999}`,
		`{"city":"Paris","days":3e0,"units":"metric","x":1e-400}`,
		`{"days":0,"units":"kelvin","x":null}`,
		`{"city":"Paris","city":"Rome","days":2}`,
		`[]`, `null`, ``, `"x"`, `{`, `{"city":"\ud800","days":2}`,
	} {
		f.Add([]byte(seed))
	}
	tools, err := toolset.BuildTools(context.Background(), "fuzz", weatherTool())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "get_weather", Args: args})
		if err != nil {
			var ae *toolset.ArgumentError
			if !errors.As(err, &ae) || len(ae.Problems) == 0 {
				t.Fatalf("args %q: want an *ArgumentError with problems, got %T %v", args, err, err)
			}
			if _, ok := toolset.ErrorText(err); !ok {
				t.Fatalf("args %q: argument error not shown to the model", args)
			}
			return
		}
		var in weatherArgs
		if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
			if err := json.Unmarshal(args, &in); err != nil {
				t.Fatalf("args %q accepted but do not decode: %v", args, err)
			}
		}
		if in.Days < 1 || in.Days > 14 {
			t.Fatalf("args %q accepted but break the schema: %+v", args, in)
		}
		if got := res.(forecast).City; got != in.City {
			t.Fatalf("args %q: handler saw city %q, want %q", args, got, in.City)
		}
	})
}
