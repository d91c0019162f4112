package mcptoolset_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A remote server over streamable HTTP on 127.0.0.1, list changes
// included.
func TestHTTPServer(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := fixture.SDKServer("web")
	httpServer := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer httpServer.Close()
	ts := mcptoolset.NewHTTP(httpServer.URL)
	defer ts.Close()
	assert.Equal(t, "mcp:"+strings.TrimPrefix(httpServer.URL, "http://"), ts.Label(), "named after the host")

	tools, err := toolset.BuildTools(ctx, "agent", ts.Prefixed("web"))
	require.NoError(t, err)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "web_read_file", Args: json.RawMessage(`{"path":"index.html"}`)})
	require.NoError(t, err)
	assert.Equal(t, "web: contents of index.html", content(t, res).Parts[0].Text)
	text, err := ts.Instructions(ctx)
	require.NoError(t, err)
	assert.Equal(t, "Use web for files.", text)

	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "web_add_tool", Args: json.RawMessage(`{"name":"late"}`)})
	require.NoError(t, err)
	// Real time, not synctest: the notification crosses a real socket.
	require.Eventually(t, func() bool {
		got, err := ts.GetTools(ctx)
		return err == nil && len(got) == 9
	}, 5*time.Second, 10*time.Millisecond, "the list change arrives over HTTP")
}

// WithHTTPHeader's header reaches the endpoint with every request.
func TestHTTPHeaderGoesToTheEndpoint(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := fixture.SDKServer("web")
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var mu sync.Mutex
	var seen []string
	direct := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		mcpHandler.ServeHTTP(w, r)
	}))
	defer direct.Close()

	ts := mcptoolset.NewHTTP(direct.URL, mcptoolset.WithHTTPHeader("Authorization", "Bearer first"),
		mcptoolset.WithHTTPHeader("Authorization", "Bearer s3cret"))
	defer ts.Close()
	tools, err := toolset.BuildTools(ctx, "agent", ts)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(`{"path":"index.html"}`)})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	for _, got := range seen {
		assert.Equal(t, "Bearer s3cret", got, "every request to the endpoint carries the header, the later value winning")
	}
}

// A server that redirects to another origin is not followed, whatever the
// status: a 307 would re-send the call with its arguments (and the
// credential) to an address the program never named, a 303 would turn it
// into a GET there. The error says why. A redirect within the endpoint's
// origin is followed.
func TestRedirectToAnotherOriginIsRefused(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := fixture.SDKServer("web")
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var elsewhereHits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits.Add(1)
		mcpHandler.ServeHTTP(w, r)
	}))
	defer elsewhere.Close()
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusSeeOther, http.StatusFound} {
		redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, code)
		}))
		ts := mcptoolset.NewHTTP(redirecting.URL, mcptoolset.WithHTTPHeader("Authorization", "Bearer s3cret"))
		_, err := toolset.BuildTools(ctx, "agent", ts)
		require.Error(t, err, "status %d", code)
		var re *mcptoolset.RedirectError
		require.ErrorAs(t, err, &re, "status %d: %v", code, err)
		assert.Equal(t, strings.TrimSuffix(elsewhere.URL, "/"), re.To)
		assert.Contains(t, err.Error(), "redirected to another origin")
		ts.Close()
		redirecting.Close()
	}
	assert.Zero(t, elsewhereHits.Load(), "a request reached the origin redirected to")

	// Within the origin, a redirect is followed.
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusPermanentRedirect)
	})
	same := httptest.NewServer(mux)
	defer same.Close()
	ts := mcptoolset.NewHTTP(same.URL + "/old")
	defer ts.Close()
	tools, err := toolset.BuildTools(ctx, "agent", ts)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(`{"path":"index.html"}`)})
	require.NoError(t, err)
}
