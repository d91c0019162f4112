package toolpkg

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
)

// objectsSchema adds to the demo's tools one that returns data objects.
const objectsSchema = `{"tools": {
  "big": {"description": "Return n bytes of data.", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
  "objects": {"description": "Return n data objects of size bytes.", "parameters": {"type": "object", "properties": {
    "n": {"type": "integer"}, "size": {"type": "integer"}, "desc": {"type": "integer"}, "disposition": {"type": "string"}}}}
}}`

func objectsToolset(t *testing.T, s *Store) *Toolset {
	t.Helper()
	info := upload(t, s, "demo", demoPackage(t, demoManifest(""), zfile{name: "schema.json", data: []byte(objectsSchema)}))
	require.Equal(t, StatusReady, info.Status, "discovery errors: %v", info.Errors)
	return s.Toolset("demo", nil)
}

// structuredOf returns the *Result of a Content and its size as JSON.
func structuredOf(t *testing.T, res any) (*toolset.Content, *Result, int) {
	t.Helper()
	c, ok := res.(*toolset.Content)
	require.True(t, ok, "%T", res)
	r, ok := c.Structured.(*Result)
	require.True(t, ok, "%T", c.Structured)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return c, r, len(b)
}

// A tool whose data is megabytes long does not get it past the output
// cap as the structured result: the data is left out of it, and the
// model is told it is in the saved whole output.
func TestOversizeDataIsNotStructuredWhole(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", nil)
	res, err := callTool(context.Background(), t, ts, "demo__big", `{"n": 1000000}`)
	require.NoError(t, err)
	c, r, size := structuredOf(t, res)
	assert.LessOrEqual(t, size, DefaultMaxOutputBytes, "the structured result is within the budget")
	assert.Nil(t, r.Data)
	require.Len(t, r.Omitted, 1)
	assert.Contains(t, r.Omitted[0], "data (1000002 bytes) left out of the structured result")
	assert.Contains(t, r.Omitted[0], "artifact big_output.txt version 1")
	text := c.ModelText()
	assert.LessOrEqual(t, len(text), DefaultMaxOutputBytes)
	assert.Contains(t, text, "note: data (1000002 bytes) left out of the structured result")
	ref, data := loadArtifact(t, s, ArtifactScope{}, "big_output.txt", 1)
	assert.EqualValues(t, 1000006, ref.Size)
	assert.Len(t, data, 1000006, "the whole output, data included, is kept")
}

// Over MCP, the structured content of such a result is bounded too: a
// client, which may hand it to the model, is sent no more than the cap,
// and reads where the data went. A small result is sent as before.
func TestOversizeDataIsNotSentWholeOverMCP(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", nil)
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := mcptoolset.NewServer(ts).MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer func() {
		cs.Close()
		_ = ss.Wait()
	}()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__big", Arguments: map[string]any{"n": 1_000_000}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	whole, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Less(t, len(whole), 2*DefaultMaxOutputBytes, "the response is bounded")
	sc, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(sc), DefaultMaxOutputBytes, "the structured content is bounded")
	assert.Contains(t, string(sc), `"Omitted":["data (1000002 bytes) left out of the structured result`)
	assert.Contains(t, string(sc), "big_output.txt version 1")
	var texts []string
	for _, p := range res.Content {
		if tc, ok := p.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	assert.Contains(t, strings.Join(texts, "\n"), "note: data (1000002 bytes) left out of the structured result")

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__big", Arguments: map[string]any{"n": 10}})
	require.NoError(t, err)
	assert.Nil(t, res.StructuredContent)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "big\n\"xxxxxxxxxx\"", res.Content[0].(*mcp.TextContent).Text, "a small result is sent as before")
}

// When no artifact can take the data (the whole output is larger than
// an artifact may be), the data is left out of the structured result
// all the same, and the note says nothing holds it.
func TestOversizeDataWithNoArtifactIsLeftOutWithANote(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect, Artifacts: &ArtifactOptions{MaxArtifactBytes: 1 << 20}})
	ts := readyToolset(t, s, "demo", nil)
	res, err := callTool(context.Background(), t, ts, "demo__big", `{"n": 2000000}`)
	require.NoError(t, err)
	c, r, size := structuredOf(t, res)
	assert.LessOrEqual(t, size, DefaultMaxOutputBytes)
	assert.Nil(t, r.Data)
	assert.Empty(t, r.Artifacts)
	require.Len(t, r.Omitted, 1)
	assert.Contains(t, r.Omitted[0], "no artifact holds it")
	text := c.ModelText()
	assert.Contains(t, text, "note: artifact \"big_output.txt\" not saved")
	assert.Contains(t, text, "note: data (2000002 bytes) left out of the structured result")
}

// data_objects, kept in the structured result as the tool wrote them,
// are left out of it when large: their contents are the result's
// artifacts.
func TestOversizeDataObjectsAreNotStructuredWhole(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := objectsToolset(t, s)
	res, err := callTool(context.Background(), t, ts, "demo__objects", `{"n": 2, "size": 300000, "disposition": "artifact"}`)
	require.NoError(t, err)
	c, r, size := structuredOf(t, res)
	assert.LessOrEqual(t, size, DefaultMaxOutputBytes)
	assert.Nil(t, r.DataObjects)
	assert.JSONEq(t, `{"n": 2}`, string(r.Data), "what fits is kept")
	require.Len(t, r.Artifacts, 2)
	require.Len(t, r.Omitted, 1)
	assert.Contains(t, r.Omitted[0], "data_objects (")
	assert.Contains(t, c.ModelText(), "note: data_objects (")
}

// Many inline data objects, each within ReturnMaxBytes, do not add up
// past the budget: those that do not fit are saved instead.
func TestManyInlineObjectsStayWithinTheBudget(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := objectsToolset(t, s)
	res, err := callTool(context.Background(), t, ts, "demo__objects", `{"n": 100, "size": 4000, "disposition": "inline"}`)
	require.NoError(t, err)
	c, r, size := structuredOf(t, res)
	assert.LessOrEqual(t, size, DefaultMaxOutputBytes)
	inline := 0
	for _, p := range c.Parts[1:] {
		if strings.HasPrefix(p.Text, "yyyy") {
			inline += len(p.Text)
		}
	}
	assert.LessOrEqual(t, inline+len(c.Parts[0].Text), DefaultMaxOutputBytes, "the text and the inline parts share the budget")
	assert.Greater(t, inline, 0)
	assert.NotEmpty(t, r.Artifacts, "the objects past the budget are saved")
	assert.Equal(t, "obj25.txt", r.Artifacts[0].Name)
}

// An artifact's description, which the model is shown in each
// reference, is cut.
func TestHugeArtifactDescriptionIsCut(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := objectsToolset(t, s)
	res, err := callTool(context.Background(), t, ts, "demo__objects", `{"n": 1, "size": 10, "desc": 1000000, "disposition": "artifact"}`)
	require.NoError(t, err)
	c, r, size := structuredOf(t, res)
	assert.LessOrEqual(t, size, DefaultMaxOutputBytes)
	require.Len(t, r.Artifacts, 1)
	assert.Len(t, r.Artifacts[0].Description, maxDescriptionBytes)
	assert.Less(t, len(c.ModelText()), 2000)
}

// With a budget too small for even the list of artifacts, the
// structured result drops it too, and the parts still name each one.
func TestTinyBudgetBoundsTheStructuredResult(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect, MaxOutputBytes: 600})
	ts := objectsToolset(t, s)
	res, err := callTool(context.Background(), t, ts, "demo__objects", `{"n": 5, "size": 10, "desc": 100, "disposition": "artifact"}`)
	require.NoError(t, err)
	c, r, size := structuredOf(t, res)
	assert.LessOrEqual(t, size, 600)
	assert.Nil(t, r.Artifacts)
	assert.NotEmpty(t, r.Omitted)
	text := c.ModelText()
	for i := range 5 {
		assert.Contains(t, text, fmt.Sprintf(`artifact saved: {"filename":"obj%d.txt"`, i))
	}
	assert.Contains(t, text, "note: the list of the 5 artifacts saved left out of the structured result")
}
