package mcptoolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longName is a name MCP allows and providers do not: 100 characters,
// with dots.
var longName = strings.Repeat("warehouse.", 10)

// namesServer is the fixture's SDK server with tools of names MCP allows
// and providers reject, admin.delete_user and longName, that record the
// name each call reached the server under.
type namesServer struct {
	*mcp.Server
	mu    sync.Mutex
	calls []string
}

func newNamesServer(extra ...string) *namesServer {
	s := &namesServer{Server: fixture.SDKServer("ops")}
	for _, name := range append([]string{"admin.delete_user", longName}, extra...) {
		s.AddTool(&mcp.Tool{Name: name, Description: "Remote " + name + ".", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				s.mu.Lock()
				s.calls = append(s.calls, req.Params.Name)
				s.mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + req.Params.Name}}}, nil
			})
	}
	return s
}

func (s *namesServer) called() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// overHTTP serves s over streamable HTTP on 127.0.0.1.
func overHTTP(t *testing.T, s *mcp.Server) string {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// With a name mapping, a server's tools of names providers reject are
// offered under mapped names, and a call under the mapped name reaches
// the server under its own.
func TestNameMappingCallsTheServerUnderItsName(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := newNamesServer()
	ts := mcptoolset.NewHTTP(overHTTP(t, server.Server), mcptoolset.WithName("ops"), mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNames))
	defer ts.Close()

	tools, err := toolset.BuildTools(ctx, "a", ts)
	require.NoError(t, err)
	long := mcptoolset.ProviderSafeNames(longName)
	assert.Len(t, long, 64)
	assert.Regexp(t, `^warehouse_warehouse_[a-z_]+_[0-9a-f]{8}$`, long)
	assert.Subset(t, tools.Names(), []string{"admin_delete_user", long, "read_file", "add"}, "legal names are kept as they are")
	assert.Empty(t, ts.InvalidTools())

	for mapped, original := range map[string]string{"admin_delete_user": "admin.delete_user", long: longName} {
		tool, ok := tools.Lookup(mapped)
		require.True(t, ok, mapped)
		assert.Equal(t, original, tool.Metadata[mcptoolset.MetaTool], "the server's name is kept")
		res, err := tools.Execute(ctx, toolset.ToolCall{Name: mapped, Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		assert.Equal(t, "ran "+original, content(t, res).Parts[0].Text)
	}
	assert.ElementsMatch(t, []string{"admin.delete_user", longName}, server.called(), "each call went out under the server's name")

	again, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, tools.Names(), toolNames(again), "the mapping is the same at every listing")

	// A mapped name is a name like any other of the turn.
	local := toolset.NewFunction(toolset.NewTool("admin_delete_user", "Local.", func(context.Context, struct{}) (string, error) { return "", nil }))
	_, err = toolset.BuildTools(ctx, "a", ts, local)
	var nce *toolset.NameConflictError
	require.ErrorAs(t, err, &nce)
	assert.Contains(t, err.Error(), `"admin_delete_user"`)
	assert.Contains(t, err.Error(), "mcp:ops")
}

// ProviderSafeNames gives every name MCP allows one a provider accepts,
// the same each time, and leaves such names alone.
func TestProviderSafeNames(t *testing.T) {
	for in, want := range map[string]string{
		"read_file":         "read_file",
		"admin.delete_user": "admin_delete_user",
		"files/read":        "files_read",
		"読む":                "__",
		"a-b.c":             "a-b_c",
	} {
		assert.Equal(t, want, mcptoolset.ProviderSafeNames(in), in)
	}
	a, b := strings.Repeat("x", 70)+"a", strings.Repeat("x", 70)+"b"
	assert.NotEqual(t, mcptoolset.ProviderSafeNames(a), mcptoolset.ProviderSafeNames(b), "long names sharing a start stay apart")
	assert.Equal(t, mcptoolset.ProviderSafeNames(a), mcptoolset.ProviderSafeNames(a))
	for _, in := range []string{a, longName, strings.Repeat("é", 128), strings.Repeat("_", 64)} {
		out := mcptoolset.ProviderSafeNames(in)
		assert.Regexp(t, `^[a-zA-Z0-9_-]{1,64}$`, out, in)
	}
	within := mcptoolset.ProviderSafeNamesWithin(61)
	assert.Len(t, within(longName), 61)
	assert.Equal(t, "admin_delete_user", within("admin.delete_user"))
	assert.Len(t, mcptoolset.ProviderSafeNamesWithin(1)(longName), 16, "a bound too short is raised")
	assert.Len(t, mcptoolset.ProviderSafeNamesWithin(500)(longName), 64, "and one too long lowered")
}

// Under a prefix, ProviderSafeNamesWithin leaves room for it: the turn
// holds the long name, prefixed, and the call reaches the server.
func TestNameMappingUnderAPrefix(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := newNamesServer()
	ts := mcptoolset.NewInMemory("ops", server.Server, mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNamesWithin(64-len("ops_"))))
	defer ts.Close()
	tools, err := toolset.BuildTools(ctx, "a", ts.Prefixed("ops"))
	require.NoError(t, err)
	name := "ops_" + mcptoolset.ProviderSafeNamesWithin(60)(longName)
	assert.Len(t, name, 64)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: name, Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{longName}, server.called())

	// With the names of ProviderSafeNames, the prefix makes the long one
	// too long: the turn says so.
	plain := mcptoolset.NewInMemory("ops", server.Server, mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNames))
	defer plain.Close()
	_, err = toolset.BuildTools(ctx, "a", plain.Prefixed("ops"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "68 characters, at most 64 allowed")
}

// Without a mapping, a tool whose name providers reject is refused, and
// the refusal says so where a developer looks: the warning, the
// InvalidToolError and Explain, each naming the option that offers it.
func TestUnmappedNamesAreRefusedAndExplained(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := newNamesServer()
	log, buf := logBuffer()
	ts := mcptoolset.NewHTTP(overHTTP(t, server.Server), mcptoolset.WithName("ops"), mcptoolset.WithLogger(log))
	defer ts.Close()
	const hint = "mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNames)"

	tools, err := toolset.BuildTools(ctx, "a", ts.Prefixed("ops"))
	require.NoError(t, err, "the other tools are offered")
	assert.NotContains(t, tools.Names(), "ops_admin.delete_user")
	assert.Contains(t, tools.Names(), "ops_read_file")
	invalid := ts.InvalidTools()
	require.Len(t, invalid, 2)
	assert.Equal(t, "admin.delete_user", invalid[0].Tool)
	assert.Contains(t, invalid[0].Error(), `mcptoolset: MCP server "ops": tool "admin.delete_user" refused: the name is not one a model can call`)
	assert.Contains(t, invalid[0].Error(), hint)
	assert.Equal(t, longName, invalid[1].Tool)
	assert.Equal(t, 2, strings.Count(buf.String(), hint), "the warning names the option:\n%s", buf)

	e, err := toolset.Explain(ctx, "a", ts.Prefixed("ops"))
	require.NoError(t, err)
	require.NoError(t, e.Err, "a refused tool does not fail the turn")
	del := e.Find("admin.delete_user")
	require.Len(t, del, 1, "%s", e)
	assert.False(t, del[0].Visible)
	assert.Equal(t, `Prefixed#0 "ops"/Toolset "mcp:ops"`, del[0].Path)
	require.Len(t, del[0].Reasons, 1)
	assert.Equal(t, toolset.ReasonRefused, del[0].Reasons[0].Kind)
	assert.Contains(t, del[0].Reasons[0].Detail, hint)
	assert.Contains(t, e.String(), "admin.delete_user: hidden, from "+del[0].Path+"\n  - refused by its toolset at "+del[0].Path+": the name is not one a model can call")
	assert.Len(t, e.Find(longName), 1)
	t.Logf("the explanation:\n%s", e)
	t.Logf("the warnings:\n%s", buf)
}

// The names a mapping gives two tools are refused, each naming the
// other; so are a mapping's empty and invalid names, and a mapping that
// panics fails the listing.
func TestNameMappingCollisionsAndBadMappings(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	t.Run("collision", func(t *testing.T) {
		server := newNamesServer("admin_delete_user", "admin/delete_user")
		log, buf := logBuffer()
		ts := mcptoolset.NewInMemory("ops", server.Server, mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNames), mcptoolset.WithLogger(log))
		defer ts.Close()
		tools, err := toolset.BuildTools(ctx, "a", ts)
		require.NoError(t, err)
		assert.NotContains(t, tools.Names(), "admin_delete_user", "none of the three is offered")
		assert.Contains(t, tools.Names(), mcptoolset.ProviderSafeNames(longName))
		invalid := ts.InvalidTools()
		require.Len(t, invalid, 3)
		byTool := map[string]string{}
		for _, ie := range invalid {
			byTool[ie.Tool] = ie.Error()
		}
		assert.Contains(t, byTool["admin.delete_user"],
			`the name mapping (see WithNameMapping) gives it the name "admin_delete_user", as it does to the server's tools "admin/delete_user", "admin_delete_user"; none of them is offered`)
		assert.Contains(t, byTool["admin_delete_user"], `as it does to the server's tools "admin.delete_user", "admin/delete_user"`)
		e, err := toolset.Explain(ctx, "a", ts)
		require.NoError(t, err)
		assert.Len(t, e.Find("admin/delete_user"), 1)
		_, err = ts.GetTools(ctx)
		require.NoError(t, err)
		assert.Equal(t, 3, strings.Count(buf.String(), "refusing an invalid tool"), "warned once per tool")
	})
	t.Run("pair", func(t *testing.T) {
		ts := mcptoolset.NewInMemory("ops", newNamesServer("admin_delete_user").Server, mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNames), mcptoolset.WithLogger(discard()))
		defer ts.Close()
		_, err := ts.GetTools(ctx)
		require.NoError(t, err)
		require.Len(t, ts.InvalidTools(), 2)
		assert.Contains(t, ts.InvalidTools()[0].Error(), `as it does to the server's tool "admin_delete_user";`)
	})
	t.Run("bad mappings", func(t *testing.T) {
		for name, tc := range map[string]struct {
			mapping func(string) string
			want    string
		}{
			"empty":   {func(n string) string { return strings.TrimPrefix(n, "admin.delete_user") }, "gives it no name"},
			"invalid": {func(n string) string { return strings.ReplaceAll(n, "_", " ") }, `gives it the name "admin.delete user", which is not one a model can call`},
		} {
			ts := mcptoolset.NewInMemory("ops", newNamesServer().Server, mcptoolset.WithNameMapping(tc.mapping), mcptoolset.WithLogger(discard()))
			tools, err := ts.GetTools(ctx)
			require.NoError(t, err, name)
			assert.NotEmpty(t, tools)
			var found bool
			for _, ie := range ts.InvalidTools() {
				if ie.Tool == "admin.delete_user" {
					found = true
					assert.Contains(t, ie.Error(), tc.want, name)
				}
			}
			assert.True(t, found, name)
			require.NoError(t, ts.Close())
		}
	})
	t.Run("panic", func(t *testing.T) {
		ts := mcptoolset.NewInMemory("ops", newNamesServer().Server, mcptoolset.WithNameMapping(func(n string) string {
			if n == "admin.delete_user" {
				panic("no")
			}
			return n
		}))
		defer ts.Close()
		_, err := ts.GetTools(ctx)
		var pe *toolset.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "WithNameMapping function", pe.Callback)
		assert.Empty(t, ts.InvalidTools(), "a bug of the application's, not a refusal of the server's tool")
	})
}

// A hostile server's names cannot make the toolset's warnings, errors or
// explanation unbounded: a huge name, control characters, 10,000 tools
// whose names providers reject, 10,000 that a mapping gives one name.
func TestHostileServerNamesAreBounded(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	schema := map[string]any{"type": "object"}
	t.Run("huge and control characters", func(t *testing.T) {
		huge := strings.Repeat("n.", 5000)
		escape := "evil\x1b[2J\x00name"
		log, buf := logBuffer()
		ts := mcptoolset.NewInMemory("hostile", listing(&mcp.Tool{Name: huge, InputSchema: schema}, &mcp.Tool{Name: escape, InputSchema: schema}),
			mcptoolset.WithNameMapping(mcptoolset.ProviderSafeNames), mcptoolset.WithLogger(log))
		defer ts.Close()
		_, err := ts.GetTools(ctx)
		require.NoError(t, err)
		invalid := ts.InvalidTools()
		require.Len(t, invalid, 2)
		assert.LessOrEqual(t, len(invalid[0].Tool), 131, "the name is cut")
		assert.Contains(t, invalid[0].Error(), "the name is 10000 bytes long, more than 128")
		assert.Contains(t, invalid[1].Error(), "the name holds spaces or control characters", "refused, not mapped: no name of MCP holds them")
		assert.Less(t, len(buf.String()), 1024, "the warnings are bounded:\n%s", buf)
		assert.NotContains(t, buf.String(), "\x1b", "no control character reaches the log")
		e, err := toolset.Explain(ctx, "a", ts)
		require.NoError(t, err)
		assert.NotContains(t, e.String(), "\x1b")
		assert.Less(t, len(e.String()), 4096)
	})
	many := func(n int, name func(i int) string) []*mcp.Tool {
		out := make([]*mcp.Tool, n)
		for i := range out {
			out[i] = &mcp.Tool{Name: name(i), InputSchema: schema}
		}
		return out
	}
	// Twice the 1,000 refused tools an explanation lists, and far more
	// than the ten warnings logged one by one.
	const n = 2_000
	for label, tc := range map[string]struct {
		tools   []*mcp.Tool
		mapping func(string) string
		want    string
	}{
		"uncallable": {many(n, func(i int) string { return fmt.Sprintf("t.%d", i) }), nil, "WithNameMapping(mcptoolset.ProviderSafeNames)"},
		"one name": {many(n, func(i int) string { return "a" + string(rune(0x4e00+i)) }), mcptoolset.ProviderSafeNames,
			`gives it the name "a_", as it does to the server's tools`},
	} {
		t.Run(label, func(t *testing.T) {
			log, buf := logBuffer()
			ts := mcptoolset.NewInMemory("hostile", listing(tc.tools...), mcptoolset.WithNameMapping(tc.mapping), mcptoolset.WithLogger(log),
				mcptoolset.WithListLimits(mcptoolset.ListLimits{MaxTools: 20_000}))
			defer ts.Close()
			start := time.Now()
			tools, err := ts.GetTools(ctx)
			require.NoError(t, err)
			assert.Len(t, tools, 8, "the fixture's tools are offered")
			invalid := ts.InvalidTools()
			require.Len(t, invalid, n)
			for _, ie := range invalid {
				require.Contains(t, ie.Error(), tc.want)
				require.Less(t, len(ie.Error()), 1024)
			}
			assert.Equal(t, 11, strings.Count(buf.String(), "\n"), "ten warnings and one line for the rest:\n%s", buf)
			assert.Contains(t, buf.String(), fmt.Sprintf("more=%d", n-10))
			e, err := toolset.Explain(ctx, "a", ts)
			require.NoError(t, err)
			assert.Len(t, e.Tools, 8+1000, "an explanation lists 1,000 refused tools of a toolset")
			assert.Less(t, time.Since(start), 20*time.Second)
		})
	}
}
