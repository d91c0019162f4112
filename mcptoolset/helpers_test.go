package mcptoolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/testserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == testServerName {
		testserver.Main()
		os.Exit(0)
	}
	// A binary built with the race detector sleeps a second as it exits:
	// the test server, this binary, is run and stopped by many tests.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	code := func() int {
		defer os.RemoveAll(binDir)
		return m.Run()
	}()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

var (
	binDir, _ = os.MkdirTemp("", "mcptoolset-test")
	linkOnce  sync.Once
	linkErr   error
)

// testServerName is the name under which the test binary runs as the
// test server.
const testServerName = "testserver"

// testServer returns the path of the test server program
// (./internal/testserver): a link to the test binary, which runs as the
// server when it is started under that name, so that no test builds a
// program.
func testServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, testServerName)
	linkOnce.Do(func() {
		exe, err := os.Executable()
		if err == nil {
			err = os.Symlink(exe, bin)
		}
		linkErr = err
	})
	require.NoError(t, linkErr, "linking the test server")
	return bin
}

// checkLeaks fails t if goroutines it started are still running once
// it and its cleanups are done.
func checkLeaks(t *testing.T) {
	opts := []goleak.Option{goleak.IgnoreCurrent()}
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// counter counts the requests a server receives, by method.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) get(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
}

// count installs c on s.
func (c *counter) count(s *mcp.Server) *mcp.Server {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			c.mu.Lock()
			if c.n == nil {
				c.n = map[string]int{}
			}
			c.n[method]++
			c.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	return s
}

// inMemory returns a toolset over an in-memory connection to s, and a
// counter of the connections it opens.
func inMemory(name string, s *mcp.Server, opts ...mcptoolset.Option) (*mcptoolset.Toolset, *atomic.Int32) {
	var dials atomic.Int32
	ts := mcptoolset.NewTransport(name, func(ctx context.Context) (mcp.Transport, error) {
		dials.Add(1)
		st, ct := mcp.NewInMemoryTransports()
		if _, err := s.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}, opts...)
	return ts, &dials
}

// toolNames returns the names of tools.
func toolNames(tools []toolset.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// byName returns the tool named name.
func byName(t *testing.T, tools []toolset.Tool, name string) toolset.Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %q among %v", name, toolNames(tools))
	return toolset.Tool{}
}

// content asserts that v is a *toolset.Content and returns it.
func content(t *testing.T, v any) *toolset.Content {
	t.Helper()
	c, ok := v.(*toolset.Content)
	require.True(t, ok, "result %T is not a *toolset.Content", v)
	return c
}

// logBuffer returns a logger that writes to a buffer safe for concurrent
// use.
func logBuffer() (*slog.Logger, *syncBuffer) {
	var b syncBuffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// normalJSON decodes a JSON document keeping numbers as written, so that
// two documents compare equal when they say the same thing.
func normalJSON(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "decoding %s", b)
	return v
}

// requireSameJSON fails unless want and got are the same JSON document.
func requireSameJSON(t testing.TB, want, got []byte) {
	t.Helper()
	require.Equal(t, normalJSON(t, want), normalJSON(t, got), "want %s\n got %s", want, got)
}

// internalErrorRE matches the message of an internal error sent to a
// client.
var internalErrorRE = regexp.MustCompile(`internal error \(id ([0-9a-f]{16})\)`)

// requireInternal fails unless err, as a client got it, is an internal
// error without detail in its text, and the server logged detail under the
// same error ID in log. It returns the ID.
func requireInternal(t testing.TB, err error, log *syncBuffer, detail string) string {
	t.Helper()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), detail, "the client does not see the error's text")
	m := internalErrorRE.FindStringSubmatch(err.Error())
	require.NotNil(t, m, "an internal error with an ID: %v", err)
	id := m[1]
	for line := range strings.Lines(log.String()) {
		if strings.Contains(line, id) {
			assert.Contains(t, line, detail, "the log has the detail under the ID")
			return id
		}
	}
	t.Fatalf("no log line with error ID %s in:\n%s", id, log.String())
	return ""
}
