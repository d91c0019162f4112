package mesh

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setup starts a broker, publishes the meshtool package as "demo" and
// starts one runtime.
func setup(t *testing.T, maxCalls int) (*nats.Conn, *Runtime) {
	t.Helper()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	r := startRuntime(t, nc, "", "rt1", maxCalls)
	return nc, r
}

func TestInvokeHappyPath(t *testing.T) {
	t.Parallel()
	nc, _ := setup(t, 2)
	c := listen(t, nc, "agent1", "c1")
	require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "agent1", "c1", "demo__echo", map[string]any{"text": "hi"}, nil)))
	resp, statuses := c.wait(t, 20*time.Second)
	res := result(t, resp)
	assert.Equal(t, "c1", resp.ID)
	require.NotNil(t, res.ToolResult)
	assert.Contains(t, res.ToolResult.Text, "echo: hi")
	assert.False(t, res.TimedOut)
	require.NotEmpty(t, statuses)
	// The acceptance goes out once the call has run a while, so it may
	// come after the progress, or not at all for a quick call; every
	// status names the task and the runtime.
	var progress bool
	for _, st := range statuses {
		assert.Equal(t, "task-c1", st.TaskID)
		assert.Equal(t, "rt1", st.Runtime)
		assert.Contains(t, []string{StateAccepted, StateRunning, StateProgress}, st.State)
		if st.State == StateProgress && st.StatusText == "echoing" {
			progress = true
		}
	}
	assert.True(t, progress, "statuses: %+v", statuses)
}

func TestInvokeVersionPinned(t *testing.T) {
	t.Parallel()
	nc, _ := setup(t, 2)
	subj, _ := NewSubjects("")
	pinned, err := subj.InvokeVersion("demo__echo", 1)
	require.NoError(t, err)
	c := listen(t, nc, "agent1", "c1")
	require.NoError(t, nc.PublishMsg(invokeMsg(t, pinned, "agent1", "c1", "demo__echo", map[string]any{"text": "v1"}, nil)))
	resp, _ := c.wait(t, 20*time.Second)
	assert.Contains(t, result(t, resp).ToolResult.Text, "echo: v1")

	// Nobody serves version 2: the server says so at once.
	other, err := subj.InvokeVersion("demo__echo", 2)
	require.NoError(t, err)
	m := invokeMsg(t, other, "agent1", "c2", "demo__echo", map[string]any{"text": "v2"}, nil)
	_, err = nc.RequestMsg(m, 5*time.Second)
	assert.ErrorIs(t, err, nats.ErrNoResponders)
}

func TestInitBroadcastAndCatalog(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	subj, _ := NewSubjects("")
	inits := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(subj.InitAll(), inits)
	require.NoError(t, err)
	defer sub.Unsubscribe()
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	startRuntime(t, nc, "", "rt1", 2)

	got := map[string]InitParams{}
	deadline := time.After(20 * time.Second)
	for len(got) < 5 {
		select {
		case m := <-inits:
			req, err := DecodeRequest(m.Data, MethodInit, false)
			require.NoError(t, err)
			var p InitParams
			require.NoError(t, Decode(req.Params, 0, &p))
			got[p.ToolName] = p
		case <-deadline:
			t.Fatalf("init announcements: %v", got)
		}
	}
	assert.Equal(t, "Echo the text", got["demo__echo"].Description)
	assert.Equal(t, 1, got["demo__echo"].Version)
	assert.Equal(t, "demo", got["demo__echo"].Toolset)
	require.Len(t, got["demo__keyed"].ConfigSchema, 1)
	assert.True(t, got["demo__keyed"].ConfigSchema[0].Required)

	data, err := encodeRequest("cat1", MethodCatalog, struct{}{})
	require.NoError(t, err)
	msg, err := nc.Request(subj.Catalog(), data, 5*time.Second)
	require.NoError(t, err)
	resp, err := DecodeResponse(msg.Data)
	require.NoError(t, err)
	assert.Equal(t, "cat1", resp.ID)
	var cat Catalog
	require.NoError(t, json.Unmarshal(resp.Result, &cat))
	assert.Equal(t, "rt1", cat.Runtime)
	require.Len(t, cat.Toolsets, 1)
	assert.Equal(t, "demo", cat.Toolsets[0].Name)
	assert.Equal(t, 1, cat.Toolsets[0].Version)
	assert.Len(t, cat.Toolsets[0].Tools, 6)
}

func TestInitRequest(t *testing.T) {
	t.Parallel()
	nc, _ := setup(t, 2)
	subj, _ := NewSubjects("")
	ask := func(tool string, p InitRequestParams) *Response {
		t.Helper()
		data, err := encodeRequest("ir1", MethodInitRequest, p)
		require.NoError(t, err)
		subject, err := subj.InitRequest(tool)
		require.NoError(t, err)
		m, err := nc.Request(subject, data, 20*time.Second)
		require.NoError(t, err)
		resp, err := DecodeResponse(m.Data)
		require.NoError(t, err)
		return resp
	}
	resp := ask("demo__keyed", InitRequestParams{ToolName: "demo__keyed", ToolConfig: map[string]any{"api_key": "k"}})
	require.Nil(t, resp.Error, "%+v", resp.Error)
	var ip InitParams
	require.NoError(t, json.Unmarshal(resp.Result, &ip))
	assert.Equal(t, "demo__keyed", ip.ToolName)
	assert.NotEmpty(t, ip.Parameters)

	// A required value missing: INIT_ERROR naming the tool and the key.
	resp = ask("demo__keyed", InitRequestParams{ToolName: "demo__keyed"})
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeInitError, resp.Error.Code)
	assert.Contains(t, resp.Error.Message, "keyed")
	assert.Contains(t, resp.Error.Message, "api_key")

	// The subject's tool and the body's must agree.
	resp = ask("demo__echo", InitRequestParams{ToolName: "demo__keyed"})
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeInvalidRequest, resp.Error.Code)
}

func TestInvokeErrors(t *testing.T) {
	t.Parallel()
	nc, _ := setup(t, 4)
	run := func(corr, tool string, args any, extra func(*InvokeParams)) *Response {
		t.Helper()
		c := listen(t, nc, "agent1", corr)
		require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "agent1", corr, tool, args, extra)))
		resp, _ := c.wait(t, 20*time.Second)
		return resp
	}
	resp := run("e1", "demo__fail", map[string]any{}, nil)
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeToolError, resp.Error.Code)
	assert.Contains(t, resp.Error.Message, "boom")
	assert.Contains(t, errorData(t, resp).ModelText, "boom")

	resp = run("e2", "demo__auth", map[string]any{}, nil)
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeAuthenticationFailed, resp.Error.Code)
	assert.Contains(t, resp.Error.Message, "log in first")

	resp = run("e3", "demo__slow", map[string]any{"ms": 20000}, func(p *InvokeParams) { p.TimeoutSeconds = 0.3 })
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeSandboxTimeout, resp.Error.Code)
	assert.True(t, errorData(t, resp).TimedOut)

	resp = run("e4", "demo__echo", map[string]any{"nope": 1}, nil)
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeExecutionError, resp.Error.Code)
	assert.NotEmpty(t, errorData(t, resp).ModelText)

	resp = run("e5", "demo__keyed", map[string]any{}, nil)
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeInitError, resp.Error.Code)
	assert.Contains(t, resp.Error.Message, "api_key")

	resp = run("e6", "demo__keyed", map[string]any{}, func(p *InvokeParams) { p.ToolConfig = map[string]any{"api_key": "sesame"} })
	assert.Contains(t, result(t, resp).ToolResult.Text, "key sesame")
}

func TestCancel(t *testing.T) {
	t.Parallel()
	nc, _ := setup(t, 2)
	subj, _ := NewSubjects("")
	c := listen(t, nc, "agent1", "k1")
	require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "agent1", "k1", "demo__slow", map[string]any{"ms": 20000}, nil)))
	// Wait until it runs.
	select {
	case <-c.status:
	case <-time.After(20 * time.Second):
		t.Fatal("no acknowledgement")
	}
	// Another agent's cancel of the same id does nothing; the caller's
	// ends the call.
	other, _ := subj.Cancel("agent2", "k1")
	require.NoError(t, nc.Publish(other, nil))
	mine, _ := subj.Cancel("agent1", "k1")
	require.NoError(t, nc.Flush())
	start := time.Now()
	require.NoError(t, nc.Publish(mine, nil))
	resp, _ := c.wait(t, 10*time.Second)
	require.NotNil(t, resp.Error)
	assert.Equal(t, CodeExecutionError, resp.Error.Code)
	assert.Contains(t, resp.Error.Message, "canceled")
	assert.Less(t, time.Since(start), 5*time.Second)

	// A late cancel, for a call that ended, changes nothing.
	require.NoError(t, nc.Publish(mine, nil))
	c2 := listen(t, nc, "agent1", "k2")
	require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "agent1", "k2", "demo__echo", map[string]any{"text": "after"}, nil)))
	resp, _ = c2.wait(t, 20*time.Second)
	assert.Contains(t, result(t, resp).ToolResult.Text, "echo: after")
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	nc, _ := setup(t, 2)
	c := listen(t, nc, "agent1", "h1")
	require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "agent1", "h1", "demo__slow", map[string]any{"ms": 600}, nil)))
	resp, statuses := c.wait(t, 20*time.Second)
	assert.Contains(t, result(t, resp).ToolResult.Text, "done")
	beats := 0
	for _, st := range statuses {
		if st.State == StateRunning {
			beats++
		}
	}
	assert.GreaterOrEqual(t, beats, 3, "statuses: %+v", statuses)
}

func TestCloseAnnouncesRemoved(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	publish(t, nc, "demo", 1, meshPackage(t, ""), nil)
	subj, _ := NewSubjects("")
	removed := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(subj.RemovedAll(), removed)
	require.NoError(t, err)
	defer sub.Unsubscribe()
	r := startRuntime(t, nc, "", "rt1", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, r.Close(ctx))
	require.NoError(t, r.Close(ctx))
	select {
	case m := <-removed:
		req, err := DecodeRequest(m.Data, MethodRemoved, false)
		require.NoError(t, err)
		var p RemovedParams
		require.NoError(t, Decode(req.Params, 0, &p))
		assert.Equal(t, "rt1", p.Runtime)
	case <-time.After(5 * time.Second):
		t.Fatal("no removed announcement")
	}
	// Nobody serves now: no responders.
	m := invokeMsg(t, "", "agent1", "z1", "demo__echo", map[string]any{"text": "x"}, nil)
	_, err = nc.RequestMsg(m, 5*time.Second)
	assert.ErrorIs(t, err, nats.ErrNoResponders)
}
