package mcptoolset_test

import (
	"context"
	"encoding/json"
	"errors"
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
