package mcptoolset_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// userBinding binds run handles to the X-User header, standing for an
// authenticated principal.
func userBinding(r *mcptoolset.Request) string {
	if r.Extra == nil {
		return ""
	}
	return r.Extra.Header.Get("X-User")
}

// dialAs connects a 2026-07-28 client that sends X-User: user.
func dialAs(t *testing.T, url, user string) *runClient {
	t.Helper()
	hc := &http.Client{Transport: headerTransport{"X-User", user}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: user, Version: "v1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: sessionless})
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return &runClient{cs: cs}
}

// requireHandleRefused fails unless a request with handle h is refused
// with an invalid-params JSON-RPC error whose message has want, for both
// tools/list and tools/call.
func requireHandleRefused(t *testing.T, c *runClient, h any, want string) {
	t.Helper()
	meta := mcp.Meta{mcptoolset.MetaRunHandle: h}
	_, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_invoice", Meta: meta})
	var je *jsonrpc.Error
	require.True(t, errors.As(err, &je), "a JSON-RPC error, got %v", err)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), je.Code)
	assert.Contains(t, je.Message, want)
	assert.LessOrEqual(t, len(je.Message), 300, "the message does not echo the handle")
	_, err = c.cs.ListTools(context.Background(), &mcp.ListToolsParams{Meta: mcp.Meta{mcptoolset.MetaRunHandle: h}})
	require.True(t, errors.As(err, &je), "a JSON-RPC error, got %v", err)
	assert.Contains(t, je.Message, want)
}

// rawHandle decodes a handle's bytes.
func rawHandle(t *testing.T, h string) []byte {
	t.Helper()
	enc, ok := strings.CutPrefix(h, "r1.")
	require.True(t, ok, h)
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	require.NoError(t, err)
	return raw
}

func encodeHandle(raw []byte) string { return "r1." + base64.RawURLEncoding.EncodeToString(raw) }

// Handles that this server did not mint for this client are refused with
// a clear JSON-RPC error, never a panic, and never reach a run: the
// victim's reveal stays the victim's, and the server serves on.
func TestHostileRunHandlesAreRefused(t *testing.T) {
	checkLeaks(t)
	key := bytes.Repeat([]byte{7}, 32)
	srv := mcptoolset.NewServer(searchable(), mcptoolset.WithRunKey(key), mcptoolset.WithRunBinding(userBinding))
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	t.Cleanup(hs.Close)

	alice := dialAs(t, hs.URL, "alice")
	_, isErr := alice.call(t, "tool_search", map[string]any{"query": "invoice", "top_k": 1})
	require.False(t, isErr)
	victim := alice.handle
	require.NotEmpty(t, victim)
	raw := rawHandle(t, victim)
	require.Len(t, raw, 56)

	mallory := dialAs(t, hs.URL, "mallory")
	t.Run("replayed by another client", func(t *testing.T) {
		requireHandleRefused(t, mallory, victim, "invalid run handle")
	})
	t.Run("no binding", func(t *testing.T) {
		requireHandleRefused(t, dial(t, hs.URL, sessionless, nil), victim, "invalid run handle")
	})
	t.Run("forged", func(t *testing.T) {
		requireHandleRefused(t, mallory, encodeHandle(bytes.Repeat([]byte{0xAB}, 56)), "invalid run handle")
	})
	t.Run("flipped byte", func(t *testing.T) {
		for _, i := range []int{0, 15, 16, 23, 24, 55} { // the run ID, the expiry, the MAC
			b := bytes.Clone(raw)
			b[i] ^= 0x01
			requireHandleRefused(t, alice, encodeHandle(b), "invalid run handle")
		}
		// A flipped character of the text: another handle, or none.
		b := []byte(victim)
		b[10] ^= 0x01
		requireHandleRefused(t, alice, string(b), "run handle")
	})
	t.Run("minted by another key", func(t *testing.T) {
		other := mcptoolset.NewServer(searchable(), mcptoolset.WithRunKey(bytes.Repeat([]byte{8}, 32)), mcptoolset.WithRunBinding(userBinding))
		ohs := httptest.NewServer(other.HTTPHandler(nil))
		defer ohs.Close()
		elsewhere := dialAs(t, ohs.URL, "alice")
		elsewhere.list(t)
		require.NotEmpty(t, elsewhere.handle)
		requireHandleRefused(t, alice, elsewhere.handle, "invalid run handle")
	})
	t.Run("oversized", func(t *testing.T) {
		requireHandleRefused(t, alice, "r1."+strings.Repeat("A", 1<<16), "malformed run handle")
		requireHandleRefused(t, alice, encodeHandle(append(bytes.Clone(raw), 0)), "malformed run handle")
	})
	t.Run("malformed", func(t *testing.T) {
		for _, h := range []any{"", "r1.", "r2." + victim[3:], victim[3:], "r1.!!!!", victim + "=", 42, map[string]any{"h": victim}, nil} {
			requireHandleRefused(t, alice, h, "malformed run handle")
		}
	})
	t.Run("expired", func(t *testing.T) {
		clock := time.Now()
		timed := mcptoolset.NewServer(searchable(), mcptoolset.WithRunKey(key), mcptoolset.WithRunHandleTTL(time.Minute))
		mcptoolset.SetRunClock(timed, func() time.Time { return clock })
		ths := httptest.NewServer(timed.HTTPHandler(nil))
		defer ths.Close()
		c := dial(t, ths.URL, sessionless, nil)
		c.list(t)
		h := c.handle
		clock = clock.Add(59 * time.Second)
		c.list(t) // good still, and renewed
		assert.NotEqual(t, h, c.handle, "each result carries the handle with a new expiry")
		clock = clock.Add(2 * time.Minute)
		requireHandleRefused(t, c, c.handle, "expired run handle")
	})

	// None of it reached alice's run, nor gave mallory one of hers.
	assert.Equal(t, []string{"create_invoice", "tool_search"}, alice.list(t))
	assert.Equal(t, []string{"tool_search"}, mallory.list(t))
	text, isErr := alice.call(t, "create_invoice", nil)
	assert.False(t, isErr, text)
}

// A key too short to sign with is refused when the server is made.
func TestShortRunKeyIsRefused(t *testing.T) {
	assert.PanicsWithValue(t, "mcptoolset: WithRunKey: a key of 16 bytes; it must have 32 at least", func() {
		mcptoolset.NewServer(toolset.NewFunction(), mcptoolset.WithRunKey(make([]byte, 16)))
	})
	assert.PanicsWithValue(t, "mcptoolset: WithRunKey: a key of 0 bytes; it must have 32 at least", func() {
		mcptoolset.NewServer(toolset.NewFunction(), mcptoolset.WithRunKey(make([]byte, 32), nil))
	})
	assert.Panics(t, func() { mcptoolset.NewServer(toolset.NewFunction(), mcptoolset.WithRunKey(nil)) },
		"an empty key (an unset variable, say) is not the default key")
}

// By default a handle is bound to the user of the request's verified
// bearer token: another user replaying it is refused, and the owner, with
// another token of hers, carries on.
func TestRunHandleIsBoundToTheTokensUser(t *testing.T) {
	checkLeaks(t)
	users := map[string]string{"t-alice": "alice", "t-alice-2": "alice", "t-bob": "bob"}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		u, ok := users[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: u, Expiration: time.Now().Add(time.Hour)}, nil
	}
	srv := mcptoolset.NewServer(searchable())
	hs := httptest.NewServer(auth.RequireBearerToken(verify, nil)(srv.HTTPHandler(nil)))
	t.Cleanup(hs.Close)
	as := func(token string) *runClient {
		hc := &http.Client{Transport: headerTransport{"Authorization", "Bearer " + token}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: token, Version: "v1"}, nil).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: sessionless})
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		return &runClient{cs: cs}
	}
	alice := as("t-alice")
	_, isErr := alice.call(t, "tool_search", map[string]any{"query": "refund", "top_k": 1})
	require.False(t, isErr)
	requireHandleRefused(t, as("t-bob"), alice.handle, "invalid run handle")
	again := as("t-alice-2")
	again.handle = alice.handle
	assert.Contains(t, again.list(t), "refund_payment", "the same user carries on her run")
}
