package mcptoolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// FuzzToolFromListing feeds one tool definition of a server's tools/list
// answer, as JSON, to the code that makes it a toolset.Tool. Whatever the
// definition, it must not panic or hang, and it is either refused with a
// bounded error or made into a tool whose schema is sound (it compiles and
// refers only within itself) and that validates arguments without
// reaching outside.
func FuzzToolFromListing(f *testing.F) {
	files, _ := filepath.Glob("testdata/hostile/schemas/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(`{"name":"evil","description":"Evil.","inputSchema":` + string(b) + `}`))
	}
	f.Add([]byte(`{"name":"read_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"annotations":{"readOnlyHint":true}}`))
	f.Add([]byte(`{"name":"add","inputSchema":{"type":"object","properties":{"a":{"type":"integer","minimum":0}}},"outputSchema":{"type":"object","properties":{"sum":{"type":"integer"}}}}`))
	f.Add([]byte(`{"name":"defs","inputSchema":{"type":"object","properties":{"h":{"$ref":"#/definitions/a"}},"definitions":{"a":{"type":"object"}}}}`))
	f.Add([]byte(`{"name":"b","inputSchema":true}`))
	f.Add([]byte(`{"name":"icons","inputSchema":{"type":"object"},"icons":[{"src":"https://example.com/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"},{"src":"javascript:alert(1)"},{"src":"data:image/svg+xml,<svg/>"}]}`))

	logger := slog.New(slog.DiscardHandler)
	dial := func(context.Context) (mcp.Transport, error) { return nil, errors.New("no server in a fuzz test") }
	f.Fuzz(func(t *testing.T, data []byte) {
		var d mcp.Tool
		if json.Unmarshal(data, &d) != nil {
			return
		}
		c := newConn("fuzz", dial, []Option{WithLogger(logger), WithRetryDelay(time.Hour)})
		tools, err := c.makeTools([]*mcp.Tool{&d})
		if err != nil {
			t.Fatalf("a listing of one tool fails: %v", err)
		}
		if len(tools)+len(c.invalid) != 1 {
			t.Fatalf("%d tools and %d refusals for one definition", len(tools), len(c.invalid))
		}
		for _, ie := range c.invalid {
			if n := len(ie.Error()); n > 1024 {
				t.Fatalf("a refusal of %d bytes", n)
			}
		}
		for _, tool := range tools {
			if err := tool.Err(); err != nil {
				t.Fatalf("an accepted tool with an error: %v", err)
			}
			if tool.Name != d.Name {
				t.Fatalf("tool %q made from a definition named %q", tool.Name, d.Name)
			}
			params, err := tool.ParametersJSON()
			if err != nil {
				t.Fatalf("an accepted tool's schema does not encode: %v", err)
			}
			if _, err := toolset.ParseSchema(params); err != nil {
				t.Fatalf("an accepted tool's schema %s: %v", params, err)
			}
			if err := compileSchema(params); err != nil {
				t.Fatalf("an accepted tool's schema, as the core encodes it, %s: %v", params, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = tool.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"path":"/etc/passwd","a":1,"x":[1,{"y":null}]}`)})
			if ctx.Err() != nil {
				t.Fatal("validating arguments hangs")
			}
			cancel()
		}
	})
}

// FuzzMappedNames lists tools of two names with ProviderSafeNames as the
// name mapping. Whatever the names, each tool is offered under a name a
// model can call, no two under one, each calls the server under its own
// name, and each refusal is bounded.
func FuzzMappedNames(f *testing.F) {
	for _, pair := range [][2]string{
		{"admin.delete_user", "admin_delete_user"}, {"read_file", "write_file"}, {"a", "a"},
		{strings.Repeat("x", 70) + "a", strings.Repeat("x", 70) + "b"}, {"読む", "書く"}, {"a\x00b", "a b"},
	} {
		f.Add(pair[0], pair[1])
	}
	logger := slog.New(slog.DiscardHandler)
	dial := func(context.Context) (mcp.Transport, error) { return nil, errors.New("no server in a fuzz test") }
	f.Fuzz(func(t *testing.T, a, b string) {
		c := newConn("fuzz", dial, []Option{WithLogger(logger), WithNameMapping(ProviderSafeNames)})
		schema := map[string]any{"type": "object"}
		tools, err := c.makeTools([]*mcp.Tool{{Name: a, InputSchema: schema}, {Name: b, InputSchema: schema}})
		if err != nil {
			t.Fatalf("the listing fails: %v", err)
		}
		if len(tools)+len(c.invalid) != 2 && !(a == b && len(tools) == 0 && len(c.invalid) == 1) {
			t.Fatalf("%d tools and %d refusals for two definitions", len(tools), len(c.invalid))
		}
		seen := map[string]bool{}
		for _, tool := range tools {
			if !callable(tool.Name) || seen[tool.Name] {
				t.Fatalf("tool offered as %q among %v", tool.Name, seen)
			}
			seen[tool.Name] = true
			if server := tool.Metadata[MetaTool]; server != a && server != b || ProviderSafeNames(server) != tool.Name {
				t.Fatalf("tool %q calls %q", tool.Name, server)
			}
		}
		for _, ie := range c.invalid {
			if n := len(ie.Error()); n > 1024 {
				t.Fatalf("a refusal of %d bytes", n)
			}
		}
	})
}

// compileSchema compiles b on its own with a validator whose loader
// refuses every document: an oracle apart from the core's compilation.
func compileSchema(b []byte) error {
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("decoding the schema: %w", err)
	}
	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft2020)
	c.UseLoader(refuseLoader{})
	const url = "mem:///inputSchema.json"
	if err := c.AddResource(url, doc); err != nil {
		return err
	}
	_, err = c.Compile(url)
	return err
}

// refuseLoader loads nothing.
type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("refusing to load %.120q", u)
}
