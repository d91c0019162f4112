package mcptoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tools of a server written with the SDK arrive with their names,
// descriptions, schemas and annotations.
func TestToolsFromSDKServer(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := fixture.SDKServer("files")
	ts := mcptoolset.NewInMemory("files", server)
	defer ts.Close()

	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"read_file", "add", "fail", "image", "slow", "weird", "add_tool", "crash"}, toolNames(tools))

	// What the server sends, as the SDK's own client sees it.
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer func() { cs.Close(); ss.Wait() }()
	listed, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, want := range listed.Tools {
		got := byName(t, tools, want.Name)
		assert.Equal(t, want.Description, got.Description, want.Name)
		wantIn, err := json.Marshal(want.InputSchema)
		require.NoError(t, err)
		gotIn, err := got.ParametersJSON()
		require.NoError(t, err)
		requireSameJSON(t, wantIn, gotIn)
		if want.OutputSchema == nil {
			assert.Nil(t, got.Returns, want.Name)
			continue
		}
		wantOut, err := json.Marshal(want.OutputSchema)
		require.NoError(t, err)
		gotOut, err := json.Marshal(got.Returns)
		require.NoError(t, err)
		requireSameJSON(t, wantOut, gotOut)
	}

	// A hand-written schema with keywords outside draft 2020-12 is kept.
	weird, err := byName(t, tools, "weird").ParametersJSON()
	require.NoError(t, err)
	requireSameJSON(t, []byte(fixture.WeirdSchema), weird)

	read := byName(t, tools, "read_file")
	assert.Equal(t, map[string]string{
		mcptoolset.MetaServer:      "files",
		mcptoolset.MetaTool:        "read_file",
		mcptoolset.MetaTitle:       "Read file",
		mcptoolset.MetaReadOnly:    "true",
		mcptoolset.MetaIdempotent:  "false",
		mcptoolset.MetaDestructive: "false",
	}, read.Metadata)
	assert.Equal(t, map[string]string{mcptoolset.MetaServer: "files", mcptoolset.MetaTool: "add"},
		byName(t, tools, "add").Metadata, "no annotations, no hint keys")

	assert.Equal(t, "mcp:files", ts.Label())
	assert.Equal(t, "mcp:files", toolset.LabelOf(ts))
	text, err := ts.Instructions(ctx)
	require.NoError(t, err)
	assert.Equal(t, "Use files for files.", text)
}

// The core's tool options apply to a server's tools: here a timeout shown
// to the model, and metadata, picked from each tool's definition. The
// server is in memory, so the test runs in fake time: the call that
// outlasts the 50 ms timeout fails, and the one of 1 ms succeeds, however
// loaded the machine is.
func TestToolOptions(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var seen []string
		ts := mcptoolset.NewInMemory("files", fixture.SDKServer("files"), mcptoolset.WithToolOptions(func(def *mcp.Tool) []toolset.ToolOption {
			seen = append(seen, def.Name)
			if def.Name != "slow" {
				return nil
			}
			return []toolset.ToolOption{
				toolset.WithTimeout(50*time.Millisecond, toolset.TimeoutTellModel),
				toolset.WithMetadata(map[string]string{"team": "storage"}),
			}
		}))
		defer ts.Close()
		tools, err := toolset.BuildTools(ctx, "agent", ts)
		require.NoError(t, err)
		slow, ok := tools.Lookup("slow")
		require.True(t, ok)
		assert.Equal(t, "storage", slow.Metadata["team"])
		assert.Equal(t, "slow", slow.Metadata[mcptoolset.MetaTool])

		start := time.Now()
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{"millis":5000}`)})
		var timeout *toolset.TimeoutError
		require.ErrorAs(t, err, &timeout)
		assert.Equal(t, 50*time.Millisecond, time.Since(start), "the call ends at its timeout")
		msg, ok := toolset.ErrorText(err)
		assert.True(t, ok)
		assert.Contains(t, msg, `tool "slow" timed out after 50ms`)
		res, err := tools.Execute(ctx, toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{"millis":1}`)})
		require.NoError(t, err)
		assert.Equal(t, "done", content(t, res).Parts[0].Text)

		_, err = ts.GetTools(ctx)
		require.NoError(t, err)
		assert.Len(t, seen, 8, "once per definition")
	})
}

// A tool the server announces anew with a changed definition is a new
// tool value, but the same tool for the agent's policies: it keeps its
// failure budget in the run and its rate window, as the options of
// WithToolOptions set them, instead of starting afresh each announcement.
func TestReannouncedToolKeepsItsBudgetAndRateWindow(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "v1"}, nil)
	announce := func(version string) {
		mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search, " + version + "."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return nil, nil, errors.New("the index is down")
			})
		mcp.AddTool(s, &mcp.Tool{Name: "ping", Description: "Ping, " + version + "."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
			})
	}
	announce("v1")
	// The same option values for each definition, as an agent's
	// configuration gives them.
	opts := map[string][]toolset.ToolOption{
		"search": {toolset.WithMaxFailures(2)},
		"ping":   {toolset.WithRateLimit(toolset.RateLimit{Requests: 1, Interval: time.Hour, Reject: true})},
	}
	ts, _ := inMemory("web", s, mcptoolset.WithToolOptions(func(d *mcp.Tool) []toolset.ToolOption { return opts[d.Name] }))
	defer ts.Close()
	run := toolset.NewRun("r")
	defer run.End()

	turn := run.Turn(ctx)
	first, err := ts.GetTools(turn)
	require.NoError(t, err)
	tools, err := toolset.BuildTools(turn, "agent", ts)
	require.NoError(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{Name: "search", Args: json.RawMessage(`{}`)})
	require.Error(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{Name: "ping", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)

	announce("v2") // the server changes both: notifications/tools/list_changed
	var second []toolset.Tool
	require.Eventually(t, func() bool {
		second, err = ts.GetTools(ctx)
		require.NoError(t, err)
		return byName(t, second, "search").Description == "Search, v2."
	}, 5*time.Second, 10*time.Millisecond, "the new definition shows up")
	require.False(t, byName(t, first, "search").Same(byName(t, second, "search")), "a changed definition makes a new tool")

	turn = run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "agent", ts)
	require.NoError(t, err)
	require.Contains(t, tools.Names(), "search", "one failing step of two")
	_, err = tools.Execute(turn, toolset.ToolCall{Name: "search", Args: json.RawMessage(`{}`)})
	require.Error(t, err)
	_, err = tools.Execute(turn, toolset.ToolCall{Name: "ping", Args: json.RawMessage(`{}`)})
	var rl *toolset.RateLimitError
	require.ErrorAs(t, err, &rl, "the new ping has the window of the old one")

	tools, err = toolset.BuildTools(run.Turn(ctx), "agent", ts)
	require.NoError(t, err)
	assert.NotContains(t, tools.Names(), "search", "failed in two steps under two definitions: spent")
}
