package mcptoolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tools of a server written with the SDK arrive with their names,
// descriptions, schemas and annotations.
func TestToolsFromSDKServer(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := fixture.SDKServer("files")
	ts := mcptoolset.NewInMemory("files", server)
	defer ts.Close()

	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"read_file", "add", "fail", "image", "slow", "weird", "add_tool", "crash"}, toolNames(tools))

	// What the server sends, as the SDK's own client sees it.
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer func() { cs.Close(); ss.Wait() }()
	listed, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, want := range listed.Tools {
		got := byName(t, tools, want.Name)
		assert.Equal(t, want.Description, got.Description, want.Name)
		wantIn, err := json.Marshal(want.InputSchema)
		require.NoError(t, err)
		gotIn, err := got.ParametersJSON()
		require.NoError(t, err)
		requireSameJSON(t, wantIn, gotIn)
		if want.OutputSchema == nil {
			assert.Nil(t, got.Returns, want.Name)
			continue
		}
		wantOut, err := json.Marshal(want.OutputSchema)
		require.NoError(t, err)
		gotOut, err := json.Marshal(got.Returns)
		require.NoError(t, err)
		requireSameJSON(t, wantOut, gotOut)
	}

	// A hand-written schema with keywords outside draft 2020-12 is kept.
	weird, err := byName(t, tools, "weird").ParametersJSON()
	require.NoError(t, err)
	requireSameJSON(t, []byte(fixture.WeirdSchema), weird)

	read := byName(t, tools, "read_file")
	assert.Equal(t, map[string]string{
		mcptoolset.MetaServer:      "files",
		mcptoolset.MetaTool:        "read_file",
		mcptoolset.MetaTitle:       "Read file",
		mcptoolset.MetaReadOnly:    "true",
		mcptoolset.MetaIdempotent:  "false",
		mcptoolset.MetaDestructive: "false",
	}, read.Metadata)
	assert.Equal(t, map[string]string{mcptoolset.MetaServer: "files", mcptoolset.MetaTool: "add"},
		byName(t, tools, "add").Metadata, "no annotations, no hint keys")

	assert.Equal(t, "mcp:files", ts.Label())
	assert.Equal(t, "mcp:files", toolset.LabelOf(ts))
	text, err := ts.Instructions(ctx)
	require.NoError(t, err)
	assert.Equal(t, "Use files for files.", text)
}

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

// The tools are made once per listing: later turns get the same values.
func TestToolsAreReusedAcrossTurns(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	var calls counter
	ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")))
	defer ts.Close()
	first, err := ts.GetTools(ctx)
	require.NoError(t, err)
	for range 3 {
		again, err := ts.GetTools(ctx)
		require.NoError(t, err)
		require.Equal(t, len(first), len(again))
		for i := range first {
			assert.True(t, first[i].Same(again[i]))
			assert.Same(t, first[i].Parameters, again[i].Parameters)
		}
	}
	assert.Equal(t, 1, calls.get("tools/list"), "the list is cached")
}

// notifications/tools/list_changed drops the cache; tools whose definition
// did not change are kept as they were.
func TestListChangedInvalidatesCache(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var calls counter
		ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")))
		defer ts.Close()
		before, err := ts.GetTools(ctx)
		require.NoError(t, err)
		tools, err := toolset.BuildTools(ctx, "agent", ts)
		require.NoError(t, err)
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "add_tool", Args: json.RawMessage(`{"name":"late"}`)})
		require.NoError(t, err)

		var after []toolset.Tool
		require.Eventually(t, func() bool {
			after, err = ts.GetTools(ctx)
			require.NoError(t, err)
			return len(after) == len(before)+1
		}, 5*time.Second, 10*time.Millisecond, "the new tool shows up")
		late := byName(t, after, "late")
		res, err := late.Execute(ctx, toolset.ToolCall{Args: nil})
		require.NoError(t, err)
		assert.Equal(t, "late ran", content(t, res).Parts[0].Text)
		read0, read1 := byName(t, before, "read_file"), byName(t, after, "read_file")
		assert.True(t, read0.Same(read1), "an unchanged tool keeps its identity")
		assert.Equal(t, 2, calls.get("tools/list"))
	})
}

func TestCacheOptions(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	t.Run("ttl", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls counter
			ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")), mcptoolset.WithCacheTTL(50*time.Millisecond))
			defer ts.Close()
			for range 3 {
				_, err := ts.GetTools(ctx)
				require.NoError(t, err)
			}
			assert.Equal(t, 1, calls.get("tools/list"))
			time.Sleep(60 * time.Millisecond)
			_, err := ts.GetTools(ctx)
			require.NoError(t, err)
			assert.Equal(t, 2, calls.get("tools/list"), "listed again once the TTL passed")
		})
	})
	t.Run("off", func(t *testing.T) {
		var calls counter
		ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")), mcptoolset.WithoutCache())
		defer ts.Close()
		first, err := ts.GetTools(ctx)
		require.NoError(t, err)
		for range 3 {
			again, err := ts.GetTools(ctx)
			require.NoError(t, err)
			assert.True(t, first[0].Same(again[0]), "unchanged definitions still give the same tools")
		}
		assert.Equal(t, 4, calls.get("tools/list"))
	})
	t.Run("manual", func(t *testing.T) {
		var calls counter
		ts, _ := inMemory("files", calls.count(fixture.SDKServer("files")))
		defer ts.Close()
		_, err := ts.GetTools(ctx)
		require.NoError(t, err)
		ts.ToolsChanged()
		_, err = ts.GetTools(ctx)
		require.NoError(t, err)
		assert.Equal(t, 2, calls.get("tools/list"))
	})
}

// Many runs asking for the tools at once make one connection and one
// tools/list request.
func TestConcurrentGetToolsDoNotStampede(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	var calls counter
	ts, dials := inMemory("files", calls.count(fixture.SDKServer("files")))
	defer ts.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			tools, err := ts.GetTools(ctx)
			if err == nil && len(tools) != 8 {
				err = fmt.Errorf("%d tools", len(tools))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), dials.Load())
	assert.Equal(t, 1, calls.get("tools/list"))
}

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

// The connection opens on first use, is shared by every handle, and ends
// with the last Close; closing twice is harmless.
func TestReferenceCountedClose(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		server := fixture.SDKServer("files")
		a, dials := inMemory("files", server)
		assert.Equal(t, int32(0), dials.Load(), "nothing opens before first use")
		b := a.Acquire()
		c := b.Acquire()

		_, err := b.GetTools(ctx)
		require.NoError(t, err)
		_, err = a.GetTools(ctx)
		require.NoError(t, err)
		assert.Equal(t, int32(1), dials.Load(), "one connection for all handles")
		sessions := func() int {
			n := 0
			for range server.Sessions() {
				n++
			}
			return n
		}
		assert.Equal(t, 1, sessions())

		require.NoError(t, a.Close())
		require.NoError(t, a.Close(), "an extra close is harmless")
		require.NoError(t, a.Close())
		_, err = a.GetTools(ctx)
		require.ErrorIs(t, err, mcptoolset.ErrClosed, "a closed handle cannot be used")
		tools, err := b.GetTools(ctx)
		require.NoError(t, err, "the other handles still work")
		res, err := byName(t, tools, "read_file").Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"path":"x"}`)})
		require.NoError(t, err)
		assert.Equal(t, "files: contents of x", content(t, res).Parts[0].Text)

		require.NoError(t, b.Close())
		assert.Equal(t, 1, sessions(), "c still holds the connection")
		require.NoError(t, c.Close())
		assert.Eventually(t, func() bool { return sessions() == 0 }, 5*time.Second, 5*time.Millisecond, "the last close ends the session")

		_, err = c.GetTools(ctx)
		require.ErrorIs(t, err, mcptoolset.ErrClosed)
		_, err = byName(t, tools, "read_file").Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"path":"x"}`)})
		require.ErrorIs(t, err, mcptoolset.ErrClosed, "tools of a closed toolset fail")
		var se *mcptoolset.ServerError
		require.ErrorAs(t, err, &se)
		d := a.Acquire()
		_, err = d.GetTools(ctx)
		require.ErrorIs(t, err, mcptoolset.ErrClosed, "acquiring after the last close gives a closed handle")
		require.NoError(t, d.Close())
		assert.Equal(t, int32(1), dials.Load())

		// Combined closes its children; a handle closed twice over is fine.
		e, _ := inMemory("files", server)
		comb := toolset.NewCombined(e.Prefixed("a"), e.Acquire().Prefixed("b"))
		_, err = toolset.BuildTools(ctx, "agent", comb)
		require.NoError(t, err)
		require.NoError(t, comb.Close())
		require.NoError(t, e.Close())
		assert.Eventually(t, func() bool { return sessions() == 0 }, 5*time.Second, 5*time.Millisecond)
	})
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
			assert.Contains(t, err.Error(), "mcp:search#0")
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

// Two servers with the same tool names conflict until prefixed; the
// prefixed tool calls the server's own tool.
func TestConflictAndPrefix(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	fs := mcptoolset.NewInMemory("fs", fixture.SDKServer("fs"))
	defer fs.Close()
	backup := mcptoolset.NewInMemory("backup", fixture.SDKServer("backup"))
	defer backup.Close()

	_, err := toolset.BuildTools(ctx, "agent", fs, backup)
	var conflict *toolset.NameConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Len(t, conflict.Conflicts, 8)
	assert.Contains(t, err.Error(), `"read_file" contributed by: Toolset#0 "mcp:fs", Toolset#1 "mcp:backup"`)

	tools, err := toolset.BuildTools(ctx, "agent", fs.Prefixed("fs"), toolset.NewPrefixed(backup, "backup"))
	require.NoError(t, err)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "fs_read_file", Args: json.RawMessage(`{"path":"a"}`)})
	require.NoError(t, err)
	assert.Equal(t, "fs: contents of a", content(t, res).Parts[0].Text)
	res, err = tools.Execute(ctx, toolset.ToolCall{Name: "backup_read_file", Args: json.RawMessage(`{"path":"a"}`)})
	require.NoError(t, err)
	assert.Equal(t, "backup: contents of a", content(t, res).Parts[0].Text)
	tool, ok := tools.Lookup("backup_read_file")
	require.True(t, ok)
	assert.Equal(t, "read_file", tool.Metadata[mcptoolset.MetaTool])
	assert.Equal(t, "backup", tool.Metadata[mcptoolset.MetaServer])

	// An error names the prefixed tool and the server's own.
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "fs_fail", Args: nil})
	assert.Contains(t, err.Error(), `tool "fs_fail"`)
	assert.Contains(t, err.Error(), `MCP server "fs": tool "fail" reported an error`)
}

// The listing follows the server's pages.
func TestPagination(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "v1"}, &mcp.ServerOptions{PageSize: 3})
	var want []string
	for i := range 10 {
		name := fmt.Sprintf("tool_%02d", i)
		want = append(want, name)
		mcp.AddTool(server, &mcp.Tool{Name: name, Description: name},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return nil, nil, nil
			})
	}
	var calls counter
	ts, _ := inMemory("many", calls.count(server))
	defer ts.Close()
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, toolNames(tools))
	assert.Equal(t, 4, calls.get("tools/list"))
}

// A server that sends bad tool lists gets a clear error, not a panic and
// not a silent drop: an invalid tool is left out with a warning and
// reported by InvalidTools (or fails the listing under WithFailOnInvalidTools),
// a listing that cannot be read fails.
func TestBadToolLists(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	cases := map[string]struct {
		edit func(res *mcp.ListToolsResult)
		want string
		tool string // the tool refused; "" when the listing fails
	}{
		"schema not an object": {func(res *mcp.ListToolsResult) {
			res.Tools = append(res.Tools, &mcp.Tool{Name: "bad", InputSchema: "object"})
		}, `tool "bad" refused: input schema: toolset: invalid JSON Schema: a schema is a JSON object or a boolean, not a string`, "bad"},
		"output schema not a schema": {func(res *mcp.ListToolsResult) {
			res.Tools = append(res.Tools, &mcp.Tool{Name: "bad", InputSchema: map[string]any{"type": "object"}, OutputSchema: 5})
		}, `tool "bad" refused: output schema: toolset: invalid JSON Schema`, "bad"},
		"no schema": {func(res *mcp.ListToolsResult) {
			res.Tools = append(res.Tools, &mcp.Tool{Name: "bad"})
		}, `tool "bad" refused: the tool has no input schema`, "bad"},
		"listed twice": {func(res *mcp.ListToolsResult) {
			res.Tools = append(res.Tools, res.Tools[0])
		}, `refused: the server lists 2 tools of this name`, "add"},
		"endless pages": {func(res *mcp.ListToolsResult) {
			res.NextCursor = "again"
		}, `the server's pages do not end (cursor "again" after 2 pages)`, ""},
		"pages that never repeat": {func(res *mcp.ListToolsResult) {
			res.NextCursor = fmt.Sprint("page", time.Now().UnixNano())
		}, `after 20 pages`, ""},
	}
	defer mcptoolset.SetMaxPages(20)()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			server := fixture.SDKServer("odd")
			server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if r, ok := req.(*mcp.ListToolsRequest); ok && r.Params != nil && r.Params.Cursor != "" {
						req = &mcp.ListToolsRequest{Session: r.Session, Params: &mcp.ListToolsParams{}, Extra: r.Extra}
					}
					res, err := next(ctx, method, req)
					if l, ok := res.(*mcp.ListToolsResult); ok && err == nil {
						tc.edit(l)
					}
					return res, err
				}
			})
			log, buf := logBuffer()
			strict := mcptoolset.NewInMemory("odd", server, mcptoolset.WithFailOnInvalidTools(), mcptoolset.WithLogger(log))
			defer strict.Close()
			_, err := strict.GetTools(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `mcptoolset: MCP server "odd": list tools: `)
			assert.Contains(t, err.Error(), tc.want)

			lenient := mcptoolset.NewInMemory("odd", server, mcptoolset.WithLogger(log))
			defer lenient.Close()
			tools, err := lenient.GetTools(ctx)
			if tc.tool == "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				return
			}
			require.NoError(t, err, "the other tools are offered")
			assert.NotContains(t, toolNames(tools), tc.tool)
			assert.Contains(t, toolNames(tools), "read_file")
			invalid := lenient.InvalidTools()
			require.Len(t, invalid, 1)
			assert.Equal(t, tc.tool, invalid[0].Tool)
			assert.Contains(t, invalid[0].Error(), tc.want)
			assert.Contains(t, buf.String(), `msg="mcptoolset: refusing an invalid tool of an MCP server" server=odd tool=`+tc.tool)
		})
	}
}

// Constructors given nothing to work with fail with a clear error on use.
func TestBadConstructorInput(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	cases := map[string]struct {
		ts   *mcptoolset.Toolset
		want string
	}{
		"nil session":    {mcptoolset.New(nil), `MCP server "mcp": connect: nil *mcp.ClientSession`},
		"nil dial":       {mcptoolset.NewTransport("x", nil), `MCP server "x": connect: nil DialFunc`},
		"nil command":    {mcptoolset.NewCommand(nil), `MCP server "command": connect: nil *exec.Cmd`},
		"nil server":     {mcptoolset.NewInMemory("x", nil), `MCP server "x": connect: nil *mcp.Server`},
		"bad URL":        {mcptoolset.NewHTTP("http://[::1"), `connect: invalid URL: parse`},
		"unknown scheme": {mcptoolset.NewHTTP("ftp://example.com/mcp"), `connect: invalid URL "ftp://example.com/mcp": the scheme must be http or https`},
		"no scheme":      {mcptoolset.NewHTTP("localhost:8080"), `the scheme must be http or https`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			defer tc.ts.Close()
			_, err := tc.ts.GetTools(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	var zero mcptoolset.Toolset
	_, err := zero.GetTools(ctx)
	require.ErrorContains(t, err, "a Toolset must be made with New")
	_, err = zero.Instructions(ctx)
	require.Error(t, err)
	_, err = zero.Acquire().Session(ctx)
	require.Error(t, err)
	zero.ToolsChanged()
	assert.Empty(t, zero.Label())
	require.NoError(t, zero.Close())
	var nilToolset *mcptoolset.Toolset
	_, err = toolset.BuildTools(ctx, "agent", nilToolset)
	require.ErrorContains(t, err, "a Toolset must be made with New")
}

// A session made by the caller: the toolset owns it, and the caller's
// client forwards list changes with ToolsChanged.
func TestGivenSession(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		server := fixture.SDKServer("files")
		var ts *mcptoolset.Toolset
		var mu sync.Mutex
		client := mcp.NewClient(&mcp.Implementation{Name: "app", Version: "v1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				mu.Lock()
				defer mu.Unlock()
				if ts != nil {
					ts.ToolsChanged()
				}
			},
		})
		st, ct := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, st, nil)
		require.NoError(t, err)
		cs, err := client.Connect(ctx, ct, nil)
		require.NoError(t, err)
		mu.Lock()
		ts = mcptoolset.New(cs)
		mu.Unlock()
		assert.Equal(t, "mcp:files", ts.Label(), "named after the server")

		tools, err := toolset.BuildTools(ctx, "agent", ts)
		require.NoError(t, err)
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "add_tool", Args: json.RawMessage(`{"name":"late"}`)})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			got, err := ts.GetTools(ctx)
			return err == nil && len(got) == 9
		}, 5*time.Second, 10*time.Millisecond)
		session, err := ts.Session(ctx)
		require.NoError(t, err)
		assert.Same(t, cs, session)

		require.NoError(t, ts.Close())
		ended := make(chan struct{})
		go func() { _ = ss.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Fatal("closing the toolset did not close the session")
		}
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

// Closing the last handle while other goroutines list and call tools: each
// call either works or fails with ErrClosed; nothing hangs or leaks.
func TestCloseWhileInUse(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ts := mcptoolset.NewInMemory("files", fixture.SDKServer("files"))
		tools, err := toolset.BuildTools(ctx, "agent", ts)
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, 800)
		for range 8 {
			wg.Go(func() {
				for range 50 {
					_, err := ts.GetTools(ctx)
					if err == nil {
						_, err = tools.Execute(ctx, toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{"millis":1}`)})
					}
					if err != nil && !errors.Is(err, mcptoolset.ErrClosed) && !errors.Is(err, mcp.ErrConnectionClosed) {
						errs <- err
					}
				}
			})
		}
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, ts.Close())
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	})
}

// The core's tool options apply to a server's tools: here a timeout shown
// to the model, and metadata, picked from each tool's definition.
func TestToolOptions(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	var seen []string
	ts := mcptoolset.NewInMemory("files", fixture.SDKServer("files"), mcptoolset.WithToolOptions(func(def *mcp.Tool) []toolset.ToolOption {
		seen = append(seen, def.Name)
		if def.Name != "slow" {
			return nil
		}
		return []toolset.ToolOption{
			toolset.WithTimeout(50*time.Millisecond, toolset.TimeoutTellModel),
			toolset.WithMetadata(map[string]string{"team": "storage"}),
		}
	}))
	defer ts.Close()
	tools, err := toolset.BuildTools(ctx, "agent", ts)
	require.NoError(t, err)
	slow, ok := tools.Lookup("slow")
	require.True(t, ok)
	assert.Equal(t, "storage", slow.Metadata["team"])
	assert.Equal(t, "slow", slow.Metadata[mcptoolset.MetaTool])

	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{"millis":5000}`)})
	var timeout *toolset.TimeoutError
	require.ErrorAs(t, err, &timeout)
	msg, ok := toolset.ErrorText(err)
	assert.True(t, ok)
	assert.Contains(t, msg, `tool "slow" timed out after 50ms`)
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "slow", Args: json.RawMessage(`{"millis":1}`)})
	require.NoError(t, err)
	assert.Equal(t, "done", content(t, res).Parts[0].Text)

	_, err = ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Len(t, seen, 8, "once per definition")
}

// A subprocess server that exits before it answers gives an error that
// says how it ended and what it last wrote to stderr, not only that the
// connection closed; its stderr still reaches the command's Stderr.
func TestCommandServerExitingAtStartReportsExitStatusAndStderr(t *testing.T) {
	checkLeaks(t)
	bin := testServer(t)
	const line = "testserver: fatal: no API key in $FILES_TOKEN"
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer file.Close()
	var buf bytes.Buffer
	for name, stderr := range map[string]io.Writer{"nil": nil, "buffer": &buf, "file": file} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, "-exit-at-start", "3")
			cmd.Stderr = stderr
			ts := mcptoolset.NewCommand(cmd, mcptoolset.WithName("files"), mcptoolset.WithRetryDelay(0))
			_, err := ts.GetTools(context.Background())
			var se *mcptoolset.ServerError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "connect", se.Op)
			assert.Contains(t, err.Error(), "exit status 3")
			assert.Contains(t, err.Error(), line)
			var ce *mcptoolset.CommandError
			require.ErrorAs(t, err, &ce)
			require.NotNil(t, ce.ProcessState)
			assert.Equal(t, 3, ce.ProcessState.ExitCode())
			assert.Equal(t, line+"\n", ce.Stderr)
			assert.ErrorIs(t, err, mcp.ErrConnectionClosed, "the cause is still found")
			require.NoError(t, ts.Close())
		})
	}
	assert.Equal(t, line+"\n", buf.String(), "the output is copied to Stderr too")
	written, err := os.ReadFile(file.Name())
	require.NoError(t, err)
	assert.Equal(t, line+"\n", string(written))
}

// A subprocess server that floods stderr with terminal escapes and bytes
// that are not text before it exits cannot make the error big or put
// those bytes in it: the error keeps the last 2 KiB, made printable.
func TestCommandServerStderrInErrorIsBoundedAndPrintable(t *testing.T) {
	checkLeaks(t)
	bin := testServer(t)
	ts := mcptoolset.NewCommand(exec.Command(bin, "-exit-at-start", "1", "-noise", "100000"), mcptoolset.WithName("files"))
	defer ts.Close()
	_, err := ts.GetTools(context.Background())
	var ce *mcptoolset.CommandError
	require.ErrorAs(t, err, &ce)
	assert.LessOrEqual(t, len(ce.Stderr), mcptoolset.MaxStderrTail)
	assert.True(t, strings.HasSuffix(ce.Stderr, "testserver: fatal: no API key in $FILES_TOKEN\n"))
	msg := err.Error()
	assert.Less(t, len(msg), mcptoolset.MaxStderrTail+256, "escaping does not make it longer")
	assert.Contains(t, msg, "exit status 1")
	assert.Contains(t, msg, "testserver: fatal: no API key in $FILES_TOKEN")
	for _, r := range msg {
		assert.True(t, unicode.IsPrint(r), "the error holds only printable characters, not %q", r)
		if !unicode.IsPrint(r) {
			break
		}
	}
}

// A subprocess server that crashes in the middle of a request fails it
// with an error that says how the process ended and what it last wrote to
// stderr, and the warning that the session ended says so too.
func TestCommandServerCrashingInARequestReportsExitStatusAndStderr(t *testing.T) {
	checkLeaks(t)
	const line = "testserver: panic: out of file handles"
	for _, method := range []string{"tools/call", "tools/list"} {
		t.Run(method, func(t *testing.T) {
			logger, logs := logBuffer()
			ts := mcptoolset.NewCommand(exec.Command(testServer(t), "-crash-on", method, "-crash-code", "70"),
				mcptoolset.WithName("files"), mcptoolset.WithLogger(logger))
			defer ts.Close()
			tools, err := toolset.BuildTools(context.Background(), "a", ts)
			if method == "tools/call" {
				require.NoError(t, err)
				_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)})
			}
			var se *mcptoolset.ServerError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, err.Error(), "exit status 70")
			assert.Contains(t, err.Error(), line)
			var ce *mcptoolset.CommandError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, 70, ce.ProcessState.ExitCode())
			assert.Equal(t, line+"\n", ce.Stderr)
			if method == "tools/list" {
				// Real time, not synctest: the server is a real subprocess.
				require.Eventually(t, func() bool { return strings.Contains(logs.String(), "closed the connection") }, 5*time.Second, 5*time.Millisecond)
				assert.Contains(t, logs.String(), line)
			}
		})
	}
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
