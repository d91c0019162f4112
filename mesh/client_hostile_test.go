package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

func callTool(ctx context.Context, tl toolset.Tool, args string) (any, error) {
	return tl.Execute(ctx, toolset.ToolCall{ID: "c", Name: tl.Name, Args: json.RawMessage(args)})
}

// Forged, malformed, oversized and misdirected answers, and a status
// flood, are dropped: the call gets the runtime's real answer.
func TestClientDropsWhatIsNotItsAnswer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	p := newPeer(t, s, []string{"t"}, func(p *peer, m *nats.Msg, req *Request, ip *InvokeParams) {
		reply := replySubject(m)
		p.status(m, p.id, StateAccepted, "")
		// The body's id is another call's.
		p.result(&nats.Msg{Header: nats.Header{HeaderReplyTo: {reply}}}, "someone-else", "forged")
		// Malformed JSON, the wrong version, two answers in one, depth.
		for _, junk := range []string{`{"jsonrpc":"2.0","id":"` + req.ID + `","result":`, `{"jsonrpc":"1.0","id":"` + req.ID + `","result":{}}`,
			`{"jsonrpc":"2.0","id":"` + req.ID + `","result":{},"error":{"code":"X","message":"y"}}`,
			`{"jsonrpc":"2.0","id":"` + req.ID + `","result":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, ``} {
			_ = p.nc.Publish(reply, []byte(junk))
		}
		// Too large.
		_ = p.nc.Publish(reply, append([]byte(`{"jsonrpc":"2.0","id":"`+req.ID+`","result":{"tool_result":{"kind":"text","text":"`), make([]byte, MaxMessageBytes)...))
		// Another call's subject of the same agent.
		kindless := strings.TrimSuffix(reply, req.ID) + "0123456789abcdef"
		p.result(&nats.Msg{Header: nats.Header{HeaderReplyTo: {kindless}}}, "0123456789abcdef", "misdirected")
		// Statuses from another runtime, and a flood of progress.
		p.status(m, "intruder", StateProgress, "intruder")
		for i := range 3000 {
			p.status(m, p.id, StateProgress, "p"+strings.Repeat("x", i%50))
		}
		p.result(m, req.ID, "real")
		// A second answer, after the real one.
		p.result(m, req.ID, "second")
	})
	_, tools := fakeTools(t, s, p, nil)
	var reports atomic.Int32
	var intruder atomic.Bool
	ctx := toolset.WithProgress(context.Background(), func(pr toolset.Progress) {
		reports.Add(1)
		if pr.Message == "intruder" {
			intruder.Store(true)
		}
	})
	for range 3 {
		out, err := callTool(ctx, tools["fake__t"], `{}`)
		require.NoError(t, err)
		assert.Equal(t, "real", out)
	}
	assert.False(t, intruder.Load(), "a status of another runtime was reported")
	assert.LessOrEqual(t, reports.Load(), int32(3*maxStatusReports))
}

// A runtime that takes a call and then goes silent fails the call with a
// clear error, well before its deadline, and the call is not sent again.
func TestClientHeartbeatLoss(t *testing.T) {
	s := startServer(t)
	var invokes atomic.Int32
	stop := make(chan struct{})
	var beating sync.WaitGroup
	t.Cleanup(func() { close(stop); beating.Wait() })
	p := newPeer(t, s, []string{"silent", "never", "other"}, func(p *peer, m *nats.Msg, req *Request, ip *InvokeParams) {
		invokes.Add(1)
		switch ip.ToolName {
		case "fake__silent":
			p.status(m, p.id, StateAccepted, "")
			p.status(m, p.id, StateRunning, "")
		case "fake__other":
			// Accepted by one runtime, heartbeats from another.
			p.status(m, p.id, StateAccepted, "")
			beating.Go(func() {
				for range 20 {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					p.status(m, "other", StateRunning, "")
				}
			})
		}
	})
	_, tools := fakeTools(t, s, p, &ClientOptions{HeartbeatTimeout: 300 * time.Millisecond, AcceptTimeout: 400 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"fake__silent", "fake__never", "fake__other"} {
		invokes.Store(0)
		start := time.Now()
		_, err := callTool(ctx, tools[name], `{}`)
		var ue *UnavailableError
		require.ErrorAs(t, err, &ue, name)
		assert.True(t, ue.MayHaveRun, name)
		assert.Less(t, time.Since(start), 3*time.Second, name)
		assert.Equal(t, int32(1), invokes.Load(), "%s: sent again", name)
		var me toolset.ModelError
		assert.True(t, errors.As(err, &me))
	}
}

// The caller's deadline ends the call, the runtime is told, and the late
// answer is dropped.
func TestClientDeadlineAndLateAnswer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	answered := make(chan struct{}, 1)
	p := newPeer(t, s, []string{"slow"}, func(p *peer, m *nats.Msg, req *Request, ip *InvokeParams) {
		if ip.TimeoutSeconds <= 0 || ip.TimeoutSeconds > 1 {
			t.Errorf("timeout_seconds %v", ip.TimeoutSeconds)
		}
		p.status(m, p.id, StateAccepted, "")
		go func() {
			time.Sleep(600 * time.Millisecond)
			p.result(m, req.ID, "late")
			answered <- struct{}{}
		}()
	})
	c, tools := fakeTools(t, s, p, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := tools["fake__slow"].Execute(ctx, toolset.ToolCall{Name: "fake__slow", Args: json.RawMessage(`{}`)})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	select {
	case m := <-p.cancels:
		assert.Contains(t, m.Subject, ".cancel."+c.Agent()+".")
	case <-time.After(5 * time.Second):
		t.Fatal("no cancel")
	}
	<-answered
	require.NoError(t, p.nc.Flush())
	c.mu.RLock()
	assert.Empty(t, c.pending)
	c.mu.RUnlock()
}

// Every error code maps to the error an in-process call gives.
func TestClientErrorCodes(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	p := newPeer(t, s, []string{"t"}, func(p *peer, m *nats.Msg, req *Request, ip *InvokeParams) {
		var args struct{ Code string }
		_ = json.Unmarshal(ip.Args, &args)
		p.fail(m, req.ID, args.Code, "message of "+args.Code, &ErrorData{ModelText: "model text", ToolErrorCode: "E1", TimeoutSeconds: 7, Runtime: "fakert"})
	})
	_, tools := fakeTools(t, s, p, nil)
	ctx := context.Background()
	check := map[string]func(error){
		CodeToolError: func(err error) {
			var f *toolpkg.ToolFailure
			require.ErrorAs(t, err, &f)
			assert.Equal(t, "model text", f.ModelText())
			assert.Equal(t, "E1", f.Code)
		},
		CodeExecutionError: func(err error) {
			var f *toolpkg.ToolFailure
			require.ErrorAs(t, err, &f)
		},
		CodeAuthenticationFailed: func(err error) {
			var a *toolpkg.AuthRequiredError
			require.ErrorAs(t, err, &a)
			assert.Equal(t, "message of AUTHENTICATION_FAILED", a.Message)
		},
		CodeToolNotFound: func(err error) {
			var u *UnavailableError
			require.ErrorAs(t, err, &u)
			assert.Equal(t, CodeToolNotFound, u.Code)
			assert.False(t, u.MayHaveRun)
		},
		CodeToolNotAvailable: func(err error) {
			var u *UnavailableError
			require.ErrorAs(t, err, &u)
		},
		CodeSandboxTimeout: func(err error) {
			var te *toolset.TimeoutError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, 7*time.Second, te.After)
		},
		CodeArtifactError: func(err error) {
			var ae *toolpkg.ArtifactError
			require.ErrorAs(t, err, &ae)
		},
		CodeInternalError: func(err error) {
			var re *RemoteError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, "fakert", re.Runtime)
			var me toolset.ModelError
			assert.False(t, errors.As(err, &me), "an internal error is not the model's")
		},
		"SOMETHING_NEW": func(err error) {
			var re *RemoteError
			require.ErrorAs(t, err, &re)
		},
	}
	for code, fn := range check {
		_, err := callTool(ctx, tools["fake__t"], `{"Code":"`+code+`"}`)
		require.Error(t, err, code)
		fn(err)
	}
}

// No runtime serves the version: a clear error at once, and the call is
// sent again only while the server says nobody received it.
func TestClientNoResponders(t *testing.T) {
	s := startServer(t)
	p := newPeer(t, s, []string{"t"}, nil)
	c, tools := fakeTools(t, s, p, &ClientOptions{BusyWait: 300 * time.Millisecond})
	require.NoError(t, p.nc.Drain())
	require.Eventually(t, func() bool { return !p.nc.IsConnected() }, 5*time.Second, 5*time.Millisecond)
	start := time.Now()
	_, err := callTool(context.Background(), tools["fake__t"], `{}`)
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, ue.Error(), "no runtime serves version 1 of toolset fake")
	assert.False(t, ue.MayHaveRun)
	assert.Less(t, time.Since(start), 2*time.Second)
	// Once the runtime says it no longer serves it, the next call fails
	// without waiting.
	subject, _ := c.subj.Removed("fake__t")
	data, _ := encodeRequest("", MethodRemoved, RemovedParams{ToolName: "fake__t", Version: 1, Runtime: "fakert"})
	nc := connect(t, s)
	require.NoError(t, nc.Publish(subject, data))
	require.NoError(t, nc.Flush())
	require.Eventually(t, func() bool { return !c.serves("fake", 1) }, 5*time.Second, 5*time.Millisecond)
	start = time.Now()
	_, err = callTool(context.Background(), tools["fake__t"], `{}`)
	require.ErrorAs(t, err, &ue)
	assert.Less(t, time.Since(start), 200*time.Millisecond)
	_, err = c.Toolset("fake", nil).GetTools(context.Background())
	assert.ErrorIs(t, err, toolpkg.ErrNotFound)
}

// Announcements that do not hold together are ignored.
func TestClientIgnoresBadAnnouncements(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	nc := connect(t, s)
	c, err := NewClient(context.Background(), connect(t, s), &ClientOptions{Logger: quietLogger()})
	require.NoError(t, err)
	defer c.Close()
	subj, _ := NewSubjects("")
	bad := []InitParams{
		{ToolName: "bad__t", Toolset: "bad", Tool: "other", Description: "x", Version: 1},             // name is not toolset__tool
		{ToolName: "bad__t", Toolset: "bad", Tool: "t", Description: "x", Version: 0},                 // no version
		{ToolName: "bad__t", Toolset: "bad", Tool: "t", Description: " ", Version: 1},                 // no description
		{ToolName: "bad__t", Toolset: "bad", Tool: "t", Description: "x", Version: 1, Runtime: "a b"}, // bad runtime
		{ToolName: "bad__t", Toolset: "bad", Tool: "t", Description: "x", Version: 1, Parameters: json.RawMessage(`{"type":"string"}`)},
	}
	for _, ip := range bad {
		subject, _ := subj.Init("bad__t")
		data, err := encodeRequest("", MethodInit, ip)
		require.NoError(t, err)
		require.NoError(t, nc.Publish(subject, data))
	}
	other, _ := subj.Init("bad__u")
	data, _ := encodeRequest("", MethodInit, InitParams{ToolName: "bad__t", Toolset: "bad", Tool: "t", Description: "x", Version: 1})
	require.NoError(t, nc.Publish(other, data)) // the subject's tool differs
	require.NoError(t, nc.Publish(other, []byte(`{"jsonrpc":"2.0","method":"sam_remote_tool/init","params":`+strings.Repeat("[", 100)+`}`)))
	require.NoError(t, nc.Flush())
	time.Sleep(50 * time.Millisecond) // nothing to wait for: the messages are dropped
	_, err = c.Info("bad")
	assert.ErrorIs(t, err, toolpkg.ErrNotFound)
}
