package mcptoolset_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/mcptoolset/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ttlServer is the fixture's SDK server answering tools/list with ttlMs
// set to ms.
func ttlServer(ms int) *mcp.Server {
	s := fixture.SDKServer("files")
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if l, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				l.TTLMs = ms
			}
			return res, err
		}
	})
	return s
}

// A server's ttlMs keeps the list that long, and no longer: bounded to
// [MinListTTL, MaxListTTL], ignored when zero or negative (the list is
// then kept until the server says it changed, as without ttlMs), and
// shortened by WithCacheTTL.
func TestServerTTLIsHonouredAndBounded(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		ms    int
		opts  []mcptoolset.Option
		kept  time.Duration // still cached at this age
		again time.Duration // listed again at this age
	}{
		"five seconds":      {ms: 5000, kept: 4 * time.Second, again: 5 * time.Second},
		"huge":              {ms: math.MaxInt, kept: mcptoolset.MaxListTTL - time.Second, again: mcptoolset.MaxListTTL},
		"tiny":              {ms: 1, kept: 900 * time.Millisecond, again: mcptoolset.MinListTTL},
		"zero":              {ms: 0, kept: 48 * time.Hour},
		"negative":          {ms: -5, kept: 48 * time.Hour},
		"shorter option":    {ms: 10_000, opts: []mcptoolset.Option{mcptoolset.WithCacheTTL(2 * time.Second)}, kept: time.Second, again: 2 * time.Second},
		"shorter server":    {ms: 2000, opts: []mcptoolset.Option{mcptoolset.WithCacheTTL(time.Minute)}, kept: time.Second, again: 2 * time.Second},
		"never with option": {ms: 60_000, opts: []mcptoolset.Option{mcptoolset.WithoutCache()}, again: 0},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls counter
				ts, _ := inMemory("files", calls.count(ttlServer(tc.ms)), tc.opts...)
				defer ts.Close()
				start := time.Now()
				_, err := ts.GetTools(ctx)
				require.NoError(t, err)
				require.Equal(t, 1, calls.get("tools/list"))
				if tc.kept > 0 {
					time.Sleep(tc.kept - time.Since(start))
					_, err = ts.GetTools(ctx)
					require.NoError(t, err)
					assert.Equal(t, 1, calls.get("tools/list"), "still fresh at %v", tc.kept)
				}
				if tc.again >= 0 && (tc.kept == 0 || tc.again > 0) {
					time.Sleep(tc.again - time.Since(start))
					_, err = ts.GetTools(ctx)
					require.NoError(t, err)
					assert.Equal(t, 2, calls.get("tools/list"), "listed again at %v", tc.again)
				}
			})
		})
	}
}

// A page's ttlMs never lets the SDK's own cache answer in the toolset's
// place: a list change asked for by hand lists again at once.
func TestServerTTLDoesNotHideAListChange(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var calls counter
		ts, _ := inMemory("files", calls.count(ttlServer(math.MaxInt)))
		defer ts.Close()
		_, err := ts.GetTools(ctx)
		require.NoError(t, err)
		ts.ToolsChanged()
		_, err = ts.GetTools(ctx)
		require.NoError(t, err)
		assert.Equal(t, 2, calls.get("tools/list"))
	})
}

// A tool's icons are in its metadata when a client can show them safely:
// http(s) URLs without credentials and data: URIs of images, bounded in
// count and size; the others are dropped with one warning, and the tool
// is kept.
func TestToolIconsAreCarriedAndBounded(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(fixture.PNG)
	good := []mcp.Icon{
		{Source: "https://example.com/icon.png", MIMEType: "image/png", Sizes: []string{"48x48", "96x96"}, Theme: mcp.IconThemeLight},
		{Source: png, Sizes: []string{"any"}},
	}
	bad := []mcp.Icon{
		{Source: "javascript:alert(1)"},
		{Source: "file:///etc/passwd"},
		{Source: "/relative.png"},
		{Source: "https://user:secret@example.com/i.png"},
		{Source: "data:text/html,<script>alert(1)</script>"},
		{Source: "data:image/png;base64," + strings.Repeat("A", mcptoolset.MaxIconBytes)},
		{Source: "https://example.com/\x1b[2J.png"},
		{Source: "https://example.com/i.png", MIMEType: "text/html"},
		{Source: "https://example.com/i.png", Sizes: []string{"huge"}},
		{Source: "https://example.com/i.png", Theme: "neon"},
	}
	var many []mcp.Icon
	for range 20 {
		many = append(many, good[0])
	}
	schema := map[string]any{"type": "object"}
	log, buf := logBuffer()
	ts := mcptoolset.NewInMemory("icons", listing(
		&mcp.Tool{Name: "pretty", InputSchema: schema, Icons: append(append([]mcp.Icon{}, bad...), good...)},
		&mcp.Tool{Name: "many", InputSchema: schema, Icons: many},
		&mcp.Tool{Name: "ugly", InputSchema: schema, Icons: bad},
	), mcptoolset.WithLogger(log))
	defer ts.Close()
	tools, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Empty(t, ts.InvalidTools(), "a bad icon does not refuse its tool")

	var got []mcp.Icon
	require.NoError(t, json.Unmarshal([]byte(byName(t, tools, "pretty").Metadata[mcptoolset.MetaIcons]), &got))
	assert.Equal(t, good, got, "the good icons, as the server sent them")
	require.NoError(t, json.Unmarshal([]byte(byName(t, tools, "many").Metadata[mcptoolset.MetaIcons]), &got))
	assert.Equal(t, mcptoolset.MaxIcons, len(got))
	_, ok := byName(t, tools, "ugly").Metadata[mcptoolset.MetaIcons]
	assert.False(t, ok, "no key without an icon kept")
	_, ok = byName(t, tools, "read_file").Metadata[mcptoolset.MetaIcons]
	assert.False(t, ok)
	for _, tool := range tools {
		assert.LessOrEqual(t, len(tool.Metadata[mcptoolset.MetaIcons]), mcptoolset.MaxIconsBytes)
	}
	assert.Equal(t, 3, strings.Count(buf.String(), "dropping icons of a tool"), "one warning per tool:\n%s", buf)
	assert.Contains(t, buf.String(), "tool=pretty dropped=10")
	assert.NotContains(t, buf.String(), "\x1b")

	_, err = ts.GetTools(ctx)
	require.NoError(t, err)
	ts.ToolsChanged()
	_, err = ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(buf.String(), "dropping icons of a tool"), "warned once per definition")
}

// The icons of a tool may fill MaxIconsBytes at most: those that do not
// fit are dropped.
func TestToolIconsAreBoundedInTotal(t *testing.T) {
	checkLeaks(t)
	big := mcp.Icon{Source: "data:image/png;base64," + strings.Repeat("A", mcptoolset.MaxIconBytes-30)}
	ts := mcptoolset.NewInMemory("icons", listing(&mcp.Tool{Name: "big", InputSchema: map[string]any{"type": "object"}, Icons: []mcp.Icon{big, big, big}}),
		mcptoolset.WithLogger(discard()))
	defer ts.Close()
	tools, err := ts.GetTools(context.Background())
	require.NoError(t, err)
	var got []mcp.Icon
	require.NoError(t, json.Unmarshal([]byte(byName(t, tools, "big").Metadata[mcptoolset.MetaIcons]), &got))
	assert.Equal(t, 1, len(got), "two are more than MaxIconsBytes")
}
