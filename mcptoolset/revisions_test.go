package mcptoolset_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sessionless is the first protocol revision without sessions.
const sessionless = "2026-07-28"

// runClient is an SDK client that sends back the run handle of the latest
// result it got, as a 2026-07-28 client keeps a server's handle.
type runClient struct {
	cs     *mcp.ClientSession
	handle string
}

func (c *runClient) meta() mcp.Meta {
	if c.handle == "" {
		return nil
	}
	return mcp.Meta{mcptoolset.MetaRunHandle: c.handle}
}

func (c *runClient) keep(m mcp.Meta) {
	if h, ok := m[mcptoolset.MetaRunHandle].(string); ok {
		c.handle = h
	}
}

func (c *runClient) list(t *testing.T) []string {
	t.Helper()
	res, err := c.cs.ListTools(context.Background(), &mcp.ListToolsParams{Meta: c.meta()})
	require.NoError(t, err)
	c.keep(res.Meta)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func (c *runClient) call(t *testing.T, name string, args any) (string, bool) {
	t.Helper()
	res, err := c.callErr(name, args)
	require.NoError(t, err)
	require.NotEmpty(t, res.Content)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func (c *runClient) callErr(name string, args any) (*mcp.CallToolResult, error) {
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: c.meta()})
	if err == nil {
		c.keep(res.Meta)
	}
	return res, err
}

// dial connects an SDK client speaking version to the MCP endpoint url.
func dial(t *testing.T, url, version string, opts *mcp.ClientOptions) *runClient {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, opts).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return &runClient{cs: cs}
}

// The default HTTP handler serves a client of every revision the SDK
// speaks: older ones in a session, 2026-07-28 ones without.
func TestHTTPHandlerServesEveryRevision(t *testing.T) {
	checkLeaks(t)
	echo := toolset.NewTool("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
	srv := mcptoolset.NewServer(toolset.NewFunction(echo))
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	t.Cleanup(hs.Close)
	for _, version := range mcp.SupportedProtocolVersions() {
		t.Run(version, func(t *testing.T) {
			c := dial(t, hs.URL, version, nil)
			assert.Equal(t, version, c.cs.InitializeResult().ProtocolVersion)
			if version >= sessionless {
				assert.Empty(t, c.cs.ID(), "no session")
			} else {
				assert.NotEmpty(t, c.cs.ID(), "a session")
			}
			assert.Equal(t, []string{"echo"}, c.list(t))
			text, isErr := c.call(t, "echo", map[string]any{"text": "hi " + version})
			assert.False(t, isErr, text)
			assert.Equal(t, "hi "+version, text)
			if version >= sessionless {
				assert.NotEmpty(t, c.handle, "a sessionless result carries the run's handle")
			} else {
				assert.Empty(t, c.handle, "a session needs no handle")
			}
		})
	}
}

// A stateless handler asked for serves every revision without sessions.
func TestStatelessHTTPHandlerServesEveryRevision(t *testing.T) {
	checkLeaks(t)
	srv := mcptoolset.NewServer(searchable())
	hs := httptest.NewServer(srv.HTTPHandler(&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	for _, version := range mcp.SupportedProtocolVersions() {
		t.Run(version, func(t *testing.T) {
			c := dial(t, hs.URL, version, nil)
			assert.Empty(t, c.cs.ID())
			_, isErr := c.call(t, "tool_search", map[string]any{"query": "refund"})
			require.False(t, isErr)
			assert.Contains(t, c.list(t), "refund_payment", "the handle carries the run on")
		})
	}
}

// A client of each revision searches, the search reveals a deferred tool,
// the client is told the list changed, lists it, and calls it; another
// client does not see it.
func TestRevealReachesTheClientOfEveryRevision(t *testing.T) {
	checkLeaks(t)
	srv := mcptoolset.NewServer(searchable())
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	t.Cleanup(hs.Close)
	for _, version := range mcp.SupportedProtocolVersions() {
		t.Run(version, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			c := dial(t, hs.URL, version, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				},
			})
			other := dial(t, hs.URL, version, nil)
			assert.Equal(t, []string{"tool_search"}, c.list(t))
			text, isErr := c.call(t, "tool_search", map[string]any{"query": "invoice", "top_k": 1})
			require.False(t, isErr, text)
			assert.Contains(t, text, "create_invoice")
			select {
			case <-changed:
			case <-time.After(5 * time.Second):
				t.Fatal("the client is not told the tool list changed")
			}
			assert.Equal(t, []string{"create_invoice", "tool_search"}, c.list(t))
			text, isErr = c.call(t, "create_invoice", nil)
			assert.False(t, isErr, text)
			assert.Equal(t, "invoice created", text)

			assert.Equal(t, []string{"tool_search"}, other.list(t), "another client's run sees no reveal")
			text, isErr = other.call(t, "create_invoice", nil)
			assert.True(t, isErr)
			assert.Contains(t, text, `unknown tool "create_invoice"`)
		})
	}
}

// Served lists carry ttlMs and a private cacheScope (SEP-2549); the
// default ttl is zero, so a 2026-07-28 client lists again each time.
func TestServedListsCarryTheirTTL(t *testing.T) {
	checkLeaks(t)
	for _, ttl := range []time.Duration{0, 1500 * time.Millisecond} {
		srv := mcptoolset.NewServer(searchable(), mcptoolset.WithListTTL(ttl))
		hs := httptest.NewServer(srv.HTTPHandler(nil))
		c := dial(t, hs.URL, sessionless, nil)
		res, err := c.cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		assert.Equal(t, int(ttl.Milliseconds()), res.TTLMs)
		assert.Equal(t, "private", res.CacheScope)
		c.cs.Close()
		hs.Close()
	}
}

// WithRunOptions says who a sessionless client is, at each of its
// requests; its refusal reaches the client. A server with a run context
// function and no WithRunOptions makes each sessionless request a run of
// its own, without a handle.
func TestRunOptionsSayWhoASessionlessClientIs(t *testing.T) {
	checkLeaks(t)
	role := toolset.NewKey[string]("role")
	admin := toolset.NewFunction(toolset.NewTool("drop_table", "Drop.", func(context.Context, struct{}) (string, error) {
		return "dropped", nil
	})).Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) { return role.Get(ctx) == "admin", nil })
	var runIDs []string
	srv := mcptoolset.NewServer(toolset.NewCombined(searchable(), admin), mcptoolset.WithRunOptions(func(_ context.Context, req *mcptoolset.Request) ([]toolset.RunOption, error) {
		runIDs = append(runIDs, req.RunID)
		switch r := req.Extra.Header.Get("X-User"); r {
		case "":
			return nil, &jsonrpc.Error{Code: 401, Message: "who are you?"}
		default:
			return []toolset.RunOption{toolset.WithValue(role, r)}, nil
		}
	}))
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	t.Cleanup(hs.Close)
	a := dialAs(t, hs.URL, "admin")
	assert.ElementsMatch(t, []string{"drop_table", "tool_search"}, a.list(t))
	_, isErr := a.call(t, "tool_search", map[string]any{"query": "refund", "top_k": 1})
	require.False(t, isErr)
	assert.ElementsMatch(t, []string{"drop_table", "refund_payment", "tool_search"}, a.list(t))
	require.GreaterOrEqual(t, len(runIDs), 3)
	assert.Equal(t, runIDs[0], runIDs[len(runIDs)-1], "one run, named by the handle")
	assert.Regexp(t, `^mcp-h-[0-9a-f]{32}$`, runIDs[0])
	assert.Equal(t, []string{"tool_search"}, dialAs(t, hs.URL, "guest").list(t))

	_, err := dial(t, hs.URL, sessionless, nil).callErr("tool_search", nil)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "who are you?", je.Message)

	var calls int
	legacy := mcptoolset.NewServer(searchable(), mcptoolset.WithRunContext(func(context.Context, *mcptoolset.Request) (*toolset.RunContext, error) {
		calls++
		return toolset.NewRun(""), nil
	}))
	lhs := httptest.NewServer(legacy.HTTPHandler(nil))
	t.Cleanup(lhs.Close)
	c := dial(t, lhs.URL, sessionless, nil)
	_, isErr = c.call(t, "tool_search", map[string]any{"query": "refund"})
	require.False(t, isErr)
	assert.Equal(t, []string{"tool_search"}, c.list(t), "a run of its own per request")
	assert.Empty(t, c.handle, "no handle")
	assert.GreaterOrEqual(t, calls, 2, "the function begins each request's run")
}
