package mesh

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// peer is a runtime written by the test: a real NATS client that speaks
// the protocol as a test scenario wants, on the real server.
type peer struct {
	t       testing.TB
	nc      *nats.Conn
	subj    Subjects
	id      string
	invokes chan *nats.Msg
	cancels chan *nats.Msg
	tools   []string
}

// newPeer announces toolset "fake" version 1 with the tools named, and
// serves their pinned invoke subjects: each invoke is handed to handle,
// on the subscription's goroutine (nil: sent to p.invokes).
func newPeer(t testing.TB, s *Server, tools []string, handle func(p *peer, m *nats.Msg, req *Request, ip *InvokeParams)) *peer {
	t.Helper()
	p := &peer{t: t, nc: connect(t, s), id: "fakert", invokes: make(chan *nats.Msg, 64), cancels: make(chan *nats.Msg, 64)}
	p.subj, _ = NewSubjects("")
	for _, tool := range tools {
		subject, err := p.subj.InvokeVersion("fake__"+tool, 1)
		require.NoError(t, err)
		_, err = p.nc.Subscribe(subject, func(m *nats.Msg) {
			if handle == nil {
				p.invokes <- m
				return
			}
			req, err := DecodeRequest(m.Data, MethodInvoke, true)
			if err != nil {
				t.Errorf("peer: %v", err)
				return
			}
			var ip InvokeParams
			if err := Decode(req.Params, 0, &ip); err != nil {
				t.Errorf("peer: %v", err)
				return
			}
			handle(p, m, req, &ip)
		})
		require.NoError(t, err)
	}
	for _, tool := range tools {
		subject, _ := p.subj.InitRequest("fake__" + tool)
		_, err := p.nc.Subscribe(subject, func(m *nats.Msg) {
			req, err := DecodeRequest(m.Data, MethodInitRequest, true)
			if err != nil {
				t.Errorf("peer: %v", err)
				return
			}
			data, _ := encodeResult(req.ID, p.initParams(tool))
			_ = p.nc.Publish(replySubject(m), data)
		})
		require.NoError(t, err)
	}
	_, err := p.nc.ChanSubscribe(p.subj.CancelAll(), p.cancels)
	require.NoError(t, err)
	require.NoError(t, p.nc.Flush())
	p.tools = tools
	return p
}

// announceAll announces every tool of p.
func (p *peer) announceAll() {
	for _, tool := range p.tools {
		p.announce(tool)
	}
}

func (p *peer) announce(tool string) {
	subject, _ := p.subj.Init("fake__" + tool)
	data, err := encodeRequest("", MethodInit, p.initParams(tool))
	require.NoError(p.t, err)
	require.NoError(p.t, p.nc.Publish(subject, data))
	require.NoError(p.t, p.nc.Flush())
}

func (p *peer) initParams(tool string) InitParams {
	return InitParams{
		ToolName: "fake__" + tool, Description: "The " + tool + " tool", Parameters: json.RawMessage(`{"type":"object"}`),
		Toolset: "fake", Tool: tool, Version: 1, Runtime: p.id, TimeoutSeconds: 30,
	}
}

// status sends a status notification of state for the call m.
func (p *peer) status(m *nats.Msg, runtime, state, text string) {
	data, _ := encodeRequest("", MethodStatus, StatusParams{TaskID: "t", StatusText: text, Timestamp: Timestamp(time.Now()), State: state, Runtime: runtime})
	_ = p.nc.Publish(statusSubject(m), data)
}

// result answers the call m with text.
func (p *peer) result(m *nats.Msg, id, text string) {
	data, err := encodeResult(id, InvokeResult{ToolResult: &ToolResult{Kind: ResultKindText, Text: text}})
	require.NoError(p.t, err)
	_ = p.nc.Publish(replySubject(m), data)
}

// fail answers the call m with an error.
func (p *peer) fail(m *nats.Msg, id, code, message string, data *ErrorData) {
	b, err := encodeError(id, code, message, data)
	require.NoError(p.t, err)
	_ = p.nc.Publish(replySubject(m), b)
}

// fakeTools makes a client on s and returns the tools of toolset "fake".
func fakeTools(t testing.TB, s *Server, p *peer, o *ClientOptions) (*Client, map[string]toolset.Tool) {
	t.Helper()
	if o == nil {
		o = &ClientOptions{}
	}
	o.Logger = quietLogger()
	ctx := context.Background()
	c, err := NewClient(ctx, connect(t, s), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	p.announceAll()
	want := len(p.tools)
	ts := c.Toolset("fake", nil)
	var tools []toolset.Tool
	require.Eventually(t, func() bool {
		tools, err = ts.GetTools(ctx)
		return err == nil && len(tools) == want
	}, 10*time.Second, 5*time.Millisecond, "tools: %v", err)
	out := map[string]toolset.Tool{}
	for _, tl := range tools {
		out[tl.Name] = tl
	}
	return c, out
}

// replySubject is where an invoke or request m is answered: SAM's replyTo
// header, else the NATS reply subject.
func replySubject(m *nats.Msg) string {
	if r := m.Header.Get(HeaderReplyTo); r != "" {
		return r
	}
	return m.Reply
}

// statusSubject is where the statuses of invoke m go: SAM's statusTo
// header, else the status subject of its response subject.
func statusSubject(m *nats.Msg) string {
	if st := m.Header.Get(HeaderStatusTo); st != "" {
		return st
	}
	subj, _ := NewSubjects("")
	_, agent, corr, ok := subj.ParseCall(replySubject(m))
	if !ok {
		return ""
	}
	st, _ := subj.Status(agent, corr)
	return st
}
