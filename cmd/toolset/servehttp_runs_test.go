package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sessionless is the first protocol revision without sessions.
const sessionless = "2026-07-28"

// sessionlessMeta are the _meta fields each request of a 2026-07-28
// client carries, in place of initialize.
const sessionlessMeta = `"io.modelcontextprotocol/protocolVersion":"` + sessionless + `","io.modelcontextprotocol/clientCapabilities":{}`

// setSessionless sets the header of a 2026-07-28 client's request with
// body: its protocol version, and the method and name the body has.
func setSessionless(h http.Header, body string) {
	h.Set("MCP-Protocol-Version", sessionless)
	msg, err := jsonrpc.DecodeMessage([]byte(body))
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return
	}
	h.Set("Mcp-Method", req.Method)
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(req.Params, &p) == nil && p.Name != "" {
		h.Set("Mcp-Name", p.Name)
	}
}

// sessionlessBody makes the JSON-RPC request body one of a 2026-07-28
// client, with sessionlessMeta, unless it has them already.
func sessionlessBody(body string) string {
	if strings.Contains(body, "io.modelcontextprotocol/protocolVersion") {
		return body
	}
	return strings.Replace(body, `"params":{`, `"params":{"_meta":{`+sessionlessMeta+`},`, 1)
}

// artsTool is a packaged tool whose calls save artifacts and read them
// back: save writes output/note.txt (its text) and a result long enough
// to be saved whole (<tool>_output.txt), and says its run's ID; read
// returns the content of the artifact its doc parameter names.
const artsTool = `package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const schema = ` + "`" + `{"tools": {
  "save": {"description": "Save the text as output/note.txt.", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
  "read": {"description": "Read an artifact back.", "artifact_params": {"doc": {"required": true}},
    "parameters": {"type": "object", "properties": {"doc": {"type": "string"}}, "required": ["doc"]}}
}}` + "`" + `

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--schema" {
		fmt.Println(schema)
		return
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		os.Exit(1)
	}
	var ra struct {
		ToolName      string            ` + "`json:\"tool_name\"`" + `
		Args          map[string]string ` + "`json:\"args\"`" + `
		ResultFile    string            ` + "`json:\"result_file\"`" + `
		OutputDir     string            ` + "`json:\"output_dir\"`" + `
		TaskID        string            ` + "`json:\"task_id\"`" + `
		ArtifactPaths map[string]string ` + "`json:\"artifact_paths\"`" + `
	}
	if err := json.Unmarshal(raw, &ra); err != nil {
		os.Exit(1)
	}
	msg := ""
	switch ra.ToolName {
	case "save":
		os.WriteFile(filepath.Join(ra.OutputDir, "note.txt"), []byte(ra.Args["text"]), 0o644)
		msg = "run " + ra.TaskID + " saved " + ra.Args["text"] + "\n" + strings.Repeat("x", 5000)
	case "read":
		b, err := os.ReadFile(ra.ArtifactPaths["doc"])
		if err != nil {
			msg = "unreadable"
		}
		msg = "read: " + string(b)
	}
	out, _ := json.Marshal(map[string]any{"result": map[string]any{"status": "success", "message": msg}})
	os.WriteFile(ra.ResultFile, out, 0o644)
}
`

// artsPackage packages artsTool with the built CLI (see runBuilt) as
// arts.zip.
func artsPackage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"manifest.yaml":    "version: 1\ntools:\n  arts:\n    runtime: go\n    executable: ./artstool\n    timeout_seconds: 10\n",
		"go.mod":           "module example.com/artstest\n\ngo 1.26\n",
		"artstool/main.go": artsTool,
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	zip := filepath.Join(t.TempDir(), "arts.zip")
	code, _, stderr := runBuilt(t, "package", dir, "-o", zip)
	require.Equal(t, 0, code, stderr)
	return zip
}

// sdkClient is an MCP SDK client of one protocol revision that
// authenticates with a token and, without a session, sends back the run
// handle of the latest result it got (or the one it is told to).
type sdkClient struct {
	cs     *mcp.ClientSession
	handle string
}

func dialRunner(t *testing.T, endpoint, token, version string) *sdkClient {
	t.Helper()
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return &sdkClient{cs: cs}
}

// callWith calls the tool with the arguments, sending handle (none if
// "") in _meta, and keeps the handle the result carries.
func (c *sdkClient) callWith(handle, tool string, args map[string]any) (string, bool, error) {
	var meta mcp.Meta
	if handle != "" {
		meta = mcp.Meta{mcptoolset.MetaRunHandle: handle}
	}
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err != nil {
		return "", false, err
	}
	if h, ok := res.Meta[mcptoolset.MetaRunHandle].(string); ok {
		c.handle = h
	}
	var text []string
	for _, p := range res.Content {
		if tc, ok := p.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n"), res.IsError, nil
}

// call calls the tool in the client's run.
func (c *sdkClient) call(t *testing.T, tool string, args map[string]any) (string, bool) {
	t.Helper()
	text, isErr, err := c.callWith(c.handle, tool, args)
	require.NoError(t, err)
	return text, isErr
}

var (
	savedNote  = regexp.MustCompile(`artifact saved: \{"filename":"(note-[0-9a-f]{24}\.txt)"`)
	savedWhole = regexp.MustCompile(`\[the whole output was saved as artifact (save_output-[0-9a-f]{24}\.txt) version 1\]`)
	runOfSave  = regexp.MustCompile(`run (\S+) saved`)
)

// save calls arts__save with text and returns the names of the artifacts
// it saved and the ID of the run it was in.
func (c *sdkClient) save(t *testing.T, text string) (note, whole, run string) {
	t.Helper()
	out, isErr := c.call(t, "arts__save", map[string]any{"text": text})
	require.False(t, isErr, out)
	n, w, r := savedNote.FindStringSubmatch(out), savedWhole.FindStringSubmatch(out), runOfSave.FindStringSubmatch(out)
	require.NotNil(t, n, out)
	require.NotNil(t, w, out)
	require.NotNil(t, r, out)
	return n[1], w[1], r[1]
}

// requireUnreadable fails unless arts__read of doc, with the other
// arguments, is a model error saying so, in c's run.
func requireUnreadable(t *testing.T, c *sdkClient, doc string, extra map[string]any) {
	t.Helper()
	args := map[string]any{"doc": doc}
	for k, v := range extra {
		args[k] = v
	}
	out, isErr := c.call(t, "arts__read", args)
	assert.True(t, isErr, "doc %q read: %s", doc, out)
	assert.NotContains(t, out, "read: ", "doc %q", doc)
}

// requireInvalidHandle fails unless err is the JSON-RPC error of a
// refused run handle.
func requireInvalidHandle(t *testing.T, err error) {
	t.Helper()
	var je *jsonrpc.Error
	require.True(t, errors.As(err, &je), "a JSON-RPC error, got %v", err)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), je.Code)
	assert.Contains(t, je.Message, "invalid run handle")
}

// TestServeHTTPKeepsEachClientsRunAndArtifacts runs `toolset serve
// --http` with two tokens, reached by real SDK clients of both kinds:
// each client conversation is one run, whose artifacts no other client
// reaches, by name, by guessing, by another's run handle or by naming a
// scope in its arguments.
func TestServeHTTPKeepsEachClientsRunAndArtifacts(t *testing.T) {
	// Its processes, ports and files are its own: it waits on them beside
	// the other tests that are.
	t.Parallel()
	bin := cliBinary(t)
	zip := artsPackage(t)
	tokenA, tokenB := testToken+"-a", testToken+"-b"
	tokens := withToken(t, "# the clients\n"+tokenA+"\n\n"+tokenB+"\n")
	key := withToken(t, strings.Repeat("k", 40)+"\n")
	r := startRunner(t, bin, zip, "", "--token-file", tokens, "--run-key-file", key)
	endpoint := r.base + "/mcp"

	t.Run("Sessionless", func(t *testing.T) {
		a := dialRunner(t, endpoint, tokenA, sessionless)
		mark := "a-" + marker()
		note, whole, run := a.save(t, mark)
		require.NotEmpty(t, a.handle, "a result without a session carries a run handle")
		assert.True(t, strings.HasPrefix(run, "mcp-h-"), run)
		handleA := a.handle

		// A's next requests, in the same run, read both back.
		text, isErr := a.call(t, "arts__read", map[string]any{"doc": note})
		require.False(t, isErr, text)
		assert.Equal(t, "read: "+mark, text)
		text, isErr = a.call(t, "arts__read", map[string]any{"doc": whole})
		require.False(t, isErr, text)
		assert.Contains(t, text, "saved "+mark)
		// A conversation of A's without the handle is another run.
		fresh := dialRunner(t, endpoint, tokenA, sessionless)
		requireUnreadable(t, fresh, note, nil)

		// B reads none of it: by the names A was shown, by the names
		// the tool chose, by naming A's run in its arguments.
		b := dialRunner(t, endpoint, tokenB, sessionless)
		for _, doc := range []string{note, whole, "note.txt", "save_output.txt", "../" + note, "run:" + run + "/" + note, run + "/" + note, "/" + note} {
			requireUnreadable(t, b, doc, nil)
		}
		requireUnreadable(t, b, note, map[string]any{"session_id": run, "user_id": "", "app_name": "arts", "task_id": run})
		require.NotEmpty(t, b.handle)
		assert.NotEqual(t, handleA, b.handle)

		// B replaying A's handle is refused: it is bound to A's token.
		_, _, err := b.callWith(handleA, "arts__read", map[string]any{"doc": note})
		requireInvalidHandle(t, err)
		// A handle this runner's key did not sign is refused, as is one
		// changed.
		other := startRunner(t, bin, zip, "", "--token-file", tokens)
		elsewhere := dialRunner(t, other.base+"/mcp", tokenA, sessionless)
		elsewhere.save(t, mark)
		_, _, err = a.callWith(elsewhere.handle, "arts__read", map[string]any{"doc": note})
		requireInvalidHandle(t, err)
		changed := []byte(handleA)
		changed[len(changed)-1] ^= 1
		_, _, err = a.callWith(string(changed), "arts__read", map[string]any{"doc": note})
		var je *jsonrpc.Error
		require.ErrorAs(t, err, &je)
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), je.Code)

		// A's run is intact after all that.
		text, isErr, err = a.callWith(handleA, "arts__read", map[string]any{"doc": note})
		require.NoError(t, err)
		require.False(t, isErr, text)
		assert.Equal(t, "read: "+mark, text)
	})

	t.Run("Session", func(t *testing.T) {
		a := dialRunner(t, endpoint, tokenA, "2025-11-25")
		require.NotEmpty(t, a.cs.ID(), "a session")
		mark := "s-" + marker()
		note, whole, run := a.save(t, mark)
		assert.Equal(t, "mcp-"+a.cs.ID(), run, "the session's run")
		assert.Empty(t, a.handle, "a session needs no handle")
		text, isErr := a.call(t, "arts__read", map[string]any{"doc": note})
		require.False(t, isErr, text)
		assert.Equal(t, "read: "+mark, text)

		// Another session, of either token, reads none of it.
		for _, tok := range []string{tokenA, tokenB} {
			b := dialRunner(t, endpoint, tok, "2025-11-25")
			for _, doc := range []string{note, whole, "note.txt", "../" + note} {
				requireUnreadable(t, b, doc, nil)
			}
		}
		// B's requests in A's session are refused.
		resp := sessionPost(t, endpoint, tokenB, a.cs.ID(), fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"arts__read","arguments":{"doc":%q}}}`, note))
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

// sessionPost posts body in the session id, with the token.
func sessionPost(t *testing.T, endpoint, token, id, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

// requireTokens lets in each token of its list and no other, and gives
// the request the token's binding, a digest that holds no part of it.
func TestRequireTokensBindsEachTokenApart(t *testing.T) {
	tokA, tokB := testToken+"-a", testToken+"-b"
	var got []string
	h := requireTokens([]string{tokA, tokB}, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, auth.TokenInfoFromContext(r.Context()).UserID)
	}))
	serve := func(authz string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, authz := range []string{"", "Bearer " + testToken, "Bearer " + tokA + "x", "Basic " + tokA, tokA, "Bearer " + tokA + " " + tokB} {
		assert.Equal(t, http.StatusUnauthorized, serve(authz), "Authorization: %q", authz)
	}
	assert.Empty(t, got, "refused requests reach nothing")
	assert.Equal(t, http.StatusOK, serve("Bearer "+tokA))
	assert.Equal(t, http.StatusOK, serve("bearer "+tokB))
	assert.Equal(t, http.StatusOK, serve("Bearer "+tokA))
	require.Len(t, got, 3)
	assert.Equal(t, tokenBinding(nil, tokA), got[0])
	assert.Equal(t, got[0], got[2])
	assert.NotEqual(t, got[0], got[1])
	for _, b := range got {
		assert.NotContains(t, b, testToken)
	}
	// The binding reaches packaged tools as their user ID: a guess of the
	// token cannot be checked against it without this process's secret.
	guess := sha256.Sum256([]byte("toolset serve --http: the runs of a token\x00" + tokA))
	assert.NotEqual(t, "token-"+hex.EncodeToString(guess[:16]), got[0])
}
