package mcptoolset_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Arguments that give a key twice never reach a remote tool: the server,
// in whatever language, might read the first value, which nobody
// validated or approved. They are refused for the model, and no
// tools/call is sent.
func TestRepeatedKeyIsNotSentToTheServer(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	var calls counter
	ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")))
	defer ts.Close()
	tools, err := toolset.BuildTools(ctx, "agent", ts)
	require.NoError(t, err)
	for _, args := range []string{`{"path":"a","path":"/etc/passwd"}`, `{"path":"a","\u0070ath":"/etc/passwd"}`} {
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(args)})
		var ae *toolset.ArgumentError
		require.ErrorAs(t, err, &ae, args)
		assert.Equal(t, "path", ae.Problems[0].Field, args)
		msg, forModel := toolset.ErrorText(err)
		assert.True(t, forModel)
		assert.Contains(t, msg, "must be unique", args)
	}
	assert.Zero(t, calls.get("tools/call"))
}

// A client of a Server that sends arguments giving a key twice gets an
// error result, and the tool does not run.
func TestServerRefusesARepeatedKey(t *testing.T) {
	checkLeaks(t)
	ran := 0
	read := toolset.NewTool("read_file", "Read a file.", func(_ context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		ran++
		return "contents of " + in.Path, nil
	})
	srv := mcptoolset.NewServer(toolset.NewFunction(read))
	cs := connect(t, srv, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: json.RawMessage(`{"path":"a","path":"/etc/passwd"}`)})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.NotEmpty(t, res.Content)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "must be unique")
	assert.Zero(t, ran)
}
