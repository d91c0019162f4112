package mesh

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// meshClient publishes the demo package, starts a real runtime (at most
// maxCalls at once) and returns a client of the agent on its broker.
func meshClient(t *testing.T, maxCalls int) (*Client, *Runtime) {
	t.Helper()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	r := startRuntime(t, nc, "", "rt1", maxCalls)
	c, err := NewClient(context.Background(), connect(t, s), &ClientOptions{Agent: "agent1", Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, r
}

func names(tools []toolset.Tool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	sort.Strings(out)
	return out
}

func TestClientEndToEnd(t *testing.T) {
	c, _ := meshClient(t, 2)
	ctx := context.Background()

	info, err := c.Info("demo")
	require.NoError(t, err)
	assert.Equal(t, toolpkg.StatusReady, info.Status)
	assert.Equal(t, 1, info.Serving)
	_, err = c.Info("nothing")
	assert.ErrorIs(t, err, toolpkg.ErrNotFound)

	ts := c.Toolset("demo", nil)
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	// keyed needs a value the default configuration lacks.
	assert.Equal(t, []string{"demo__auth", "demo__echo", "demo__fail", "demo__readfile", "demo__slow"}, names(tools))
	assert.Contains(t, ts.Unavailable(), "keyed")
	assert.Equal(t, "mesh:demo", ts.Label())
	list, err := toolset.BuildTools(ctx, "agent1", ts)
	require.NoError(t, err)

	// A call with progress.
	var mu sync.Mutex
	var progress []toolset.Progress
	pctx := toolset.WithProgress(ctx, func(p toolset.Progress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	})
	out, err := list.Execute(pctx, toolset.ToolCall{ID: "1", Name: "demo__echo", Args: []byte(`{"text":"hi"}`)})
	require.NoError(t, err)
	assert.Equal(t, "echo: hi", modelText(t, out))
	mu.Lock()
	require.NotEmpty(t, progress)
	assert.Equal(t, "echoing", progress[0].Message)
	// The status pipe carries no fraction, in process either.
	assert.Equal(t, -1.0, progress[0].Fraction)
	mu.Unlock()

	// The tool's own error is the model's; an authorization request is
	// typed as in process.
	_, err = list.Execute(ctx, toolset.ToolCall{ID: "2", Name: "demo__fail", Args: []byte(`{}`)})
	var f *toolpkg.ToolFailure
	require.ErrorAs(t, err, &f)
	assert.Contains(t, f.ModelText(), "boom")
	_, err = list.Execute(ctx, toolset.ToolCall{ID: "3", Name: "demo__auth", Args: []byte(`{}`)})
	var a *toolpkg.AuthRequiredError
	require.ErrorAs(t, err, &a)
	assert.Equal(t, "log in first", a.Message)

	// A steady turn asks nothing of the broker: a lookup and a copy.
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ts.GetTools(ctx); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 2.0)
}

// modelText is what the model reads of a result.
func modelText(t *testing.T, out any) string {
	t.Helper()
	switch v := out.(type) {
	case string:
		return v
	case interface{ ModelText() string }:
		return v.ModelText()
	}
	t.Fatalf("result %T", out)
	return ""
}

// The agent's configuration reaches the runtime through init_request:
// a tool the defaults leave out is listed, and runs with the value.
func TestClientConfigThroughInitRequest(t *testing.T) {
	c, _ := meshClient(t, 2)
	ctx := context.Background()
	ts := c.ToolsetWithConfig("demo", toolpkg.Config{Tools: map[string]map[string]any{"keyed": {"api_key": "k-123"}}, Exclude: []string{"auth"}})
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"demo__echo", "demo__fail", "demo__keyed", "demo__readfile", "demo__slow"}, names(tools))
	list, err := toolset.BuildTools(ctx, "agent1", ts)
	require.NoError(t, err)
	out, err := list.Execute(ctx, toolset.ToolCall{ID: "1", Name: "demo__keyed", Args: []byte(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, "key k-123", modelText(t, out))

	// Remembered: another toolset of the same configuration lists
	// without asking again.
	again := c.ToolsetWithConfig("demo", toolpkg.Config{Tools: map[string]map[string]any{"keyed": {"api_key": "k-123"}}, Exclude: []string{"auth"}})
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := again.GetTools(ctx); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 2.0)

	// A configuration that does not fit is a *ConfigError.
	_, err = c.Toolset("demo", map[string]any{"no_such_key": 1}).GetTools(ctx)
	var ce *toolpkg.ConfigError
	require.ErrorAs(t, err, &ce)
	_, err = c.ToolsetWithConfig("demo", toolpkg.Config{Exclude: []string{"nope"}}).GetTools(ctx)
	require.ErrorAs(t, err, &ce)
}

// Cancelling the caller's context ends the call on the runtime: its tool
// is stopped, and the runtime's one slot is free at once.
func TestClientCancelReachesRuntime(t *testing.T) {
	t.Parallel()
	c, _ := meshClient(t, 1)
	ctx := context.Background()
	list, err := toolset.BuildTools(ctx, "agent1", c.Toolset("demo", nil))
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	started := make(chan struct{}, 1)
	pctx := toolset.WithProgress(cctx, func(p toolset.Progress) {
		select {
		case started <- struct{}{}:
		default:
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := list.Execute(pctx, toolset.ToolCall{ID: "1", Name: "demo__slow", Args: []byte(`{"ms":30000}`)})
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the tool did not start")
	}
	cancel()
	select {
	case err := <-done:
		assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not end the call")
	}
	// The runtime runs one call at a time: this one runs only if the
	// canceled tool was stopped.
	start := time.Now()
	out, err := list.Execute(ctx, toolset.ToolCall{ID: "2", Name: "demo__echo", Args: []byte(`{"text":"next"}`)})
	require.NoError(t, err)
	assert.Equal(t, "echo: next", modelText(t, out))
	assert.Less(t, time.Since(start), 10*time.Second)
}

// The caller's deadline travels with the call and ends it on time; a
// toolset nobody serves any more is unavailable.
func TestClientDeadlineAndUnavailable(t *testing.T) {
	t.Parallel()
	c, r := meshClient(t, 2)
	ctx := context.Background()
	tools, err := c.Toolset("demo", nil).GetTools(ctx)
	require.NoError(t, err)
	var slow, echo toolset.Tool
	for _, tl := range tools {
		switch tl.Name {
		case "demo__slow":
			slow = tl
		case "demo__echo":
			echo = tl
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = slow.Execute(dctx, toolset.ToolCall{ID: "1", Name: slow.Name, Args: []byte(`{"ms":30000}`)})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Less(t, time.Since(start), 3*time.Second)

	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	require.NoError(t, r.Close(cctx))
	_, err = echo.Execute(ctx, toolset.ToolCall{ID: "2", Name: echo.Name, Args: []byte(`{"text":"x"}`)})
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.False(t, ue.MayHaveRun)
	require.Eventually(t, func() bool {
		_, err := c.Toolset("demo", nil).GetTools(ctx)
		return errors.Is(err, toolpkg.ErrNotFound)
	}, 10*time.Second, 10*time.Millisecond)
}
