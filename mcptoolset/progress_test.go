package mcptoolset_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
)

// progressTool reports three steps, the second with a fraction, then
// waits for seen to be closed, when it is not nil.
func progressTool(seen chan struct{}) toolset.Toolset {
	return toolset.NewFunction(toolset.NewRawTool("work", "Work in steps.", nil, func(ctx context.Context, _ json.RawMessage) (any, error) {
		toolset.ReportProgress(ctx, toolset.Progress{Message: "starting", Fraction: -1})
		toolset.ReportProgress(ctx, toolset.Progress{Message: "half way", Fraction: 0.5})
		toolset.ReportProgress(ctx, toolset.Progress{Message: "almost", Fraction: -1})
		if seen != nil {
			waitFor(ctx, seen)
		}
		return "done", nil
	}))
}

// recorder collects progress reports. The SDK's client handles
// notifications on a goroutine of their own, so the result of a call can
// overtake its last progress notifications, which are then dropped
// (progress is best effort). A tool of these tests waits, before it
// returns, until the recorder has seen n reports: seen is closed then.
type recorder struct {
	mu   sync.Mutex
	got  []toolset.Progress
	n    int
	seen chan struct{}
}

func newRecorder(n int) *recorder { return &recorder{n: n, seen: make(chan struct{})} }

func (r *recorder) add(p toolset.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p)
	if len(r.got) == r.n {
		close(r.seen)
	}
}

// waitFor waits until ch is closed, for at most 5 seconds.
func waitFor(ctx context.Context, ch chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (r *recorder) all() []toolset.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]toolset.Progress(nil), r.got...)
}

// A served toolset's progress reaches an SDK client that sent a progress
// token as notifications/progress, increasing.
func TestServedToolsetSendsProgressNotifications(t *testing.T) {
	checkLeaks(t)
	seen := make(chan struct{})
	srv := mcptoolset.NewServer(progressTool(seen))
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	cs := connect(t, srv, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, req.Params)
		if len(got) == 3 {
			close(seen)
		}
	}})
	params := &mcp.CallToolParams{Name: "work", Arguments: map[string]any{}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 3, "notifications are sent before the result")
	var msgs []string
	last := 0.0
	for _, p := range got {
		assert.Equal(t, "tok-1", p.ProgressToken)
		assert.Greater(t, p.Progress, last, "progress increases")
		last = p.Progress
		msgs = append(msgs, p.Message)
	}
	assert.Equal(t, []string{"starting", "half way", "almost"}, msgs)
	assert.Equal(t, 50.0, got[1].Progress)
	assert.Equal(t, 100.0, got[1].Total)

	// No token, no notifications.
	got = nil
	mu.Unlock()
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "work", Arguments: map[string]any{}})
	mu.Lock()
	require.NoError(t, err)
	assert.Empty(t, got, "(seen is closed: the tool does not wait)")
}

// Over a real client and server pair, the served tool's progress reaches
// the progress callback of the context the client toolset's call runs
// under.
func TestProgressCrossesAnMCPHop(t *testing.T) {
	checkLeaks(t)
	rec := newRecorder(3)
	srv := mcptoolset.NewServer(progressTool(rec.seen))
	ts, _ := inMemory("remote", srv.MCP())
	defer ts.Close()
	ctx := toolset.WithProgress(context.Background(), rec.add)
	tools, err := toolset.BuildTools(ctx, "a", ts)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "work", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	got := rec.all()
	require.Len(t, got, 3)
	assert.Equal(t, toolset.Progress{Message: "starting", Fraction: -1}, got[0])
	assert.Equal(t, toolset.Progress{Message: "half way", Fraction: 0.5}, got[1])
	assert.Equal(t, "almost", got[2].Message)
}

// A server's progress notifications that name no call of this client, or
// carry a huge message, are ignored or cut.
func TestHostileProgressNotificationsAreBounded(t *testing.T) {
	checkLeaks(t)
	rec := newRecorder(1)
	seen := rec.seen
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: "noisy", Description: "Sends odd progress.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "someone-else", Message: "not yours", Progress: 1})
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: 12345, Message: "not a string token", Progress: 1})
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Message: strings.Repeat("é", 100000), Progress: 7, Total: 3})
			waitFor(ctx, seen) // see recorder
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	ts, _ := inMemory("hostile", s)
	defer ts.Close()
	ctx := toolset.WithProgress(context.Background(), rec.add)
	tools, err := toolset.BuildTools(ctx, "a", ts)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "noisy", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	got := rec.all()
	require.Len(t, got, 1, "only the notification for this call")
	assert.LessOrEqual(t, len(got[0].Message), 1024)
	assert.True(t, strings.HasPrefix(got[0].Message, "éé"))
	assert.Equal(t, -1.0, got[0].Fraction, "progress beyond its total is no fraction")
}
