package toolpkg

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIPCSocketServesLLMCallThroughTheHook(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		var mu sync.Mutex
		var asked []LLMRequest
		hook := func(ctx context.Context, req LLMRequest) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req)
			return "the model says hi to " + req.UserPrompt, nil
		}
		_, ts := pyStore(t, mode, Options{LLM: hook})
		res, err := callTool(context.Background(), t, ts, "pyt__ask", `{"prompt":"Ada"}`)
		require.NoError(t, err)
		assert.Equal(t, "the model says hi to Ada", res.(*Result).Message)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, asked, 1)
		zero := 0.0
		assert.Equal(t, LLMRequest{Toolset: "pyt", Tool: "ask", SystemPrompt: "be brief", UserPrompt: "Ada", Temperature: &zero}, asked[0])
	})
}

func TestWithoutLLMHookTheToolHearsLLMCallsAreNotAvailable(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		_, ts := pyStore(t, mode, Options{})
		_, err := callTool(context.Background(), t, ts, "pyt__ask", `{"prompt":"Ada"}`)
		var tf *ToolFailure
		require.ErrorAs(t, err, &tf)
		assert.Equal(t, "LLMNotAvailable: LLM calls are not available: the runtime offers no IPC socket", tf.Message)
	})
}

// ipcClient connects to a call's socket as a tool would.
func ipcClient(t *testing.T, hook LLMFunc) (*ipcServer, string) {
	t.Helper()
	s := openStore(t, Options{Sandbox: ModeDirect, LLM: hook})
	srv, p, err := s.listenIPC(context.Background(), "ts", "tool", nil)
	require.NoError(t, err)
	t.Cleanup(srv.close)
	return srv, p
}

func rpc(t *testing.T, c net.Conn, r *bufio.Reader, line string) map[string]any {
	t.Helper()
	_, err := io.WriteString(c, line+"\n")
	require.NoError(t, err)
	resp, err := r.ReadString('\n')
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp), &m))
	return m
}

func TestIPCClientSendingJunkGetsErrorsNotAHang(t *testing.T) {
	t.Parallel()
	_, p := ipcClient(t, func(ctx context.Context, req LLMRequest) (string, error) {
		if req.UserPrompt == "fail" {
			return "", errors.New(strings.Repeat("x", 5000))
		}
		if req.UserPrompt == "panic" {
			panic("hook bug")
		}
		return "ok", nil
	})
	c, err := net.Dial("unix", p)
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		require.NotNil(t, e, "%v", m)
		return e["code"].(float64)
	}
	assert.Equal(t, -32700.0, code(rpc(t, c, r, "\x00\xffnot json")))
	assert.Equal(t, -32600.0, code(rpc(t, c, r, `{"id":1,"method":"llm/call"}`)), "no jsonrpc 2.0")
	assert.Equal(t, -32601.0, code(rpc(t, c, r, `{"jsonrpc":"2.0","id":2,"method":"shell/exec","params":{}}`)))
	assert.Equal(t, -32602.0, code(rpc(t, c, r, `{"jsonrpc":"2.0","id":3,"method":"llm/call","params":[1,2]}`)))
	m := rpc(t, c, r, `{"jsonrpc":"2.0","id":4,"method":"llm/call","params":{"user_prompt":"fail"}}`)
	assert.Equal(t, -32000.0, code(m))
	assert.LessOrEqual(t, len(m["error"].(map[string]any)["message"].(string)), maxIPCError)
	m = rpc(t, c, r, `{"jsonrpc":"2.0","id":5,"method":"llm/call","params":{"user_prompt":"panic"}}`)
	assert.Equal(t, "the runtime's LLM hook failed", m["error"].(map[string]any)["message"])
	m = rpc(t, c, r, `{"jsonrpc":"2.0","id":"six","method":"llm/call","params":{"user_prompt":"hi"}}`)
	assert.Equal(t, "six", m["id"])
	assert.Equal(t, map[string]any{"text": "ok"}, m["result"])

	// A line beyond the bound ends the connection with an error.
	_, err = io.WriteString(c, strings.Repeat("a", maxIPCLine+10)+"\n")
	if err == nil {
		resp, _ := r.ReadString('\n')
		assert.Contains(t, resp, "longer than")
	}
	_, err = r.ReadString('\n')
	assert.Error(t, err, "closed")
}

func TestIPCConnectionsAndRequestsAreCapped(t *testing.T) {
	t.Parallel()
	_, p := ipcClient(t, func(ctx context.Context, req LLMRequest) (string, error) { return "ok", nil })
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range maxIPCConns {
		c, err := net.Dial("unix", p)
		require.NoError(t, err)
		conns = append(conns, c)
		rpc(t, c, bufio.NewReader(c), `{"jsonrpc":"2.0","id":1,"method":"llm/call","params":{"user_prompt":"x"}}`)
	}
	extra, err := net.Dial("unix", p)
	require.NoError(t, err)
	defer extra.Close()
	_, err = bufio.NewReader(extra).ReadString('\n')
	assert.ErrorIs(t, err, io.EOF, "a connection beyond the cap is closed at once")

	r := bufio.NewReader(conns[0])
	var last map[string]any
	for range maxIPCRequests {
		last = rpc(t, conns[0], r, `{"jsonrpc":"2.0","id":1,"method":"llm/call","params":{"user_prompt":"x"}}`)
	}
	assert.Contains(t, last["error"].(map[string]any)["message"], "at most 100")
}

// What a tool asks the agent's model goes to the model: the secrets the
// call holds (here the deployer's OAuth token, which the tool is given)
// are hidden in its prompts as in everything else the tool returns.
func TestLLMCallPromptsDoNotLeakSecrets(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		const token = "tok-SECRET-4242-zz"
		var mu sync.Mutex
		var asked []string
		hook := func(ctx context.Context, req LLMRequest) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.SystemPrompt, req.UserPrompt)
			return "ok", nil
		}
		s, _ := pyStore(t, mode, Options{LLM: hook})
		ts := s.ToolsetWithConfig("pyt", Config{Tools: map[string]map[string]any{"ask": {"auth": map[string]any{"oauth_token": token}}}})
		_, err := callTool(context.Background(), t, ts, "pyt__ask", `{"prompt":"my token is `+token+`"}`)
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, asked, 2)
		assert.Equal(t, "my token is [secret]", asked[1])
	})
}
