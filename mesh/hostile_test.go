package mesh

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quiet asserts that nothing arrives on ch for a short while.
func quiet(t *testing.T, ch chan *nats.Msg, what string) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("%s got a message on %s: %s", what, m.Subject, m.Data)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestHostileInvoke(t *testing.T) {
	t.Parallel()
	nc, _ := setup(t, 2)
	subj, _ := NewSubjects("")

	t.Run("malformed JSON", func(t *testing.T) {
		c := listen(t, nc, "agent1", "m1")
		m := invokeMsg(t, "", "agent1", "m1", "demo__echo", map[string]any{"text": "x"}, nil)
		m.Data = []byte(`{"jsonrpc":"2.0","id":"m1","method":`)
		require.NoError(t, nc.PublishMsg(m))
		resp, _ := c.wait(t, 10*time.Second)
		require.NotNil(t, resp.Error)
		assert.Equal(t, CodeInvalidRequest, resp.Error.Code)
	})
	t.Run("too deep", func(t *testing.T) {
		c := listen(t, nc, "agent1", "m2")
		m := invokeMsg(t, "", "agent1", "m2", "demo__echo", map[string]any{"text": "x"}, nil)
		m.Data = []byte(`{"jsonrpc":"2.0","id":"m2","method":"sam_remote_tool/invoke","params":{"args":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}}`)
		require.NoError(t, nc.PublishMsg(m))
		resp, _ := c.wait(t, 10*time.Second)
		require.NotNil(t, resp.Error)
		assert.Equal(t, CodeInvalidRequest, resp.Error.Code)
		assert.Contains(t, resp.Error.Message, "deep")
	})
	t.Run("oversized", func(t *testing.T) {
		c := listen(t, nc, "agent1", "m3")
		big := invokeMsg(t, "", "agent1", "m3", "demo__echo", map[string]any{"text": "x"}, nil)
		big.Data = append([]byte(`{"jsonrpc":"2.0","id":"m3","method":"sam_remote_tool/invoke","params":{"tool_name":"demo__echo","args":{"text":"`),
			append(bytes.Repeat([]byte("x"), MaxMessageBytes), []byte(`"}}}`)...)...)
		require.NoError(t, nc.PublishMsg(big))
		resp, _ := c.wait(t, 10*time.Second)
		require.NotNil(t, resp.Error)
		assert.Equal(t, CodeInvalidRequest, resp.Error.Code)
		assert.Contains(t, resp.Error.Message, "at most")
	})
	t.Run("unknown tool", func(t *testing.T) {
		// A subject no runtime serves: no responders, at once.
		m := invokeMsg(t, "", "agent1", "u1", "demo__nope", map[string]any{}, nil)
		_, err := nc.RequestMsg(m, 5*time.Second)
		assert.ErrorIs(t, err, nats.ErrNoResponders)
		// A body naming another tool than its subject's.
		c := listen(t, nc, "agent1", "u2")
		echo, _ := subj.Invoke("demo__echo")
		require.NoError(t, nc.PublishMsg(invokeMsg(t, echo, "agent1", "u2", "demo__fail", map[string]any{}, nil)))
		resp, _ := c.wait(t, 10*time.Second)
		require.NotNil(t, resp.Error)
		assert.Equal(t, CodeInvalidRequest, resp.Error.Code)
	})
	t.Run("tool name with a dot", func(t *testing.T) {
		_, err := subj.Invoke("demo.echo")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "'.'"[1:2])
		_, err = ToolName("demo", "e.cho")
		require.Error(t, err)
		_, err = subj.Response("agent.1", "c1")
		require.Error(t, err)
		// The dotted subject exists on the broker as a longer one; no
		// runtime takes it.
		m := invokeMsg(t, subj.InvokeAll()[:len(subj.InvokeAll())-1]+"demo__echo.x.y", "agent1", "d1", "demo__echo", map[string]any{"text": "x"}, nil)
		_, err = nc.RequestMsg(m, 5*time.Second)
		assert.ErrorIs(t, err, nats.ErrNoResponders)
	})
	t.Run("forged reply to another agent", func(t *testing.T) {
		victim := listen(t, nc, "agent2", "f1")
		m := invokeMsg(t, "", "agent1", "f1", "demo__echo", map[string]any{"text": "x"}, nil)
		// The caller names agent2's subjects for a correlation id that
		// is not the request's.
		rs, _ := subj.Response("agent2", "f1")
		m.Data, _ = encodeRequest("other", MethodInvoke, InvokeParams{ToolName: "demo__echo", Args: []byte(`{"text":"x"}`)})
		m.Reply = rs
		m.Header.Set(HeaderReplyTo, rs)
		m.Header.Del(HeaderStatusTo)
		require.NoError(t, nc.PublishMsg(m))
		quiet(t, victim.resp, "victim response")
		quiet(t, victim.status, "victim status")
		// statusTo naming another agent than replyTo.
		m = invokeMsg(t, "", "agent1", "f2", "demo__echo", map[string]any{"text": "x"}, nil)
		ss, _ := subj.Status("agent2", "f2")
		m.Header.Set(HeaderStatusTo, ss)
		v2 := listen(t, nc, "agent2", "f2")
		mine := listen(t, nc, "agent1", "f2")
		require.NoError(t, nc.PublishMsg(m))
		quiet(t, v2.status, "victim status")
		quiet(t, mine.resp, "caller response")
	})
	t.Run("arbitrary reply subject", func(t *testing.T) {
		trap := make(chan *nats.Msg, 4)
		sub, err := nc.ChanSubscribe("secret.>", trap)
		require.NoError(t, err)
		defer sub.Unsubscribe()
		m := invokeMsg(t, "", "agent1", "a1", "demo__echo", map[string]any{"text": "x"}, nil)
		m.Reply = "secret.inbox"
		m.Header.Set(HeaderReplyTo, "secret.inbox")
		require.NoError(t, nc.PublishMsg(m))
		m = invokeMsg(t, "", "agent1", "a2", "demo__echo", map[string]any{"text": "x"}, nil)
		m.Header.Set(HeaderStatusTo, "secret.status")
		require.NoError(t, nc.PublishMsg(m))
		// A NATS inbox is no invoke's answer either.
		m = invokeMsg(t, "", "agent1", "a3", "demo__echo", map[string]any{"text": "x"}, nil)
		m.Header.Del(HeaderReplyTo)
		m.Reply = "secret.reply"
		require.NoError(t, nc.PublishMsg(m))
		quiet(t, trap, "arbitrary subject")
	})
	t.Run("the runtime still serves", func(t *testing.T) {
		c := listen(t, nc, "agent1", "ok1")
		require.NoError(t, nc.PublishMsg(invokeMsg(t, "", "agent1", "ok1", "demo__echo", map[string]any{"text": "fine"}, nil)))
		resp, _ := c.wait(t, 20*time.Second)
		assert.Contains(t, result(t, resp).ToolResult.Text, "echo: fine")
	})
}

func TestSubjectNames(t *testing.T) {
	t.Parallel()
	_, err := NewSubjects("a..b")
	assert.Error(t, err)
	_, err = NewSubjects("a b")
	assert.Error(t, err)
	s, err := NewSubjects("prod.eu")
	require.NoError(t, err)
	got, err := s.Invoke("x__y")
	require.NoError(t, err)
	assert.Equal(t, "prod.eu.a2a.v1.sam_remote_tool.invoke.x__y", got)
	kind, tool, v, ok := s.ParseTool("prod.eu.a2a.v1.sam_remote_tool.invoke.x__y.v3")
	assert.True(t, ok)
	assert.Equal(t, "invoke", kind)
	assert.Equal(t, "x__y", tool)
	assert.Equal(t, 3, v)
	for _, bad := range []string{"prod.eu.a2a.v1.sam_remote_tool.invoke.x__y.v03", "prod.eu.a2a.v1.sam_remote_tool.init.x__y.v3", "other.a2a.v1.sam_remote_tool.invoke.x"} {
		_, _, _, ok := s.ParseTool(bad)
		assert.False(t, ok, bad)
	}
	_, err = s.Response("agent", strings.Repeat("a", MaxIDBytes+1))
	assert.Error(t, err)
	assert.Error(t, CheckToolName(strings.Repeat("a", 65)))
	assert.Error(t, CheckToolName("a*b"))
	assert.Error(t, CheckToolName("a>"))
}

func TestServerRefusesOpenListenWithoutToken(t *testing.T) {
	t.Parallel()
	_, err := StartServer(&ServerOptions{Listen: "0.0.0.0:0"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "token")

	s, err := StartServer(&ServerOptions{Listen: "127.0.0.1:0", Token: "t0ken"})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = Connect(ctx, &ConnOptions{URL: s.ClientURL(), Logger: quietLogger()})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "t0ken")
	nc, err := s.InProcessConn(context.Background())
	require.NoError(t, err)
	nc.Close()
}

func TestServerInMemoryLeavesNothing(t *testing.T) {
	t.Parallel()
	s, err := StartServer(&ServerOptions{})
	require.NoError(t, err)
	dir := s.tempDir
	require.DirExists(t, dir)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err))
}

func TestConnWithEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{EnvBrokerURL: "nats://h:1", EnvBrokerToken: "tok", EnvBrokerCA: "/ca"}
	o := ConnOptions{URL: "nats://mine:2"}.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	assert.Equal(t, "nats://mine:2", o.URL)
	assert.Equal(t, "tok", o.Token)
	assert.Equal(t, "/ca", o.CAFile)
	_, err := Connect(context.Background(), &ConnOptions{URL: "nats://h:1", Token: "a", User: "b"})
	assert.Error(t, err)
	err = redactErr(assertErr("dial nats://user:pw@host:4222 failed"))
	assert.NotContains(t, err.Error(), "pw")
}

type assertErr string

func (e assertErr) Error() string { return string(e) }

func TestDecodeBounds(t *testing.T) {
	t.Parallel()
	var v map[string]any
	assert.ErrorIs(t, Decode([]byte(`{"a":1}`), 3, &v), ErrTooLarge)
	assert.ErrorIs(t, Decode([]byte(strings.Repeat("[", MaxJSONDepth+1)), 0, &v), ErrTooDeep)
	assert.NoError(t, Decode([]byte(`{"a":"[[[[\"]]"}`), 0, &v))
	assert.Error(t, Decode([]byte(`{"a":1} {"b":2}`), 0, &v))
	_, err := DecodeRequest([]byte(`{"jsonrpc":"1.0","id":"x","method":"m"}`), "m", true)
	assert.Error(t, err)
	_, err = DecodeRequest([]byte(`{"jsonrpc":"2.0","id":"a.b","method":"m"}`), "m", true)
	assert.Error(t, err)
	_, err = DecodeResponse([]byte(`{"jsonrpc":"2.0","id":"x"}`))
	assert.Error(t, err)
}
