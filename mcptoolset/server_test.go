package mcptoolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connect connects the SDK's own client to s in memory. A protocol
// version may be given: the SDK's client speaks the newest by default.
// role and tenant are the client's, read by the served toolsets' filters.
var (
	role   = toolset.NewKey[string]("role")
	tenant = toolset.NewKey[string]("tenant")
)

func connect(t *testing.T, s *mcptoolset.Server, opts *mcp.ClientOptions, version ...string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	var so *mcp.ClientSessionOptions
	if len(version) > 0 {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version[0]}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, opts).Connect(ctx, ct, so)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// The SDK's client sees the toolset's tools with their schemas, title and
// annotations.
func TestServeToolset(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	ts := fixture.Toolset()
	srv := mcptoolset.NewServer(ts, mcptoolset.WithImplementation(&mcp.Implementation{Name: "weather", Version: "v2"}))
	cs := connect(t, srv, nil)

	assert.Equal(t, "weather", cs.InitializeResult().ServerInfo.Name)
	assert.Equal(t, "Weather tools.", cs.InitializeResult().Instructions, "the toolset's instructions")
	assert.True(t, cs.InitializeResult().Capabilities.Tools.ListChanged)

	listed, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	local, err := ts.GetTools(ctx)
	require.NoError(t, err)
	require.Equal(t, toolNames(local), func() []string {
		var names []string
		for _, tool := range listed.Tools {
			names = append(names, tool.Name)
		}
		return names
	}(), "the same tools, in the same order, and nothing else")
	for i, tool := range listed.Tools {
		assert.Equal(t, local[i].Description, tool.Description)
		want, err := local[i].ParametersJSON()
		require.NoError(t, err)
		got, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		requireSameJSON(t, want, got)
		if local[i].Returns == nil {
			assert.Nil(t, tool.OutputSchema)
			continue
		}
		want, err = json.Marshal(local[i].Returns)
		require.NoError(t, err)
		got, err = json.Marshal(tool.OutputSchema)
		require.NoError(t, err)
		requireSameJSON(t, want, got)
	}
	forecast := listed.Tools[0]
	legacy := connect(t, srv, nil, "2025-06-18")
	assert.Equal(t, "2025-06-18", legacy.InitializeResult().ProtocolVersion)
	assert.Equal(t, "Weather tools.", legacy.InitializeResult().Instructions, "sent with initialize too")
	old, err := legacy.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, listed.Tools, old.Tools)
	assert.Equal(t, "Forecast", forecast.Title)
	require.NotNil(t, forecast.Annotations)
	assert.True(t, forecast.Annotations.ReadOnlyHint)
	assert.Nil(t, forecast.Annotations.DestructiveHint)
	assert.Nil(t, listed.Tools[1].Annotations)
}

func TestServeCalls(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	log, buf := logBuffer()
	cs := connect(t, mcptoolset.NewServer(fixture.Toolset(), mcptoolset.WithServerLogger(log)), nil)
	call := func(name string, args any) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	}

	res, err := call("forecast", map[string]any{"city": "Paris", "days": 2})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, map[string]any{"city": "Paris", "temps": []any{20.0, 20.5}}, res.StructuredContent, "structured, as the tool has a result schema")
	require.Len(t, res.Content, 1)
	assert.JSONEq(t, `{"city":"Paris","temps":[20,20.5]}`, res.Content[0].(*mcp.TextContent).Text)

	res, err = call("echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	assert.Equal(t, []mcp.Content{&mcp.TextContent{Text: "hi"}}, res.Content)
	assert.Equal(t, "hi", res.StructuredContent, "a string result schema gives a string")

	res, err = call("picture", nil)
	require.NoError(t, err)
	assert.Equal(t, []mcp.Content{&mcp.TextContent{Text: "a pixel"}, &mcp.ImageContent{MIMEType: "image/png", Data: fixture.PNG}}, res.Content)

	// Errors for the model come back as isError results.
	res, err = call("retry", nil)
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, []mcp.Content{&mcp.TextContent{Text: "try again with a city"}}, res.Content)

	res, err = call("forecast", map[string]any{"city": 5, "days": 99, "extra": true})
	require.NoError(t, err)
	require.True(t, res.IsError, "arguments are validated")
	text := res.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, text, `invalid arguments for tool "forecast"`)
	assert.Contains(t, text, `"city"`)
	assert.Contains(t, text, `"days"`)
	assert.Contains(t, text, `"extra"`)

	res, err = call("nope", nil)
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `unknown tool "nope"; available tools: boom, echo, forecast, picture, retry`)

	// Other errors are internal: the client gets a JSON-RPC error with an
	// ID, the log the error.
	_, err = call("boom", nil)
	requireInternal(t, err, buf, "database unreachable")
	var werr *jsonrpc.Error
	assert.ErrorAs(t, err, &werr)
}

// Each client sees its own tools: the run context comes from the request.
func TestServePerSessionTools(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	admin := toolset.NewTool("drop_table", "Drop a table.", func(context.Context, struct{}) (string, error) { return "dropped", nil })
	ts := fixture.Toolset().CombinedWith(toolset.NewFunction(admin).Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) {
		return role.Get(ctx) == "admin", nil
	}))
	var mu sync.Mutex
	var seen []string
	srv := mcptoolset.NewServer(ts, mcptoolset.WithRunContext(func(ctx context.Context, req *mcptoolset.Request) (*toolset.RunContext, error) {
		client := ""
		if req.Client != nil {
			client = req.Client.Name
		}
		mu.Lock()
		seen = append(seen, req.Method)
		mu.Unlock()
		if client == "intruder" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unknown client"}
		}
		r := "guest"
		if client == "ops-console" {
			r = "admin"
		}
		return toolset.NewRun("", toolset.WithValue(role, r)), nil
	}))
	session := func(name string) *mcp.ClientSession {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(ctx, st, nil)
		require.NoError(t, err)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "v1"}, nil).Connect(ctx, ct, nil)
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close(); _ = ss.Wait() })
		return cs
	}
	names := func(cs *mcp.ClientSession) []string {
		res, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	ops, guest := session("ops-console"), session("browser")
	assert.Contains(t, names(ops), "drop_table")
	assert.NotContains(t, names(guest), "drop_table")

	res, err := guest.CallTool(ctx, &mcp.CallToolParams{Name: "drop_table"})
	require.NoError(t, err)
	assert.True(t, res.IsError, "a hidden tool cannot be called")
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `unknown tool "drop_table"`)
	res, err = ops.CallTool(ctx, &mcp.CallToolParams{Name: "drop_table"})
	require.NoError(t, err)
	assert.Equal(t, "dropped", res.Content[0].(*mcp.TextContent).Text)
	mu.Lock()
	assert.Equal(t, []string{"server/discover", "server/discover"}, seen, "called once per session, at its first request: the SDK's client uses the 2026-07-28 handshake in memory")
	mu.Unlock()

	// A hook's JSON-RPC error refuses the request with its message.
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	_, err = mcp.NewClient(&mcp.Implementation{Name: "intruder", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.Error(t, err, "the instructions of initialize need a run context")
	assert.Contains(t, err.Error(), "unknown client")
	_ = ss.Close()
}

// ToolsChanged sends notifications/tools/list_changed, and the next
// listing shows the new tools.
func TestServeToolsChanged(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var mu sync.Mutex
		current := toolset.Toolset(toolset.NewFunction(echoTool("alpha")))
		ts := toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) {
			mu.Lock()
			defer mu.Unlock()
			return current, nil
		})
		srv := mcptoolset.NewServer(ts)
		changed, changedLegacy := make(chan struct{}, 10), make(chan struct{}, 10)
		cs := connect(t, srv, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changed <- struct{}{}
		}})
		legacy := connect(t, srv, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changedLegacy <- struct{}{}
		}}, "2025-11-25")
		res, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		require.Len(t, res.Tools, 1)
		assert.Equal(t, "alpha", res.Tools[0].Name)

		mu.Lock()
		current = toolset.NewFunction(echoTool("alpha"), echoTool("beta"))
		mu.Unlock()
		srv.ToolsChanged()
		for _, ch := range []chan struct{}{changed, changedLegacy} {
			select {
			case <-ch:
			case <-time.After(5 * time.Second):
				t.Fatal("no notifications/tools/list_changed")
			}
		}
		res, err = cs.ListTools(ctx, nil)
		require.NoError(t, err)
		assert.Len(t, res.Tools, 2)
		res, err = legacy.ListTools(ctx, nil)
		require.NoError(t, err)
		assert.Len(t, res.Tools, 2)

		// The consumer side drops its cache on the notification.
		consumer := mcptoolset.NewInMemory("dyn", srv.MCP())
		defer consumer.Close()
		tools, err := consumer.GetTools(ctx)
		require.NoError(t, err)
		assert.Len(t, tools, 2)
		mu.Lock()
		current = toolset.NewFunction(echoTool("gamma"))
		mu.Unlock()
		srv.ToolsChanged()
		require.Eventually(t, func() bool {
			tools, err := consumer.GetTools(ctx)
			return err == nil && len(tools) == 1 && tools[0].Name == "gamma"
		}, 5*time.Second, 10*time.Millisecond)
	})
}

func echoTool(name string) toolset.Tool {
	return toolset.NewTool(name, "The "+name+" tool.", func(context.Context, struct{}) (string, error) { return name, nil })
}

func TestServePagination(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	var tools []toolset.Tool
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("t%d", i)
		tools = append(tools, echoTool(name))
		want = append(want, name)
	}
	srv := mcptoolset.NewServer(toolset.NewFunction(tools...), mcptoolset.WithPageSize(3))
	cs := connect(t, srv, nil)
	first, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Len(t, first.Tools, 3)
	assert.NotEmpty(t, first.NextCursor)
	var got []string
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		got = append(got, tool.Name)
	}
	assert.Equal(t, want, got)

	consumer := mcptoolset.NewInMemory("paged", srv.MCP())
	defer consumer.Close()
	listed, err := consumer.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, toolNames(listed))

	_, err = cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: "not-a-cursor"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `invalid cursor "not-a-cursor"`)
}

// A toolset whose names clash cannot be listed: the client gets the
// conflict report.
func TestServeConflictingToolset(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	log, buf := logBuffer()
	srv := mcptoolset.NewServer(toolset.NewCombined(toolset.NewFunction(echoTool("x")), toolset.NewFunction(echoTool("x"))),
		mcptoolset.WithServerLogger(log))
	cs := connect(t, srv, nil)
	_, err := cs.ListTools(ctx, nil)
	requireInternal(t, err, buf, `\"x\" contributed by`)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "x"})
	requireInternal(t, err, buf, `\"x\" contributed by`)
}

// A core toolset served over MCP, consumed back as a toolset, prefixed
// and combined with a local toolset: names, schemas and results survive
// the trip.
func TestRoundTrip(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	served := fixture.Toolset()
	remote := mcptoolset.NewInMemory("weather", mcptoolset.NewServer(served).MCP())
	defer remote.Close()
	local := toolset.NewFunction(echoTool("echo"))

	tools, err := toolset.BuildTools(ctx, "agent", remote.Prefixed("weather"), local)
	require.NoError(t, err)
	originals, err := served.GetTools(ctx)
	require.NoError(t, err)
	var want []string
	for _, o := range originals {
		want = append(want, "weather_"+o.Name)
		got, ok := tools.Lookup("weather_" + o.Name)
		require.True(t, ok)
		assert.Equal(t, o.Description, got.Description)
		wantJSON, err := o.ParametersJSON()
		require.NoError(t, err)
		gotJSON, err := got.ParametersJSON()
		require.NoError(t, err)
		requireSameJSON(t, wantJSON, gotJSON)
		if o.Returns == nil {
			assert.Nil(t, got.Returns)
		} else {
			wantJSON, _ = json.Marshal(o.Returns)
			gotJSON, _ = json.Marshal(got.Returns)
			requireSameJSON(t, wantJSON, gotJSON)
		}
	}
	assert.Equal(t, append(want, "echo"), tools.Names())
	got, _ := tools.Lookup("weather_forecast")
	assert.Equal(t, "Forecast", got.Metadata[mcptoolset.MetaTitle], "title and hints survive")
	assert.Equal(t, "true", got.Metadata[mcptoolset.MetaReadOnly])

	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "weather_forecast", Args: json.RawMessage(`{"city":"Oslo","days":3}`)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"city": "Oslo", "temps": []any{20.0, 20.5, 21.0}}, content(t, res).Structured)
	res, err = tools.Execute(ctx, toolset.ToolCall{Name: "weather_picture", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, []toolset.Part{{Text: "a pixel"}, {MIMEType: "image/png", Data: fixture.PNG}}, content(t, res).Parts)
	res, err = tools.Execute(ctx, toolset.ToolCall{Name: "echo", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "echo", res)

	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "weather_retry", Args: nil})
	msg, ok := toolset.ErrorText(err)
	assert.True(t, ok)
	assert.Equal(t, "try again with a city", msg)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "weather_boom", Args: nil})
	_, ok = toolset.ErrorText(err)
	assert.False(t, ok, "an error that stops the run on the server stops it here too")
	assert.Regexp(t, `internal error \(id [0-9a-f]{16}\)`, err.Error())
	assert.NotContains(t, err.Error(), "database unreachable", "the server's internal error text stays on the server")

	text, err := toolset.Instructions(ctx, remote)
	require.NoError(t, err)
	assert.Equal(t, "Weather tools.", text)
}

// Results of every content kind keep their kind through a proxy: an MCP
// server consumed as a toolset and served again.
func TestProxyContent(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	origin := fixture.SDKServer("origin")
	mcp.AddTool(origin, &mcp.Tool{Name: "resources", Description: "Every kind of content."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "text"},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
				&mcp.ResourceLink{URI: "file:///tmp/report.pdf", Name: "report.pdf", MIMEType: "application/pdf"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "alpha"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}},
			}}, nil, nil
		})
	upstream := mcptoolset.NewInMemory("origin", origin)
	defer upstream.Close()
	cs := connect(t, mcptoolset.NewServer(upstream), nil)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "resources"})
	require.NoError(t, err)
	assert.Equal(t, []mcp.Content{
		&mcp.TextContent{Text: "text"},
		&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
		&mcp.ResourceLink{URI: "file:///tmp/report.pdf", Name: "report.pdf", MIMEType: "application/pdf"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "alpha"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}},
	}, res.Content)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail"})
	require.NoError(t, err)
	assert.True(t, res.IsError, "an isError result stays one")
	assert.Equal(t, []mcp.Content{&mcp.TextContent{Text: "no such file"}}, res.Content)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"sum": 3.0}, res.StructuredContent)
}

// Parts without a URI or a media type MCP knows go out as embedded
// resources, so no data is lost.
func TestServeBinaryPart(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	pdf := toolset.NewTool("pdf", "A PDF.", func(context.Context, struct{}) (*toolset.Content, error) {
		return &toolset.Content{Parts: []toolset.Part{{MIMEType: "application/pdf", Data: []byte("%PDF")}}, Structured: map[string]int{"pages": 1}}, nil
	})
	cs := connect(t, mcptoolset.NewServer(toolset.NewFunction(pdf)), nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pdf"})
	require.NoError(t, err)
	assert.Equal(t, []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
		URI: "urn:toolset:part:0", MIMEType: "application/pdf", Blob: []byte("%PDF"),
	}}}, res.Content)
	assert.Equal(t, map[string]any{"pages": 1.0}, res.StructuredContent)
}

// Serving over streamable HTTP on 127.0.0.1, with per-request run
// contexts from HTTP headers, consumed as a toolset.
func TestServeHTTP(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	secret := toolset.NewTool("secret", "Tenant secrets.", func(ctx context.Context, _ struct{}) (string, error) {
		return "secret of " + tenant.Get(ctx), nil
	})
	ts := fixture.Toolset().CombinedWith(toolset.NewFunction(secret).Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) {
		return tenant.Get(ctx) != "", nil
	}))
	srv := mcptoolset.NewServer(ts, mcptoolset.WithRunContext(func(ctx context.Context, req *mcptoolset.Request) (*toolset.RunContext, error) {
		t := ""
		if req.Extra != nil {
			t = req.Extra.Header.Get("X-Tenant")
		}
		return toolset.NewRun("", toolset.WithValue(tenant, t)), nil
	}))
	httpServer := httptest.NewServer(srv.HTTPHandler(nil))
	defer httpServer.Close()

	anonymous := mcptoolset.NewHTTP(httpServer.URL, mcptoolset.WithName("weather"))
	defer anonymous.Close()
	tools, err := anonymous.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"forecast", "echo", "retry", "picture", "boom"}, toolNames(tools))

	acme := mcptoolset.NewHTTP(httpServer.URL, mcptoolset.WithName("weather"), mcptoolset.WithHTTPClient(&http.Client{
		Transport: headerTransport{"X-Tenant", "acme"},
	}))
	defer acme.Close()
	built, err := toolset.BuildTools(ctx, "agent", acme.Prefixed("w"))
	require.NoError(t, err)
	res, err := built.Execute(ctx, toolset.ToolCall{Name: "w_secret", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "secret of acme", content(t, res).Parts[0].Text)
	res, err = built.Execute(ctx, toolset.ToolCall{Name: "w_forecast", Args: json.RawMessage(`{"city":"Rome"}`)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"city": "Rome", "temps": []any{20.0}}, content(t, res).Structured)
}

type headerTransport struct{ key, value string }

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(req)
}

// Subprocess servers over stdio, built by the test: one written with the
// SDK alone, one serving a toolset with NewServer.
func TestStdioSubprocess(t *testing.T) {
	checkLeaks(t)
	bin := testServer(t)
	ctx := context.Background()

	sdk := mcptoolset.NewCommand(exec.Command(bin, "-sdk", "-name", "files"), mcptoolset.WithRetryDelay(0))
	defer sdk.Close()
	served := mcptoolset.NewCommand(exec.Command(bin, "-name", "weather"))
	defer served.Close()
	assert.Equal(t, "mcp:testserver", sdk.Label(), "named after the command")

	tools, err := toolset.BuildTools(ctx, "agent", sdk.Prefixed("fs"), served.Prefixed("weather"))
	require.NoError(t, err)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "fs_read_file", Args: json.RawMessage(`{"path":"/etc/hosts"}`)})
	require.NoError(t, err)
	assert.Equal(t, "files: contents of /etc/hosts", content(t, res).Parts[0].Text)
	res, err = tools.Execute(ctx, toolset.ToolCall{Name: "weather_forecast", Args: json.RawMessage(`{"city":"Lima","days":2}`)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"city": "Lima", "temps": []any{20.0, 20.5}}, content(t, res).Structured)
	text, err := toolset.Instructions(ctx, sdk, served)
	require.NoError(t, err)
	assert.Equal(t, "Use files for files.\n\nWeather tools.", text)

	// The server process dies; the next use starts it again.
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "fs_crash", Args: nil})
	require.Error(t, err)
	var se *mcptoolset.ServerError
	require.ErrorAs(t, err, &se)
	res, err = tools.Execute(ctx, toolset.ToolCall{Name: "fs_read_file", Args: json.RawMessage(`{"path":"again"}`)})
	require.NoError(t, err, "the next call starts the server again")
	assert.Equal(t, "files: contents of again", content(t, res).Parts[0].Text)
}

// Bad input on the serving side gets a clear error, never a panic.
func TestServeBadInput(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()

	var zero mcptoolset.Server
	zero.ToolsChanged()
	require.ErrorContains(t, zero.ServeStdio(ctx), "a Server must be made with NewServer")

	log, buf := logBuffer()
	cs := connect(t, mcptoolset.NewServer(nil, mcptoolset.WithServerLogger(log)), nil)
	_, err := cs.ListTools(ctx, nil)
	requireInternal(t, err, buf, "nil Toolset")

	unencodable := toolset.NewTool("unencodable", "Returns what JSON cannot hold.", func(context.Context, struct{}) (map[string]any, error) {
		return map[string]any{"f": func() {}}, nil
	})
	cs = connect(t, mcptoolset.NewServer(toolset.NewFunction(unencodable, echoTool("plain")), mcptoolset.WithServerLogger(log)), nil)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "unencodable"})
	requireInternal(t, err, buf, `tool \"unencodable\": toolset: encoding the result: json: unsupported type`)

	for _, args := range []any{[]int{1}, "text", 5} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain", Arguments: args})
		require.NoError(t, err)
		require.True(t, res.IsError, "%v: arguments that are not an object", args)
		assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `invalid arguments for tool "plain"`)
	}
}

// Many clients list and call at once on one server (run with -race).
func TestServeConcurrentSessions(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	srv := mcptoolset.NewServer(fixture.Toolset())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for c := range 8 {
		consumer := mcptoolset.NewInMemory("weather", srv.MCP())
		wg.Go(func() {
			defer consumer.Close()
			for i := range 20 {
				if i%5 == 0 {
					srv.ToolsChanged()
				}
				tools, err := toolset.BuildTools(ctx, "agent", consumer)
				if err != nil {
					errs <- err
					return
				}
				text := fmt.Sprintf("client %d call %d", c, i)
				res, err := tools.Execute(ctx, toolset.ToolCall{Name: "echo", Args: json.RawMessage(fmt.Sprintf(`{"text":%q}`, text))})
				if err != nil {
					errs <- err
					return
				}
				if got := res.(*toolset.Content).Parts[0].Text; got != text {
					errs <- fmt.Errorf("got %q, want %q", got, text)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
