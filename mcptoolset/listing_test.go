package mcptoolset_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tools are made once per listing: later turns get the same values.
func TestToolsAreReusedAcrossTurns(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	var calls counter
	ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")))
	defer ts.Close()
	first, err := ts.GetTools(ctx)
	require.NoError(t, err)
	for range 3 {
		again, err := ts.GetTools(ctx)
		require.NoError(t, err)
		require.Equal(t, len(first), len(again))
		for i := range first {
			assert.True(t, first[i].Same(again[i]))
			assert.Same(t, first[i].Parameters, again[i].Parameters)
		}
	}
	assert.Equal(t, 1, calls.get("tools/list"), "the list is cached")
}

func TestCacheOptions(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	t.Run("ttl", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls counter
			ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")), mcptoolset.WithCacheTTL(50*time.Millisecond))
			defer ts.Close()
			for range 3 {
				_, err := ts.GetTools(ctx)
				require.NoError(t, err)
			}
			assert.Equal(t, 1, calls.get("tools/list"))
			time.Sleep(60 * time.Millisecond)
			_, err := ts.GetTools(ctx)
			require.NoError(t, err)
			assert.Equal(t, 2, calls.get("tools/list"), "listed again once the TTL passed")
		})
	})
	t.Run("off", func(t *testing.T) {
		var calls counter
		ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")), mcptoolset.WithoutCache())
		defer ts.Close()
		first, err := ts.GetTools(ctx)
		require.NoError(t, err)
		for range 3 {
			again, err := ts.GetTools(ctx)
			require.NoError(t, err)
			assert.True(t, first[0].Same(again[0]), "unchanged definitions still give the same tools")
		}
		assert.Equal(t, 4, calls.get("tools/list"))
	})
	t.Run("manual", func(t *testing.T) {
		var calls counter
		ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")))
		defer ts.Close()
		_, err := ts.GetTools(ctx)
		require.NoError(t, err)
		ts.ToolsChanged()
		_, err = ts.GetTools(ctx)
		require.NoError(t, err)
		assert.Equal(t, 2, calls.get("tools/list"))
	})
}

// Many runs asking for the tools at once make one connection and one
// tools/list request.
func TestConcurrentGetToolsDoNotStampede(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	var calls counter
	ts, dials := inMemory("files", calls.count(fixture.SDKServer("files")))
	defer ts.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			tools, err := ts.GetTools(ctx)
			if err == nil && len(tools) != 8 {
				err = fmt.Errorf("%d tools", len(tools))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), dials.Load())
	assert.Equal(t, 1, calls.get("tools/list"))
}

// The listing follows the server's pages.
func TestPagination(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "v1"}, &mcp.ServerOptions{PageSize: 3})
	var want []string
	for i := range 10 {
		name := fmt.Sprintf("tool_%02d", i)
		want = append(want, name)
		mcp.AddTool(server, &mcp.Tool{Name: name, Description: name},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return nil, nil, nil
			})
	}
	var calls counter
	ts, _ := inMemory("many", calls.count(server))
	defer ts.Close()
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, toolNames(tools))
	assert.Equal(t, 4, calls.get("tools/list"))
}

// A server that sends bad tool lists gets a clear error, not a panic and
// not a silent drop: an invalid tool is left out with a warning and
// reported by InvalidTools (or fails the listing under WithFailOnInvalidTools),
// a listing that cannot be read fails.
func TestBadToolLists(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	cases := map[string]struct {
		edit func(res *mcp.ListToolsResult)
		want string
		tool string // the tool refused; "" when the listing fails
	}{
		"schema not an object": {func(res *mcp.ListToolsResult) {
			res.Tools = append(res.Tools, &mcp.Tool{Name: "bad", InputSchema: "object"})
		}, `tool "bad" refused: input schema: toolset: invalid JSON Schema: a schema is a JSON object or a boolean, not a string`, "bad"},
		"output schema not a schema": {func(res *mcp.ListToolsResult) {
			res.Tools = append(res.Tools, &mcp.Tool{Name: "bad", InputSchema: map[string]any{"type": "object"}, OutputSchema: 5})
		}, `tool "bad" refused: output schema: toolset: invalid JSON Schema`, "bad"},
		"no schema": {func(res *mcp.ListToolsResult) {
			res.Tools = append(res.Tools, &mcp.Tool{Name: "bad"})
		}, `tool "bad" refused: the tool has no input schema`, "bad"},
		"listed twice": {func(res *mcp.ListToolsResult) {
			res.Tools = append(res.Tools, res.Tools[0])
		}, `refused: the server lists 2 tools of this name`, "add"},
		"endless pages": {func(res *mcp.ListToolsResult) {
			res.NextCursor = "again"
		}, `the server's pages do not end (cursor "again" after 2 pages)`, ""},
		"pages that never repeat": {func(res *mcp.ListToolsResult) {
			res.NextCursor = fmt.Sprint("page", time.Now().UnixNano())
		}, `after 20 pages`, ""},
	}
	defer mcptoolset.SetMaxPages(20)()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			server := fixture.SDKServer("odd")
			server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if r, ok := req.(*mcp.ListToolsRequest); ok && r.Params != nil && r.Params.Cursor != "" {
						req = &mcp.ListToolsRequest{Session: r.Session, Params: &mcp.ListToolsParams{}, Extra: r.Extra}
					}
					res, err := next(ctx, method, req)
					if l, ok := res.(*mcp.ListToolsResult); ok && err == nil {
						tc.edit(l)
					}
					return res, err
				}
			})
			log, buf := logBuffer()
			strict := mcptoolset.NewInMemory("odd", server, mcptoolset.WithFailOnInvalidTools(), mcptoolset.WithLogger(log))
			defer strict.Close()
			_, err := strict.GetTools(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `mcptoolset: MCP server "odd": list tools: `)
			assert.Contains(t, err.Error(), tc.want)

			lenient := mcptoolset.NewInMemory("odd", server, mcptoolset.WithLogger(log))
			defer lenient.Close()
			tools, err := lenient.GetTools(ctx)
			if tc.tool == "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				return
			}
			require.NoError(t, err, "the other tools are offered")
			assert.NotContains(t, toolNames(tools), tc.tool)
			assert.Contains(t, toolNames(tools), "read_file")
			invalid := lenient.InvalidTools()
			require.Len(t, invalid, 1)
			assert.Equal(t, tc.tool, invalid[0].Tool)
			assert.Contains(t, invalid[0].Error(), tc.want)
			assert.Contains(t, buf.String(), `msg="mcptoolset: refusing an invalid tool of an MCP server" server=odd tool=`+tc.tool)
		})
	}
}
