package mesh

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

var inputScope = toolpkg.ArtifactScope{AppName: "app", UserID: "u1", SessionID: "s1"}

// inputRun is a run of the scope's app, user and session.
func inputRun(t *testing.T) context.Context {
	t.Helper()
	run := toolset.NewRun("", toolset.WithValues(map[string]any{"app_name": "app", "user_id": "u1", "session_id": "s1"}))
	t.Cleanup(run.End)
	return run.Turn(context.Background())
}

func saveText(t *testing.T, a toolpkg.ArtifactStore, name, text string) toolpkg.ArtifactRef {
	t.Helper()
	ref, err := a.Save(context.Background(), inputScope, toolpkg.ArtifactRef{Name: name, MIMEType: "text/plain"}, strings.NewReader(text))
	require.NoError(t, err)
	return ref
}

// An agent's input artifacts reach the tool's artifact parameters as in
// process: small ones inline, large ones by reference through the shared
// store, each under the name and version the arguments give, even when
// the agent's own store counts versions otherwise than the shared one.
func TestInputArtifactsInlineAndByReference(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	startRuntime(t, nc, "", "rt1", 2)
	shared, err := NewArtifactStore(context.Background(), nc, nil)
	require.NoError(t, err)
	own, err := toolpkg.NewDirArtifactStore(t.TempDir(), 1<<20)
	require.NoError(t, err)
	for _, text := range []string{"one", "two", "three"} {
		saveText(t, own, "notes.txt", text)
	}
	saveText(t, own, "big.bin", strings.Repeat("x", 100<<10))
	saveText(t, own, "a.txt", "alpha")
	// The shared store already holds versions of the same names, and an
	// artifact the agent's store does not have.
	saveText(t, shared, "notes.txt", "shared one")
	saveText(t, shared, "notes.txt", "shared two")
	saveText(t, shared, "ghost.txt", "not the agent's")

	for _, tc := range []struct {
		name   string
		inline int
	}{{"inline", 0}, {"by reference", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(context.Background(), connect(t, s), &ClientOptions{Logger: quietLogger(), Artifacts: own, MaxInlineArtifactBytes: tc.inline})
			require.NoError(t, err)
			defer c.Close()
			ctx := inputRun(t)
			list, err := toolset.BuildTools(ctx, c.Agent(), c.Toolset("demo", nil))
			require.NoError(t, err)
			run := func(args string) (string, error) {
				out, err := list.Execute(ctx, toolset.ToolCall{ID: "c", Name: "demo__readfile", Args: json.RawMessage(args)})
				if err != nil {
					return "", err
				}
				return modelText(t, out), nil
			}
			got, err := run(`{"file": "notes.txt:2"}`)
			require.NoError(t, err)
			assert.Equal(t, "file=notes.txt v2 text/plain: two", got, "version 2 of the agent's store")
			got, err = run(`{"file": "notes.txt", "more": ["a.txt", "notes.txt:1"]}`)
			require.NoError(t, err)
			assert.Equal(t, "file=notes.txt v3 text/plain: three\nmore[0]=a.txt v1 text/plain: alpha\nmore[1]=notes.txt v1 text/plain: one", got)
			// Above the inline bound: by reference whatever the option.
			got, err = run(`{"file": "big.bin"}`)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("file=big.bin v1 text/plain: %d bytes", 100<<10), got)

			// A name the agent's store does not have is missing, as in
			// process, even when the shared store has one.
			_, err = run(`{"file": "ghost.txt"}`)
			var ae *toolpkg.ArtifactError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, `artifact parameter "file": no artifact "ghost.txt"; the model can only name artifacts that exist`, ae.ModelText(), "as in process")
			_, err = run(`{"file": "notes.txt:9"}`)
			require.ErrorAs(t, err, &ae)
		})
	}
}

// A SAM agent's invoke: preloaded_artifacts under the parameter's name,
// artifact_references into the shared store.
func TestInputArtifactsFromASAMInvoke(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	startRuntime(t, nc, "", "rt1", 2)
	shared, err := NewArtifactStore(context.Background(), nc, nil)
	require.NoError(t, err)
	saveText(t, shared, "ref.txt", "first")
	saveText(t, shared, "ref.txt", "second")

	c := listen(t, nc, "sam", "c1")
	m := invokeMsg(t, "", "sam", "c1", "demo__readfile", map[string]any{"file": "in.csv", "more": []string{"ref.txt:1"}}, func(p *InvokeParams) {
		p.AppName, p.UserID, p.SessionID = "app", "u1", "s1"
		p.PreloadedArtifacts = map[string]PreloadedArtifact{"file": {
			Filename: "in.csv", Content: base64.StdEncoding.EncodeToString([]byte("a,b")), MIMEType: "text/csv", Version: 4,
		}}
		p.ArtifactReferences = map[string]ArtifactReference{"more[0]": {Filename: "ref.txt", Version: 1}}
	})
	resp, _ := c.send(t, nc, m, 30*time.Second)
	r := result(t, resp)
	assert.Equal(t, "file=in.csv v4 text/csv: a,b\nmore[0]=ref.txt v1 text/plain: first", r.ToolResult.Text)
}

// Every input artifact an invoke carries is checked before the tool
// runs; one that does not fit is an ARTIFACT_ERROR, never a crash or a
// tool run without it.
func TestHostileInputArtifacts(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	startRuntime(t, nc, "", "rt1", 2)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	many := map[string]PreloadedArtifact{}
	var manyNames []string
	for i := range MaxInputArtifacts + 1 {
		n := fmt.Sprintf("f%d.txt", i)
		many[fmt.Sprintf("more[%d]", i)] = PreloadedArtifact{Filename: n, Content: b64("x")}
		manyNames = append(manyNames, n)
	}
	for i, tc := range []struct {
		name string
		args map[string]any
		pre  map[string]PreloadedArtifact
		refs map[string]ArtifactReference
		want string
	}{
		{"bad base64", map[string]any{"file": "a.txt"}, map[string]PreloadedArtifact{"file": {Filename: "a.txt", Content: "!!!"}}, nil, "not base64"},
		{"bad name", map[string]any{"file": "../a"}, map[string]PreloadedArtifact{"file": {Filename: "../a", Content: b64("x")}}, nil, "filename"},
		{"bad reference name", map[string]any{"file": "a/b"}, nil, map[string]ArtifactReference{"file": {Filename: "a/b"}}, "filename"},
		{"negative version", map[string]any{"file": "a.txt"}, map[string]PreloadedArtifact{"file": {Filename: "a.txt", Content: b64("x"), Version: -1}}, nil, "negative"},
		{"negative source version", map[string]any{"file": "a.txt"}, nil, map[string]ArtifactReference{"file": {Filename: "a.txt", SourceVersion: -2}}, "negative"},
		{"long mime type", map[string]any{"file": "a.txt"}, map[string]PreloadedArtifact{"file": {Filename: "a.txt", Content: b64("x"), MIMEType: strings.Repeat("m", 300)}}, nil, "mime_type"},
		{"mime type with a line break", map[string]any{"file": "a.txt"}, map[string]PreloadedArtifact{"file": {Filename: "a.txt", Content: b64("x"), MIMEType: "text/plain\r\nX: y"}}, nil, "mime_type"},
		{"too large", map[string]any{"file": "a.txt"}, map[string]PreloadedArtifact{"file": {Filename: "a.txt", Content: b64(strings.Repeat("x", MaxInlineArtifactLimit+10))}}, nil, "bound of an inline artifact"},
		{"too many", map[string]any{"file": "a.txt", "more": manyNames}, many, nil, "at most 64"},
		{"not an artifact parameter", map[string]any{"file": "a.txt", "text": "a.txt"}, map[string]PreloadedArtifact{"text": {Filename: "a.txt", Content: b64("x")}}, nil, "no such artifact parameter"},
		{"another name than the arguments", map[string]any{"file": "a.txt"}, map[string]PreloadedArtifact{"file": {Filename: "b.txt", Content: b64("x")}}, nil, "do not name there"},
		{"index beyond the list", map[string]any{"file": "a.txt", "more": []string{"a.txt"}}, map[string]PreloadedArtifact{"more[3]": {Filename: "a.txt", Content: b64("x")}}, nil, "name no artifact there"},
		{"bad index", map[string]any{"file": "a.txt"}, map[string]PreloadedArtifact{"more[-1]": {Filename: "a.txt", Content: b64("x")}}, nil, "parameter[index]"},
		{"both preloaded and referenced", map[string]any{"file": "a.txt"}, map[string]PreloadedArtifact{"file": {Filename: "a.txt", Content: b64("x")}}, map[string]ArtifactReference{"file": {Filename: "a.txt"}}, "both"},
		{"metadata too large", map[string]any{"file": "a.txt"}, map[string]PreloadedArtifact{"file": {Filename: "a.txt", Content: b64("x"), Metadata: map[string]string{"k": strings.Repeat("v", 5000)}}}, nil, "metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			corr := fmt.Sprintf("h%d", i)
			c := listen(t, nc, "agent", corr)
			m := invokeMsg(t, "", "agent", corr, "demo__readfile", tc.args, func(p *InvokeParams) {
				p.PreloadedArtifacts, p.ArtifactReferences = tc.pre, tc.refs
			})
			resp, _ := c.send(t, nc, m, 30*time.Second)
			require.NotNil(t, resp.Error)
			assert.Equal(t, CodeArtifactError, resp.Error.Code, resp.Error.Message)
			assert.Contains(t, resp.Error.Message, tc.want)
		})
	}
}

// The bounds the message size does not already give: the inline
// artifacts together, and the metadata's entries.
func TestReadInputsBounds(t *testing.T) {
	t.Parallel()
	params := map[string]toolpkg.ArtifactParam{"more": {List: true}}
	chunk := base64.StdEncoding.EncodeToString(make([]byte, MaxInlineArtifactLimit))
	p := &InvokeParams{Args: json.RawMessage(`{"more": ["a", "b"]}`), PreloadedArtifacts: map[string]PreloadedArtifact{
		"more[0]": {Filename: "a", Content: chunk}, "more[1]": {Filename: "b", Content: chunk},
	}}
	_, err := readInputs(p, params)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "add up to more than")

	meta := map[string]string{}
	for i := range maxInputMetadata + 1 {
		meta[fmt.Sprint(i)] = "v"
	}
	p = &InvokeParams{Args: json.RawMessage(`{"more": ["a"]}`), PreloadedArtifacts: map[string]PreloadedArtifact{"more[0]": {Filename: "a", Metadata: meta}}}
	_, err = readInputs(p, params)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metadata of")

	p = &InvokeParams{Args: json.RawMessage(`[1]`), ArtifactReferences: map[string]ArtifactReference{"more": {Filename: "a"}}}
	_, err = readInputs(p, params)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a JSON object")

	in, err := readInputs(&InvokeParams{Args: json.RawMessage(`{}`)}, params)
	require.NoError(t, err)
	assert.Nil(t, in, "nothing carried, nothing resolved: the store as is")
}
