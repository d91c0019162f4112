package mcptoolset_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCallResults(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	ts := mcptoolset.NewInMemory("files", fixture.SDKServer("files"))
	defer ts.Close()
	tools, err := toolset.BuildTools(ctx, "agent", ts)
	require.NoError(t, err)

	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)})
	require.NoError(t, err)
	assert.Equal(t, []toolset.Part{{Text: "files: contents of a.txt"}}, content(t, res).Parts)
	text, err := toolset.ResultText(res)
	require.NoError(t, err)
	assert.Equal(t, "files: contents of a.txt", text)

	res, err = tools.Execute(ctx, toolset.ToolCall{Name: "add", Args: json.RawMessage(`{"a":2,"b":3}`)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"sum": float64(5)}, content(t, res).Structured)
	require.Len(t, content(t, res).Parts, 1)
	assert.JSONEq(t, `{"sum":5}`, content(t, res).Parts[0].Text)

	res, err = tools.Execute(ctx, toolset.ToolCall{Name: "image", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, []toolset.Part{{MIMEType: "image/png", Data: fixture.PNG}, {Text: "a pixel"}}, content(t, res).Parts)

	// isError: an error for the model, carrying the text.
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "fail", Args: nil})
	var re *mcptoolset.ResultError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "files", re.Server)
	assert.Equal(t, "fail", re.Tool)
	msg, ok := toolset.ErrorText(err)
	assert.True(t, ok, "an isError result is for the model")
	assert.Equal(t, "no such file", msg)
	assert.Contains(t, err.Error(), `MCP server "files": tool "fail" reported an error: no such file`)

	// Arguments are checked against the server's schema before the call.
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(`{"path":7}`)})
	var ae *toolset.ArgumentError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "path", ae.Problems[0].Field)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "weird", Args: json.RawMessage(`{"when":null,"home":{"zip":5}}`)})
	require.ErrorAs(t, err, &ae, "the $ref into draft-07 definitions is followed")
	res, err = tools.Execute(ctx, toolset.ToolCall{Name: "weird", Args: json.RawMessage(`{"when":null,"home":{"zip":"75001"}}`)})
	require.NoError(t, err)
	assert.Equal(t, `weird {"when":null,"home":{"zip":"75001"}}`, content(t, res).Parts[0].Text)
}
