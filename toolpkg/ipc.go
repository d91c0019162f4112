package toolpkg

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/gotoolset/toolset/internal/textcut"
)

// LLMRequest is a tool's llm/call over its IPC socket: a prompt for the
// agent's model.
type LLMRequest struct {
	// Toolset and Tool name the tool that asks.
	Toolset, Tool string
	SystemPrompt  string
	UserPrompt    string
	// Temperature is the tool's, or nil when it gave none.
	Temperature *float64
}

// LLMFunc answers a tool's llm/call with the model's text. ctx is the
// call's: it ends when the call does. An error reaches the tool as a
// JSON-RPC error with its message.
type LLMFunc func(ctx context.Context, req LLMRequest) (string, error)

// The bounds of a call's IPC socket.
const (
	// maxIPCLine bounds a request line.
	maxIPCLine = 1 << 20
	// maxIPCConns bounds the connections open at once.
	maxIPCConns = 4
	// maxIPCRequests bounds the requests of one call.
	maxIPCRequests = 100
	// maxIPCError bounds an error message sent back.
	maxIPCError = 1024
)

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcServerError    = -32000
)

// ipcServer serves one call's IPC socket: newline-delimited JSON-RPC 2.0,
// the method llm/call.
type ipcServer struct {
	ln     *net.UnixListener
	dir    string
	ctx    context.Context
	cancel context.CancelFunc
	hook   LLMFunc
	req    LLMRequest // Toolset and Tool set
	// sec are the call's secrets, hidden in the prompts: they go to the
	// model.
	sec     *secrets
	log     *slog.Logger
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]bool
	served  int
	refused int
}

// listenIPC makes the socket in a short directory of its own (a socket
// path has at most 107 bytes), for the user tools run as alone. sec are
// the call's secrets, hidden in what the tool asks the model.
func (s *Store) listenIPC(ctx context.Context, toolsetName, tool string, sec *secrets) (*ipcServer, string, error) {
	dir, err := os.MkdirTemp("", "tpk-ipc-")
	if err != nil {
		return nil, "", err
	}
	p := filepath.Join(dir, "ipc.sock")
	fail := func(err error) (*ipcServer, string, error) {
		os.RemoveAll(dir)
		return nil, "", err
	}
	if len(p) > 100 {
		return fail(fmt.Errorf("the IPC socket path %s is too long for a Unix socket; set TMPDIR to a shorter directory", p))
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return fail(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		return fail(err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(p, 0o600); err == nil {
		if uid, gid, ok := s.sb.owner(); ok {
			err = os.Lchown(p, uid, gid)
		}
		if err != nil {
			ln.Close()
			return fail(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	srv := &ipcServer{ln: ln, dir: dir, ctx: cctx, cancel: cancel, hook: s.opts.LLM, log: s.log,
		req: LLMRequest{Toolset: toolsetName, Tool: tool}, sec: sec, conns: map[net.Conn]bool{}}
	srv.wg.Add(1)
	go srv.accept()
	return srv, p, nil
}

// close stops serving and waits for the connections' goroutines, the
// hook's calls included (their context is canceled).
func (srv *ipcServer) close() {
	srv.cancel()
	srv.ln.Close()
	srv.mu.Lock()
	for c := range srv.conns {
		c.Close()
	}
	srv.mu.Unlock()
	srv.wg.Wait()
	os.RemoveAll(srv.dir)
	if srv.refused > 0 {
		srv.log.Debug("toolpkg: IPC requests refused", "toolset", srv.req.Toolset, "tool", srv.req.Tool, "served", srv.served, "refused", srv.refused)
	}
}

func (srv *ipcServer) accept() {
	defer srv.wg.Done()
	for {
		c, err := srv.ln.Accept()
		if err != nil {
			return
		}
		srv.mu.Lock()
		if len(srv.conns) >= maxIPCConns || srv.ctx.Err() != nil {
			srv.refused++
			srv.mu.Unlock()
			c.Close()
			continue
		}
		srv.conns[c] = true
		srv.mu.Unlock()
		srv.wg.Add(1)
		go srv.serve(c)
	}
}

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func (srv *ipcServer) serve(c net.Conn) {
	defer srv.wg.Done()
	defer func() {
		srv.mu.Lock()
		delete(srv.conns, c)
		srv.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriter(c)
	send := func(resp rpcResponse) bool {
		resp.JSONRPC = "2.0"
		if len(resp.ID) == 0 {
			resp.ID = json.RawMessage("null")
		}
		b, err := json.Marshal(resp)
		if err != nil {
			return false
		}
		_, err = w.Write(append(b, '\n'))
		if err == nil {
			err = w.Flush()
		}
		return err == nil
	}
	for {
		line, tooLong, err := readLine(r, maxIPCLine)
		if tooLong {
			send(rpcResponse{Error: &rpcError{Code: rpcInvalidRequest, Message: fmt.Sprintf("request longer than %d bytes; connection closed", maxIPCLine)}})
			return
		}
		if err != nil && len(line) == 0 {
			return
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if !send(srv.handle(line)) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// readLine reads a line of at most limit bytes, without its newline.
func readLine(r *bufio.Reader, limit int) ([]byte, bool, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) > limit+1 {
			return nil, true, nil
		}
		line = append(line, part...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), false, err
	}
}

// handle answers one request line.
func (srv *ipcServer) handle(line []byte) rpcResponse {
	var req rpcRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return rpcResponse{Error: &rpcError{Code: rpcParseError, Message: "not a JSON-RPC 2.0 request: " + cutMessage(err.Error())}}
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return rpcResponse{ID: req.ID, Error: &rpcError{Code: rpcInvalidRequest, Message: `a request needs "jsonrpc": "2.0" and a method`}}
	}
	if req.Method != "llm/call" {
		return rpcResponse{ID: req.ID, Error: &rpcError{Code: rpcMethodNotFound, Message: "unknown method " + quoteShort(req.Method) + "; this runtime serves llm/call"}}
	}
	var p struct {
		SystemPrompt string   `json:"system_prompt"`
		UserPrompt   *string  `json:"user_prompt"`
		Temperature  *float64 `json:"temperature"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.UserPrompt == nil {
		return rpcResponse{ID: req.ID, Error: &rpcError{Code: rpcInvalidParams, Message: "llm/call takes {system_prompt, user_prompt, temperature}; user_prompt is required"}}
	}
	srv.mu.Lock()
	if srv.served >= maxIPCRequests {
		srv.refused++
		srv.mu.Unlock()
		return rpcResponse{ID: req.ID, Error: &rpcError{Code: rpcServerError, Message: fmt.Sprintf("a call may make at most %d llm/call requests", maxIPCRequests)}}
	}
	srv.served++
	srv.mu.Unlock()
	lr := srv.req
	lr.SystemPrompt, lr.UserPrompt, lr.Temperature = srv.sec.text(p.SystemPrompt), srv.sec.text(*p.UserPrompt), p.Temperature
	text, err := srv.call(lr)
	if err != nil {
		return rpcResponse{ID: req.ID, Error: &rpcError{Code: rpcServerError, Message: cutMessage(err.Error())}}
	}
	return rpcResponse{ID: req.ID, Result: map[string]string{"text": text}}
}

// call runs the hook; a panic is an error.
func (srv *ipcServer) call(lr LLMRequest) (text string, err error) {
	defer func() {
		if v := recover(); v != nil {
			srv.log.Error("toolpkg: the LLM hook panicked", "toolset", lr.Toolset, "tool", lr.Tool, "panic", v)
			text, err = "", errors.New("the runtime's LLM hook failed")
		}
	}()
	return srv.hook(srv.ctx, lr)
}

func cutMessage(s string) string { return textcut.Prefix(s, maxIPCError) }
