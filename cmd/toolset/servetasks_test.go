package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// serve marks as long running the packaged tools whose timeout is past
// the default, and the tools marked with the metadata key; the others are
// called synchronously.
func TestPackagedLongRunning(t *testing.T) {
	info := toolpkg.Info{Tools: []toolpkg.ToolInfo{
		{Name: "quick", TimeoutSeconds: 30},
		{Name: "default", TimeoutSeconds: toolpkg.DefaultTimeoutSeconds},
		{Name: "render", TimeoutSeconds: 3600},
	}}
	long := packagedLongRunning(info)
	tool := func(name string, md map[string]string) toolset.Tool {
		m := map[string]string{"toolpkg.tool": name}
		for k, v := range md {
			m[k] = v
		}
		return toolset.NewRawTool("pkg__"+name, "A tool.", nil, nil, toolset.WithMetadata(m))
	}
	for _, tc := range []struct {
		tool toolset.Tool
		want bool
	}{
		{tool("quick", nil), false},
		{tool("default", nil), false},
		{tool("render", nil), true},
		{tool("unknown", nil), false},
		{tool("quick", map[string]string{mcptoolset.MetaLongRunning: "true"}), true},
		{tool("quick", map[string]string{mcptoolset.MetaLongRunning: "yes"}), false},
	} {
		if got := long(tc.tool); got != tc.want {
			t.Errorf("%s (%v): long running %v, want %v", tc.tool.Name, tc.tool.Metadata, got, tc.want)
		}
	}
}

type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type taskResult struct {
	mcp.ResultBase
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
}

// toolset serve runs a packaged tool whose timeout is past the default
// as an MCP task for a client that declares the extension: the call
// returns a task, which completes with the tool's result.
func TestServePackagedLongRunningToolAsTask(t *testing.T) {
	zip := packagedWithManifest(t, func(m string) string {
		return strings.Replace(m, "timeout_seconds: 5", "timeout_seconds: 3600", 1)
	})

	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	old := stdin
	stdin = toServer
	t.Cleanup(func() { stdin = old })
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run([]string{"serve", zip}, fromServer, &errb)
		fromServer.Close()
		done <- code
	}()

	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(mcptoolset.ExtensionTasks, map[string]any{})
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, &mcp.ClientOptions{Capabilities: caps})
	require.NoError(t, mcp.AddSendingCustomMethod[*taskParams, *taskResult](c, "tasks/get"))
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"text": "as a task"}})
	require.NoError(t, err)
	require.Empty(t, res.Content, "a task")
	rel, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
	id, _ := rel["taskId"].(string)
	require.NotEmpty(t, id, "%v", res.Meta)
	var got *taskResult
	require.Eventually(t, func() bool {
		got, err = mcp.CallCustomMethod[*taskParams, *taskResult](ctx, cs, "tasks/get", &taskParams{TaskID: id})
		return err == nil && got.Status != "working"
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, "completed", got.Status)
	var final mcp.CallToolResult
	require.NoError(t, json.Unmarshal(got.Result, &final))
	require.Len(t, final.Content, 1)
	assert.True(t, strings.HasPrefix(final.Content[0].(*mcp.TextContent).Text, "hello, as a task"), "%v", final.Content[0])

	require.NoError(t, cs.Close())
	clientOut.Close()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, errb.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not end with its client")
	}
}
