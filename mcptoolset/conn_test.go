package mcptoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One session shared by many goroutines that list and call tools, while
// the list changes underneath them (run with -race).
func TestSharedSessionConcurrency(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	ts := mcptoolset.NewInMemory("files", fixture.SDKServer("files"))
	defer ts.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		handle := ts.Acquire()
		wg.Go(func() {
			defer handle.Close()
			for i := range 10 {
				tools, err := toolset.BuildTools(ctx, "agent", handle.Prefixed("fs"))
				if err != nil {
					errs <- err
					return
				}
				if g == 0 && i%3 == 0 {
					handle.ToolsChanged()
				}
				res, err := tools.Execute(ctx, toolset.ToolCall{Name: "fs_add", Args: json.RawMessage(fmt.Sprintf(`{"a":%d,"b":%d}`, g, i))})
				if err != nil {
					errs <- err
					return
				}
				if got := res.(*toolset.Content).Structured.(map[string]any)["sum"]; got != float64(g+i) {
					errs <- fmt.Errorf("sum %v, want %d", got, g+i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// A server that is down gives an error naming it; WithSkipUnavailable turns
// it into no tools and a warning.
func TestServerDown(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedURL := "http://" + ln.Addr().String() + "/mcp"
	require.NoError(t, ln.Close())

	cases := map[string]struct {
		ts   *mcptoolset.Toolset
		want string
	}{
		"http": {mcptoolset.NewHTTP(closedURL, mcptoolset.WithName("search"), mcptoolset.WithRetryDelay(0)), "connection refused"},
		"command": {mcptoolset.NewCommand(exec.Command("/nonexistent/mcp-server"), mcptoolset.WithName("search"), mcptoolset.WithRetryDelay(0)),
			"no such file or directory"},
		"dial": {mcptoolset.NewTransport("search", func(context.Context) (mcp.Transport, error) { return nil, errors.New("no route") }), "no route"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer tc.ts.Close()
			_, err := tc.ts.GetTools(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `MCP server "search": connect: `)
			assert.Contains(t, err.Error(), tc.want)
			var se *mcptoolset.ServerError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "search", se.Server)
			assert.Equal(t, "connect", se.Op)
			_, ok := toolset.ErrorText(err)
			assert.False(t, ok, "a server that is down stops the run")

			_, err = toolset.BuildTools(ctx, "agent", tc.ts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `Toolset#0 "mcp:search"`)
			_, err = tc.ts.Instructions(ctx)
			require.ErrorAs(t, err, &se)
		})
	}

	t.Run("skip", func(t *testing.T) {
		logger, logs := logBuffer()
		down := mcptoolset.NewHTTP(closedURL, mcptoolset.WithName("search"), mcptoolset.WithSkipUnavailable(), mcptoolset.WithLogger(logger))
		defer down.Close()
		up := mcptoolset.NewInMemory("files", fixture.SDKServer("files"))
		defer up.Close()
		tools, err := toolset.BuildTools(ctx, "agent", down.Prefixed("search"), up.Prefixed("fs"))
		require.NoError(t, err, "the turn goes on without the server")
		assert.Len(t, tools.Names(), 8)
		for range 3 {
			_, err := toolset.BuildTools(ctx, "agent", down.Prefixed("search"), up.Prefixed("fs"))
			require.NoError(t, err)
		}
		assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), "one warning per attempt, not per turn")
		got, err := down.GetTools(ctx)
		require.NoError(t, err)
		assert.Empty(t, got)
		text, err := down.Instructions(ctx)
		require.NoError(t, err)
		assert.Empty(t, text)
		assert.Contains(t, logs.String(), "level=WARN")
		assert.Contains(t, logs.String(), "skipping unavailable MCP server")
		assert.Contains(t, logs.String(), "server=search")
		assert.Contains(t, logs.String(), "connection refused")
	})
}

// After a failed attempt the failure is returned again, without dialling,
// until the retry delay has passed.
func TestRetryDelay(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		fail := true
		var mu sync.Mutex
		server := fixture.SDKServer("flaky")
		dials := 0
		ts := mcptoolset.NewTransport("flaky", func(ctx context.Context) (mcp.Transport, error) {
			mu.Lock()
			defer mu.Unlock()
			dials++
			if fail {
				return nil, errors.New("starting up")
			}
			st, ct := mcp.NewInMemoryTransports()
			_, err := server.Connect(ctx, st, nil)
			return ct, err
		}, mcptoolset.WithRetryDelay(100*time.Millisecond))
		defer ts.Close()
		for range 3 {
			_, err := ts.GetTools(ctx)
			require.ErrorContains(t, err, "starting up")
		}
		mu.Lock()
		assert.Equal(t, 1, dials)
		fail = false
		mu.Unlock()
		time.Sleep(120 * time.Millisecond)
		tools, err := ts.GetTools(ctx)
		require.NoError(t, err)
		assert.Len(t, tools, 8)
	})
}

// A slow call ends when its context does; the server's handler is
// cancelled too.
func TestSlowServerCancellation(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		server := fixture.SDKServer("files")
		cancelled := make(chan struct{})
		mcp.AddTool(server, &mcp.Tool{Name: "hang", Description: "Never answers."},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				<-ctx.Done()
				close(cancelled)
				return nil, nil, ctx.Err()
			})
		ts := mcptoolset.NewInMemory("files", server)
		defer ts.Close()
		tools, err := toolset.BuildTools(context.Background(), "agent", ts)
		require.NoError(t, err)

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "hang", Args: nil})
		require.Error(t, err)
		assert.Less(t, time.Since(start), 3*time.Second)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var se *mcptoolset.ServerError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "call tool", se.Op)
		assert.Equal(t, "hang", se.Tool)
		assert.Contains(t, err.Error(), `MCP server "files": call tool "hang"`)
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("the server's handler was not cancelled")
		}

		// The session survives: the next call works.
		res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{"millis":1}`)})
		require.NoError(t, err)
		assert.Equal(t, "done", content(t, res).Parts[0].Text)
	})
}

// A caller whose context ends while another caller is connecting stops
// waiting; the connection attempt goes on for the others.
func TestWaitingCallerCancelled(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		server := fixture.SDKServer("files")
		ts := mcptoolset.NewTransport("files", func(ctx context.Context) (mcp.Transport, error) {
			<-release
			st, ct := mcp.NewInMemoryTransports()
			_, err := server.Connect(ctx, st, nil)
			return ct, err
		})
		defer ts.Close()
		leader := make(chan error, 1)
		go func() {
			_, err := ts.GetTools(context.Background())
			leader <- err
		}()
		synctest.Wait() // the leader is connecting
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := ts.GetTools(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		close(release)
		require.NoError(t, <-leader)
	})
}

// When the server drops the session, the next use connects again.
func TestReconnectAfterServerClosesSession(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		server := fixture.SDKServer("files")
		logger, logs := logBuffer()
		ts, dials := inMemory("files", server, mcptoolset.WithLogger(logger))
		defer ts.Close()
		first, err := ts.GetTools(ctx)
		require.NoError(t, err)
		for ss := range server.Sessions() {
			require.NoError(t, ss.Close())
		}
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "closed the connection") }, 5*time.Second, 5*time.Millisecond)
		tools, err := toolset.BuildTools(ctx, "agent", ts)
		require.NoError(t, err)
		res, err := tools.Execute(ctx, toolset.ToolCall{Name: "read_file", Args: json.RawMessage(`{"path":"p"}`)})
		require.NoError(t, err)
		assert.Equal(t, "files: contents of p", content(t, res).Parts[0].Text)
		assert.Equal(t, int32(2), dials.Load())
		assert.True(t, first[0].Same(byName(t, tools.Tools(), first[0].Name)), "unchanged tools survive a reconnection")
	})
}

// When the caller that is connecting gives up, a caller still waiting
// connects in its place; the give-up is not held against the server.
func TestLeaderCancelled(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		server := fixture.SDKServer("files")
		var mu sync.Mutex
		dials := 0
		entered := make(chan struct{})
		ts := mcptoolset.NewTransport("files", func(ctx context.Context) (mcp.Transport, error) {
			mu.Lock()
			dials++
			first := dials == 1
			mu.Unlock()
			if first {
				close(entered)
				<-ctx.Done() // a server that takes too long for this caller
				return nil, ctx.Err()
			}
			st, ct := mcp.NewInMemoryTransports()
			_, err := server.Connect(ctx, st, nil)
			return ct, err
		})
		defer ts.Close()
		ctx, cancel := context.WithCancel(context.Background())
		leader := make(chan error, 1)
		go func() {
			_, err := ts.GetTools(ctx)
			leader <- err
		}()
		<-entered
		waiter := make(chan error, 1)
		go func() {
			tools, err := ts.GetTools(context.Background())
			if err == nil && len(tools) != 8 {
				err = fmt.Errorf("%d tools", len(tools))
			}
			waiter <- err
		}()
		synctest.Wait() // the waiter waits
		cancel()
		require.ErrorIs(t, <-leader, context.Canceled)
		require.NoError(t, <-waiter)
		mu.Lock()
		assert.Equal(t, 2, dials)
		mu.Unlock()
	})
}
