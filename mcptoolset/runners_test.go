package mcptoolset_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runners serves ts from two servers that share a run key and a run
// store, behind a reverse proxy that sends requests to each in turn, as a
// load balancer without sticky sessions does. It returns the proxy's URL
// and the number of requests each runner got.
func runners(t *testing.T, ts func() toolset.Toolset) (string, *[2]atomic.Int32) {
	t.Helper()
	key := bytes.Repeat([]byte{42}, 32)
	store := toolset.NewMemoryRunStore()
	var hits [2]atomic.Int32
	var backends [2]*url.URL
	for i := range backends {
		srv := mcptoolset.NewServer(ts(), mcptoolset.WithRunKey(key), mcptoolset.WithRunStore(store))
		h := srv.HTTPHandler(nil)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		u, err := url.Parse(hs.URL)
		require.NoError(t, err)
		backends[i] = u
	}
	var next atomic.Uint32
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(backends[next.Add(1)%2])
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1, // event streams go through as they come
	}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	return ps.URL, &hits
}

// A 2026-07-28 client's conversation through two runners is one run: a
// tool revealed on one runner is listed and callable on the other.
func TestRunnersBehindAProxyShareARevealedTool(t *testing.T) {
	checkLeaks(t)
	url, hits := runners(t, searchable)
	c := dial(t, url, sessionless, nil)
	other := dial(t, url, sessionless, nil)
	_, isErr := c.call(t, "tool_search", map[string]any{"query": "refund", "top_k": 1})
	require.False(t, isErr)
	for range 4 { // each runner in turn
		assert.Equal(t, []string{"refund_payment", "tool_search"}, c.list(t))
		text, isErr := c.call(t, "refund_payment", nil)
		assert.False(t, isErr, text)
		assert.Equal(t, "refunded", text)
	}
	assert.Equal(t, []string{"tool_search"}, other.list(t), "another client's run is its own")
	assert.Positive(t, hits[0].Load())
	assert.Positive(t, hits[1].Load())
}

// A failure budget spent across requests that reach both runners binds:
// the run's failures are counted in the shared store, not per runner.
func TestRunnersBehindAProxyShareAFailureBudget(t *testing.T) {
	checkLeaks(t)
	var calls atomic.Int32
	flaky := func() toolset.Toolset {
		return toolset.NewFunction(toolset.NewTool("flaky", "Fails.", func(context.Context, struct{}) (string, error) {
			calls.Add(1)
			return "", toolset.NewModelError("the backend is down")
		}, toolset.WithMaxFailures(3)))
	}
	url, hits := runners(t, flaky)
	c := dial(t, url, sessionless, nil)
	before := [2]int32{hits[0].Load(), hits[1].Load()}
	for range 3 {
		text, isErr := c.call(t, "flaky", nil)
		require.True(t, isErr)
		assert.Contains(t, text, "the backend is down")
	}
	assert.Greater(t, hits[0].Load(), before[0], "a failure on the first runner")
	assert.Greater(t, hits[1].Load(), before[1], "a failure on the second")
	for range 2 { // on either runner
		assert.Empty(t, c.list(t), "the spent tool leaves the run's list")
		text, isErr := c.call(t, "flaky", nil)
		assert.True(t, isErr)
		assert.NotContains(t, text, "the backend is down", "the spent tool is not run")
	}
	assert.Equal(t, int32(3), calls.Load())

	fresh := dial(t, url, sessionless, nil)
	assert.Equal(t, []string{"flaky"}, fresh.list(t), "another run has its own budget")
}

// Parallel calls of one run, through both runners at once, all run: the
// requests of one runner share the run, and a runner waits for the other
// to let the run go.
func TestRunnersBehindAProxyServeParallelCallsOfOneRun(t *testing.T) {
	checkLeaks(t)
	var calls atomic.Int32
	echo := func() toolset.Toolset {
		return toolset.NewFunction(toolset.NewTool("echo", "Echo.", func(context.Context, struct{}) (string, error) {
			calls.Add(1)
			return "ok", nil
		}))
	}
	url, _ := runners(t, echo)
	c := dial(t, url, sessionless, nil)
	c.list(t)
	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() {
			res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Meta: c.meta()})
			if err == nil && res.IsError {
				err = errorText(res)
			}
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, int32(n), calls.Load())
}
