package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// initRequestMsg is an init_request of tool for agent's request corr.
func initRequestMsg(t *testing.T, agent, corr, tool string, p InitRequestParams) (subject string, data []byte, reply string) {
	t.Helper()
	subj, _ := NewSubjects("")
	p.ToolName = tool
	data, err := encodeRequest(corr, MethodInitRequest, p)
	require.NoError(t, err)
	subject, err = subj.InitRequest(tool)
	require.NoError(t, err)
	reply, _ = subj.Response(agent, corr)
	return subject, data, reply
}

// A tool its configuration leaves out is told apart from a configuration
// that is wrong by a field, not by the message's words: the error names
// the tool and the missing key, at listing and at call.
func TestToolLeftOutByItsConfiguration(t *testing.T) {
	t.Parallel()
	c, _ := meshClient(t, 2)
	ctx := context.Background()
	ts := c.Toolset("demo", nil)
	_, err := ts.GetTools(ctx)
	require.NoError(t, err)
	assert.Contains(t, ts.Unavailable()["keyed"], `"api_key" is required by tool "keyed"`)
	assert.Equal(t, toolpkg.ToolPolicy{Missing: []string{"api_key"}}, ts.Policies()["keyed"])

	// The runtime's answer on the wire.
	rc := listen(t, c.nc, "raw", "i1")
	subject, data, reply := initRequestMsg(t, "raw", "i1", "demo__keyed", InitRequestParams{Version: 1})
	m := &nats.Msg{Subject: subject, Reply: reply, Data: data, Header: nats.Header{HeaderReplyTo: []string{reply}}}
	resp, _ := rc.send(t, c.nc, m, 30*time.Second)
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeInitError, resp.Error.Code)
	d := errorData(t, resp)
	assert.True(t, d.Unavailable)
	assert.Equal(t, []string{"api_key"}, d.MissingKeys)

	// A wrong configuration is not "unavailable".
	rc = listen(t, c.nc, "raw", "i2")
	subject, data, reply = initRequestMsg(t, "raw", "i2", "demo__echo", InitRequestParams{Version: 1, ToolsetConfig: &WireConfig{Toolset: map[string]any{"nope": 1}}})
	m = &nats.Msg{Subject: subject, Reply: reply, Data: data, Header: nats.Header{HeaderReplyTo: []string{reply}}}
	resp, _ = rc.send(t, c.nc, m, 30*time.Second)
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeInitError, resp.Error.Code)
	assert.False(t, errorData(t, resp).Unavailable)

	// An invoke of it: the same field, and the client's error names the
	// tool and the key.
	rc = listen(t, c.nc, "raw", "i3")
	resp, _ = rc.send(t, c.nc, invokeMsg(t, "", "raw", "i3", "demo__keyed", map[string]any{}, nil), 30*time.Second)
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeInitError, resp.Error.Code)
	d = errorData(t, resp)
	assert.True(t, d.Unavailable)
	assert.Equal(t, []string{"api_key"}, d.MissingKeys)
	rt := &remoteTool{toolset: "demo", tool: "keyed", version: 1}
	err = rt.mapError(resp.Error)
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, []string{"api_key"}, ue.MissingKeys)
	assert.Contains(t, ue.ModelText(), "demo__keyed")
	assert.Contains(t, ue.ModelText(), "api_key")

	// Every tool left out: a *ConfigError naming each tool and key.
	_, err = c.ToolsetWithConfig("demo", toolpkg.Config{Exclude: []string{"auth", "echo", "fail", "readfile", "slow"}}).GetTools(ctx)
	var ce *toolpkg.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Error(), `"api_key" is required by tool "keyed"`)
}

// A forged "unavailable" answer with junk in its fields is bounded: the
// client keeps at most what it keeps of any list.
func TestHostileUnavailableData(t *testing.T) {
	t.Parallel()
	keys := make([]string, 500)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	raw, err := json.Marshal(ErrorData{Unavailable: true, MissingKeys: keys})
	require.NoError(t, err)
	rt := &remoteTool{toolset: "demo", tool: "keyed", version: 1}
	err = rt.mapError(&RPCError{Code: CodeInitError, Message: "left out", Data: raw})
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.LessOrEqual(t, len(ue.MissingKeys), 100)
	// Without the field, an INIT_ERROR at call time stops the run.
	err = rt.mapError(&RPCError{Code: CodeInitError, Message: "tool demo__keyed is not available with this configuration: x"})
	var re *RemoteError
	require.ErrorAs(t, err, &re)
}

// A runtime answers a bounded number of init_requests at once; one
// beyond is RESOURCE_EXHAUSTED, and a client asks again, so its listing
// still succeeds.
func TestInitRequestsAreBounded(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := NewRuntime(ctx, nc, &RuntimeOptions{ID: "rt1", Dir: runtimeDir(t), MaxInitRequests: 1, Heartbeat: 100 * time.Millisecond,
		Logger: quietLogger(), Store: &toolpkg.Options{DiscoveryTimeout: 30 * time.Second}})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(ctx)) }()

	// Distinct configurations, so that each answer runs the tool's
	// discovery and takes its time.
	const n = 8
	codes := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		corr := fmt.Sprintf("b%d", i)
		rc := listen(t, nc, "raw", corr)
		subject, data, reply := initRequestMsg(t, "raw", corr, "demo__keyed", InitRequestParams{Version: 1,
			ToolsetConfig: &WireConfig{Toolset: map[string]any{"api_key": corr}}})
		m := &nats.Msg{Subject: subject, Reply: reply, Data: data, Header: nats.Header{HeaderReplyTo: []string{reply}}}
		require.NoError(t, nc.PublishMsg(m))
		wg.Go(func() {
			select {
			case got := <-rc.resp:
				resp, err := DecodeResponse(got.Data)
				if err == nil && resp.Error != nil {
					codes[i] = resp.Error.Code
				} else if err == nil {
					codes[i] = "ok"
				}
			case <-time.After(30 * time.Second):
			}
		})
	}
	wg.Wait()
	counts := map[string]int{}
	for _, c := range codes {
		counts[c]++
	}
	assert.Equal(t, n, counts["ok"]+counts[CodeResourceExhausted], "%v", codes)
	assert.Positive(t, counts["ok"])
	assert.Positive(t, counts[CodeResourceExhausted], "%v", codes)

	// The client asks again: every tool is listed.
	c, err := NewClient(ctx, connect(t, s), &ClientOptions{Logger: quietLogger()})
	require.NoError(t, err)
	defer c.Close()
	tools, err := c.ToolsetWithConfig("demo", toolpkg.Config{Toolset: map[string]any{"api_key": "k"}}).GetTools(ctx)
	require.NoError(t, err)
	assert.Len(t, tools, 6)
	list, err := toolset.BuildTools(ctx, c.Agent(), c.Toolset("demo", map[string]any{"api_key": "k"}))
	require.NoError(t, err)
	assert.Len(t, list.Names(), 6)
}

// Calls delivered while the one slot is taken wait for it and are woken
// when it frees: each is answered, one after the other.
func TestCallsWaitingForASlotAreWoken(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	startRuntime(t, nc, "", "rt1", 1)
	const n = 3
	calls := make([]*call, n)
	for i := range n {
		corr := fmt.Sprintf("w%d", i)
		calls[i] = listen(t, nc, "raw", corr)
		require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "raw", corr, "demo__slow", map[string]any{"ms": 50}, nil)))
	}
	require.NoError(t, nc.Flush())
	ran := 0
	for _, c := range calls {
		select {
		case m := <-c.resp:
			if len(m.Data) == 0 {
				continue // no responders: the gate was closed before it arrived
			}
			resp, err := DecodeResponse(m.Data)
			require.NoError(t, err)
			assert.Equal(t, "done", result(t, resp).ToolResult.Text)
			ran++
		case <-time.After(20 * time.Second):
			t.Fatal("a call waiting for a slot was not answered")
		}
	}
	assert.Positive(t, ran)
}
