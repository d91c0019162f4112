package mcptoolset_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transferTool is a tool whose every call needs a human's approval; ran
// counts the calls that ran.
func transferTool(ran *atomic.Int32) toolset.Toolset {
	t := toolset.NewTool("transfer", "Transfer money.", func(_ context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		ran.Add(1)
		return "transferred $" + itoa(in.Amount), nil
	}, toolset.WithApprovalRequired(toolset.Always))
	return toolset.NewFunction(t)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// answering is an elicitation handler that answers every request with
// action and approve, recording the messages it was shown.
type answering struct {
	mu       sync.Mutex
	action   string
	approve  bool
	messages []string
}

func (a *answering) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.messages = append(a.messages, req.Params.Message)
	if a.action != "accept" {
		return &mcp.ElicitResult{Action: a.action}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{mcptoolset.ApprovalField: a.approve}}, nil
}

func (a *answering) shown() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.messages...)
}

func approvalServer(t *testing.T, ran *atomic.Int32, opts ...mcptoolset.ServerOption) (*mcptoolset.Server, string) {
	t.Helper()
	srv := mcptoolset.NewServer(transferTool(ran), opts...)
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

// A served tool that needs approval asks a real SDK client for it: by an
// input-required result at 2026-07-28, by elicitation on the session at
// 2025-11-25; an approval runs the call, a refusal tells the model.
func TestServedApprovalAsksTheClient(t *testing.T) {
	checkLeaks(t)
	for _, version := range []string{sessionless, "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			var ran atomic.Int32
			_, url := approvalServer(t, &ran)

			yes := &answering{action: "accept", approve: true}
			c := dial(t, url, version, &mcp.ClientOptions{ElicitationHandler: yes.handle})
			text, isErr := c.call(t, "transfer", map[string]any{"amount": 500})
			assert.False(t, isErr, text)
			assert.Equal(t, "transferred $500", text)
			assert.EqualValues(t, 1, ran.Load())
			require.Len(t, yes.shown(), 1)
			assert.Equal(t, `Allow the call of tool "transfer" with arguments {"amount":500}?`, yes.shown()[0])

			for _, no := range []*answering{{action: "decline"}, {action: "accept", approve: false}, {action: "cancel"}} {
				c := dial(t, url, version, &mcp.ClientOptions{ElicitationHandler: no.handle})
				text, isErr := c.call(t, "transfer", map[string]any{"amount": 7})
				assert.True(t, isErr)
				assert.Contains(t, text, `the call of tool "transfer" was denied by a human: the user`)
			}
			assert.EqualValues(t, 1, ran.Load(), "no refused call ran")

			// A client that cannot elicit gets the clear error, as before.
			c = dial(t, url, version, nil)
			text, isErr = c.call(t, "transfer", map[string]any{"amount": 1})
			assert.True(t, isErr)
			assert.Contains(t, text, "needs a human's approval, which cannot be asked for here")
		})
	}
}

// A 2026-07-28 client that carries on a run by handle is asked within that
// run, which lists the call as pending until the answer comes back.
func TestServedApprovalWithinAHandleRun(t *testing.T) {
	checkLeaks(t)
	var ran atomic.Int32
	_, url := approvalServer(t, &ran)
	yes := &answering{action: "accept", approve: true}
	c := dial(t, url, sessionless, &mcp.ClientOptions{ElicitationHandler: yes.handle})
	c.list(t)
	require.NotEmpty(t, c.handle)
	text, isErr := c.call(t, "transfer", map[string]any{"amount": 2})
	assert.False(t, isErr, text)
	assert.EqualValues(t, 1, ran.Load())
}

// Two calls of one run asked for approval at once are each approved and
// run once.
func TestServedApprovalsConcurrentInOneRun(t *testing.T) {
	checkLeaks(t)
	var ran atomic.Int32
	_, url := approvalServer(t, &ran)
	yes := &answering{action: "accept", approve: true}
	c := dial(t, url, sessionless, &mcp.ClientOptions{ElicitationHandler: yes.handle})
	c.list(t)
	var wg sync.WaitGroup
	texts := make([]string, 4)
	for i := range texts {
		wg.Go(func() {
			res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": i}, Meta: c.meta()})
			if assert.NoError(t, err) && assert.False(t, res.IsError) {
				texts[i] = res.Content[0].(*mcp.TextContent).Text
			}
		})
	}
	wg.Wait()
	for i, text := range texts {
		assert.Equal(t, "transferred $"+itoa(i), text)
	}
	assert.EqualValues(t, len(texts), ran.Load())
	assert.Len(t, yes.shown(), len(texts))
}

// manual is a 2026-07-28 client that answers input requests itself.
func manual(t *testing.T, url string) *runClient {
	return dial(t, url, sessionless, &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: (&answering{action: "accept", approve: true}).handle,
	})
}

// ask calls transfer with amount under meta and returns the requestState
// of the input-required result.
func ask(t *testing.T, c *runClient, amount int, meta mcp.Meta) string {
	t.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": amount}, Meta: meta})
	require.NoError(t, err)
	require.True(t, res.NeedsInput(), "an input-required result")
	require.Contains(t, res.InputRequests, mcptoolset.ApprovalInputID)
	ep, ok := res.InputRequests[mcptoolset.ApprovalInputID].(*mcp.ElicitParams)
	require.True(t, ok)
	assert.Equal(t, "form", ep.Mode)
	require.NotEmpty(t, res.RequestState)
	return res.RequestState
}

// answer repeats the call with an approval and requestState st.
func answer(c *runClient, name string, amount int, meta mcp.Meta, st string) (*mcp.CallToolResult, error) {
	return c.cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: name, Arguments: map[string]any{"amount": amount}, Meta: meta, RequestState: st,
		InputResponses: mcp.InputResponseMap{mcptoolset.ApprovalInputID: &mcp.ElicitResult{Action: "accept", Content: map[string]any{mcptoolset.ApprovalField: true}}},
	})
}

func requireRefused(t *testing.T, err error, msg string) {
	t.Helper()
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.EqualValues(t, jsonrpc.CodeInvalidParams, je.Code)
	assert.Contains(t, je.Message, msg)
}

// A requestState cannot be edited, replayed on other arguments, another
// tool or another run, used after it expired, checked with another key,
// or sent oversized; none of these runs the call.
func TestServedApprovalStateHostile(t *testing.T) {
	checkLeaks(t)
	key := []byte(strings.Repeat("k", 32))
	var ran atomic.Int32
	srv, url := approvalServer(t, &ran, mcptoolset.WithRunKey(key))
	c := manual(t, url)

	t.Run("edited", func(t *testing.T) {
		st := ask(t, c, 5, nil)
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(st, "a1."))
		require.NoError(t, err)
		// nonce, expiry, tool, arguments, schema, run, MAC
		for _, off := range []int{0, 16, 24, 56, 88, 120, 152} {
			edited := append([]byte(nil), raw...)
			edited[off] ^= 1
			_, err := answer(c, "transfer", 5, nil, "a1."+base64.RawURLEncoding.EncodeToString(edited))
			requireRefused(t, err, "invalid approval requestState")
		}
		_, err = answer(c, "transfer", 5, nil, "a2."+strings.TrimPrefix(st, "a1."))
		requireRefused(t, err, "malformed")
		_, err = answer(c, "transfer", 5, nil, st+"A")
		requireRefused(t, err, "malformed")
	})
	t.Run("other arguments", func(t *testing.T) {
		st := ask(t, c, 5, nil)
		_, err := answer(c, "transfer", 5000, nil, st)
		requireRefused(t, err, "does not match this call's arguments")
	})
	t.Run("other tool", func(t *testing.T) {
		st := ask(t, c, 5, nil)
		_, err := answer(c, "other", 5, nil, st)
		requireRefused(t, err, "invalid approval requestState")
	})
	t.Run("another run", func(t *testing.T) {
		a, b := manual(t, url), manual(t, url)
		a.list(t)
		b.list(t)
		require.NotEqual(t, a.handle, b.handle)
		st := ask(t, a, 5, a.meta())
		_, err := answer(b, "transfer", 5, b.meta(), st)
		requireRefused(t, err, "invalid approval requestState")
		_, err = answer(b, "transfer", 5, nil, st)
		requireRefused(t, err, "invalid approval requestState")
	})
	t.Run("replayed in its run", func(t *testing.T) {
		a := manual(t, url)
		a.list(t)
		st := ask(t, a, 5, a.meta())
		before := ran.Load()
		res, err := answer(a, "transfer", 5, a.meta(), st)
		require.NoError(t, err)
		assert.False(t, res.IsError)
		assert.Equal(t, before+1, ran.Load())
		_, err = answer(a, "transfer", 5, a.meta(), st)
		requireRefused(t, err, "already answered")
	})
	t.Run("expired", func(t *testing.T) {
		st := ask(t, c, 5, nil)
		mcptoolset.SetApprovalClock(srv, func() time.Time { return time.Now().Add(mcptoolset.DefaultApprovalStateTTL + time.Second) })
		defer mcptoolset.SetApprovalClock(srv, time.Now)
		_, err := answer(c, "transfer", 5, nil, st)
		requireRefused(t, err, "expired")
	})
	t.Run("another key", func(t *testing.T) {
		var other atomic.Int32
		_, url2 := approvalServer(t, &other, mcptoolset.WithRunKey([]byte(strings.Repeat("x", 32))))
		st := ask(t, c, 5, nil)
		_, err := answer(manual(t, url2), "transfer", 5, nil, st)
		requireRefused(t, err, "invalid approval requestState")
		// A server given the key as a previous one takes it.
		_, url3 := approvalServer(t, &other, mcptoolset.WithRunKey([]byte(strings.Repeat("x", 32)), key))
		res, err := answer(manual(t, url3), "transfer", 5, nil, st)
		require.NoError(t, err)
		assert.False(t, res.IsError)
		assert.EqualValues(t, 1, other.Load())
	})
	t.Run("oversized", func(t *testing.T) {
		_, err := answer(c, "transfer", 5, nil, "a1."+strings.Repeat("A", 1<<16))
		requireRefused(t, err, "malformed")
	})
	t.Run("no answer", func(t *testing.T) {
		st := ask(t, c, 5, nil)
		_, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 5}, RequestState: st})
		requireRefused(t, err, "no inputResponses")
		_, err = c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 5},
			InputResponses: mcp.InputResponseMap{mcptoolset.ApprovalInputID: &mcp.ElicitResult{Action: "accept"}}})
		requireRefused(t, err, "malformed")
	})
	assert.Zero(t, ran.Load()-1, "only the one honest answer ran")
}

// Over a transport with sessions (in memory, as over stdio) the approval
// is asked the same ways, the requestState bound to the session's run.
func TestServedApprovalOverASession(t *testing.T) {
	checkLeaks(t)
	for _, version := range []string{sessionless, "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			var ran atomic.Int32
			yes := &answering{action: "accept", approve: true}
			cs := connect(t, mcptoolset.NewServer(transferTool(&ran)), &mcp.ClientOptions{ElicitationHandler: yes.handle}, version)
			text, isErr := callText(t, cs, "transfer", map[string]any{"amount": 3})
			assert.False(t, isErr, text)
			assert.Equal(t, "transferred $3", text)
			assert.EqualValues(t, 1, ran.Load())
			assert.Len(t, yes.shown(), 1)
		})
	}
}

// One approved requestState sent again and again at once, within a run
// that spans requests, runs the call once: the answers do not take each
// other's approval, nor leave the call asked for again for a later
// replay.
func TestServedApprovalStateRepeatedAtOnce(t *testing.T) {
	checkLeaks(t)
	var ran atomic.Int32
	_, url := approvalServer(t, &ran)
	a := manual(t, url)
	a.list(t)
	for round := range 20 {
		st := ask(t, a, 5, a.meta())
		before := ran.Load()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { _, _ = answer(a, "transfer", 5, a.meta(), st) })
		}
		wg.Wait()
		_, _ = answer(a, "transfer", 5, a.meta(), st)
		assert.EqualValues(t, 1, ran.Load()-before, "round %d: the approved call ran once", round)
	}
}

// An approve field that is not the boolean true approves nothing.
func TestServedApprovalFieldNotTrue(t *testing.T) {
	checkLeaks(t)
	var ran atomic.Int32
	_, url := approvalServer(t, &ran)
	a := manual(t, url)
	for _, v := range []any{"true", 1, 1.0, []any{true}, map[string]any{}, nil} {
		st := ask(t, a, 5, nil)
		res, err := a.cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "transfer", Arguments: map[string]any{"amount": 5}, RequestState: st,
			InputResponses: mcp.InputResponseMap{mcptoolset.ApprovalInputID: &mcp.ElicitResult{Action: "accept", Content: map[string]any{mcptoolset.ApprovalField: v}}},
		})
		if err == nil {
			assert.True(t, res.IsError, "%v", v)
		}
	}
	assert.Zero(t, ran.Load())
}

// The arguments a human is asked to approve are shown as they are:
// characters that reorder or hide text (a right-to-left override, a tag
// character) are escaped, as JSON reads them.
func TestServedApprovalShowsHiddenCharacters(t *testing.T) {
	checkLeaks(t)
	var ran atomic.Int32
	tool := toolset.NewTool("pay", "Pay someone.", func(_ context.Context, in struct {
		To string `json:"to"`
	}) (string, error) {
		ran.Add(1)
		return "paid " + in.To, nil
	}, toolset.WithApprovalRequired(toolset.Always))
	hs := httptest.NewServer(mcptoolset.NewServer(toolset.NewFunction(tool)).HTTPHandler(nil))
	t.Cleanup(hs.Close)
	no := &answering{action: "decline"}
	c := dial(t, hs.URL, sessionless, &mcp.ClientOptions{ElicitationHandler: no.handle})
	_, isErr := c.call(t, "pay", map[string]any{"to": "bob\u202eevil\U000E0041é"})
	assert.True(t, isErr)
	require.Len(t, no.shown(), 1)
	assert.Equal(t, `Allow the call of tool "pay" with arguments {"to":"bob\u202eevil\udb40\udc41é"}?`, no.shown()[0])
	assert.Zero(t, ran.Load())
}
