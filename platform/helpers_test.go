package platform

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gotoolset/toolset/toolpkg"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testToken is the bearer token of the test servers.
const testToken = "test-token-0123456789abcdef"

// zfile is one entry of a zip made by a test.
type zfile struct {
	name string
	data []byte
	mode fs.FileMode // 0 means 0644
}

// makeZip writes the entries into a zip.
func makeZip(t testing.TB, files ...zfile) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write(f.data)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// scriptManifest names one shell tool, found under python/bin/.
const scriptManifest = "version: 1\ntools:\n  sh:\n    runtime: python\n    executable: greet.sh\n    timeout_seconds: 5\n"

// scriptTool is a shell tool: schema runs for --schema, a call answers
// "hello".
func scriptTool(schema string) string {
	return "#!/bin/sh\nif [ \"$1\" = \"--schema\" ]; then\n" + schema + "\nexit 0\nfi\n" +
		`result=$(sed -n 's/.*"result_file":"\([^"]*\)".*/\1/p' "$1")` + "\n" +
		`printf '{"result":{"status":"success","message":"hello"}}' > "$result"` + "\n"
}

// schemaDoc is the --schema output of a tool named tool with one
// parameter, "who".
func schemaDoc(tool, description string) string {
	doc := map[string]any{"tools": map[string]any{tool: map[string]any{
		"description": description,
		"parameters": map[string]any{"type": "object", "required": []string{"who"},
			"properties": map[string]any{"who": map[string]any{"type": "string", "description": "whom to greet"}}},
		"config_schema": []map[string]any{
			{"key": "greeting", "type": "string", "description": "how to greet"},
			{"key": "api_key", "type": "string", "secret": true},
		},
	}}}
	b, _ := json.Marshal(doc)
	return "cat <<'EOF'\n" + string(b) + "\nEOF"
}

// goodPackage is a package whose one tool, tool, discovers after delay.
func goodPackage(t testing.TB, tool, description string, delay time.Duration) []byte {
	schema := schemaDoc(tool, description)
	if delay > 0 {
		schema = fmt.Sprintf("sleep %.2f\n%s", delay.Seconds(), schema)
	}
	return makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte(scriptTool(schema)), mode: 0o755})
}

// gate holds back the discoveries of the packages made with it until the
// test opens it: their --schema waits for the gate's file. A test that
// needs a discovery under way opens the gate when it is done with it,
// rather than waiting for a delay that a slow machine may outlast.
type gate string

// newGate returns a closed gate.
func newGate(t testing.TB) gate { return gate(filepath.Join(t.TempDir(), "open")) }

// open lets the discoveries waiting on the gate go on.
func (g gate) open(t testing.TB) {
	t.Helper()
	require.NoError(t, os.WriteFile(string(g), nil, 0o644))
}

// hold prefixes a --schema script with a wait for the gate.
func (g gate) hold(schema string) string {
	return fmt.Sprintf("while [ ! -e '%s' ]; do sleep 0.02; done\n%s", g, schema)
}

// gatedPackage is goodPackage, its discovery held back by g.
func gatedPackage(t testing.TB, tool, description string, g gate) []byte {
	return makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte(scriptTool(g.hold(schemaDoc(tool, description)))), mode: 0o755})
}

// brokenPackage is a valid package whose discovery fails: --schema exits
// 3 after printing why.
func brokenPackage(t testing.TB) []byte {
	return makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte("#!/bin/sh\necho 'no schema here: the database is unreachable' >&2\nexit 3\n"), mode: 0o755})
}

// testEnv is a platform served on loopback.
type testEnv struct {
	t      testing.TB
	dir    string
	store  *toolpkg.Store
	srv    *Server
	hs     *httptest.Server
	client *http.Client
	opts   Options
	logs   *syncBuffer
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{mu: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

// storeDir returns a temporary directory for a store that the user tools
// run as can reach (the testing package makes the one above it private).
func storeDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	return dir
}

// newEnv opens a store in a new directory and serves a platform for it.
func newEnv(t testing.TB, opts *Options) *testEnv {
	t.Helper()
	return openEnv(t, storeDir(t), opts)
}

// openEnv serves a platform for the store in dir; closed at the end of
// the test (or earlier by close).
func openEnv(t testing.TB, dir string, opts *Options) *testEnv {
	t.Helper()
	return openEnvWith(t, dir, opts, nil)
}

// openEnvWith is openEnv with the store's options (its sandbox, logger
// discovery timeout and kill grace are set unless given).
func openEnvWith(t testing.TB, dir string, opts *Options, storeOpts *toolpkg.Options) *testEnv {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Token == "" && !o.InsecureNoAuth {
		o.Token = testToken
	}
	logs := newSyncBuffer()
	logger := slog.New(slog.NewTextHandler(logs, nil))
	if o.Logger == nil {
		o.Logger = logger
	}
	var so toolpkg.Options
	if storeOpts != nil {
		so = *storeOpts
	}
	if so.Sandbox == "" {
		so.Sandbox = toolpkg.ModeDirect
	}
	if so.Logger == nil {
		so.Logger = logger
	}
	if so.DiscoveryTimeout == 0 {
		so.DiscoveryTimeout = 20 * time.Second
	}
	if so.KillGrace == 0 {
		// A tool is the first process of a PID namespace, which a
		// SIGTERM it does not handle leaves running: the test scripts
		// do not, and would each hold a closing store for the default
		// grace.
		so.KillGrace = 200 * time.Millisecond
	}
	store, err := toolpkg.Open(dir, &so)
	require.NoError(t, err)
	srv, err := New(store, &o)
	if err != nil {
		store.Close()
		require.NoError(t, err)
	}
	e := &testEnv{t: t, dir: dir, store: store, srv: srv, opts: o, logs: logs}
	e.hs = httptest.NewServer(srv)
	e.client = e.hs.Client()
	e.client.Timeout = 30 * time.Second
	t.Cleanup(e.close)
	return e
}

// close stops the HTTP server, the platform and the store.
func (e *testEnv) close() {
	if e.hs == nil {
		return
	}
	e.hs.Close()
	e.srv.Close()
	require.NoError(e.t, e.store.Close())
	e.hs = nil
}

// response is an answer, its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic value; the body must be JSON.
func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "status %d, body %q", r.status, r.body)
	return m
}

// errCode returns the code of a JSON error body.
func (r response) errCode(t testing.TB) string {
	t.Helper()
	var eb ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &eb), "status %d, body %q", r.status, r.body)
	require.NotEmpty(t, eb.Error.Code, "body %q", r.body)
	require.NotEmpty(t, eb.Error.Message, "body %q", r.body)
	return eb.Error.Code
}

// do sends a request with the test token.
func (e *testEnv) do(method, path string, body []byte, header ...string) response {
	e.t.Helper()
	return e.doToken(testToken, method, path, body, header...)
}

// doToken sends a request with the given bearer token ("" for none) and
// header pairs.
func (e *testEnv) doToken(token, method, path string, body []byte, header ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.hs.URL+path, rd)
	require.NoError(e.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := e.client.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// upload PUTs a package and requires 202.
func (e *testEnv) upload(name string, data []byte) map[string]any {
	e.t.Helper()
	r := e.do("PUT", "/api/v1/platform/toolsets/"+name+"/package", data, "Content-Type", "application/zip")
	require.Equal(e.t, http.StatusAccepted, r.status, "%s", r.body)
	return r.json(e.t)
}

// settle waits until the toolset is no longer pending and returns its
// detail.
func (e *testEnv) settle(name string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := e.do("GET", "/api/v1/platform/toolsets/"+name, nil)
		require.Equal(e.t, http.StatusOK, r.status, "%s", r.body)
		m := r.json(e.t)
		if m["discoveryStatus"] != "pending" {
			return m
		}
		require.True(e.t, time.Now().Before(deadline), "toolset %s still pending", name)
		time.Sleep(20 * time.Millisecond)
	}
}

// agentYAML is an agent file that uses the packages.
func agentYAML(name string, packages ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ntoolsets:\n", name)
	for _, p := range packages {
		fmt.Fprintf(&b, "  - package: %s\n", p)
	}
	return b.String()
}

var jsonUnmarshal = json.Unmarshal
