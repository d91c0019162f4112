package mcptoolset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxStderrTail is how many of the last bytes a subprocess server wrote to
// its stderr a [*CommandError] keeps.
const MaxStderrTail = 2 << 10

// CommandError is the cause, in a [*ServerError], of a subprocess server
// ([NewCommand]) that could not be connected to, or that went away during
// a call: the error the connection failed with, how the process ended and
// what it last wrote to stderr, which usually say why. errors.Is and
// errors.As see Err through it.
type CommandError struct {
	// Err is the error the connection failed with, such as
	// mcp.ErrConnectionClosed or io.EOF.
	Err error
	// ProcessState is how the process ended, or nil if it had not been
	// seen to end.
	ProcessState *os.ProcessState
	// Stderr is the end of what the process wrote to its stderr, as it
	// wrote it: at most MaxStderrTail bytes, cut at the start of a UTF-8
	// sequence. Error quotes it, so that it shows only printable
	// characters.
	Stderr string
	// Cut reports whether the process wrote more than Stderr holds.
	Cut bool
}

// Error implements error.
func (e *CommandError) Error() string {
	var b strings.Builder
	b.WriteString("server process")
	if e.ProcessState != nil {
		fmt.Fprintf(&b, " ended with %s", e.ProcessState)
	}
	if tail := strings.TrimRight(e.Stderr, "\r\n"); tail != "" {
		q, cut := quoteTail(tail, MaxStderrTail)
		b.WriteString(", stderr ending ")
		if cut || e.Cut {
			b.WriteString("…")
		}
		b.WriteString(q)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the error the connection failed with.
func (e *CommandError) Unwrap() error { return e.Err }

// quoteTail returns s as a Go string literal of at most n bytes, dropping
// its start if need be (escapes make bytes that are not text up to four
// times longer), and whether it dropped any.
func quoteTail(s string, n int) (string, bool) {
	cut := false
	for {
		q := strconv.Quote(s)
		if len(q) <= n || s == "" {
			return q, cut
		}
		drop := min(len(s), (len(q)-n)/4+1)
		for drop < len(s) && !utf8.RuneStart(s[drop]) {
			drop++
		}
		s, cut = s[drop:], true
	}
}

// tailWriter keeps the last MaxStderrTail bytes written to it (in a buffer
// of up to twice that) and passes everything on to w, if not nil.
type tailWriter struct {
	w io.Writer

	mu    sync.Mutex
	buf   []byte
	total int64
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.total += int64(len(p))
	kept := p[max(0, len(p)-MaxStderrTail):]
	if len(t.buf)+len(kept) > 2*MaxStderrTail {
		// Drop all but the tail now and then, not at every write, so that
		// a server writing a byte at a time costs little.
		t.buf = append(t.buf[:0], t.buf[max(0, len(t.buf)-MaxStderrTail+len(kept)):]...)
	}
	t.buf = append(t.buf, kept...)
	t.mu.Unlock()
	if t.w == nil {
		return len(p), nil
	}
	return t.w.Write(p)
}

// tail returns the bytes kept, from the start of a UTF-8 sequence, and
// whether earlier ones were dropped.
func (t *tailWriter) tail() (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf[max(0, len(t.buf)-MaxStderrTail):]
	if int64(len(b)) < t.total {
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return string(b), int64(len(b)) < t.total
}

// commandTransport runs a subprocess server through the SDK's
// CommandTransport, keeping what it needs to say why a connection failed:
// the end of the server's stderr and how the process ended.
type commandTransport struct {
	inner  *mcp.CommandTransport
	stderr *tailWriter
	// ownCopy is set when the template's Stderr was nil or a file: the
	// copying of stderr is this package's, so a server that left a child
	// holding it open cut only the copy kept for errors.
	ownCopy bool

	mu     sync.Mutex
	conn   mcp.Connection   // the connection, once started
	waited bool             // the process was waited for
	state  *os.ProcessState // how it ended, once waited for
}

func newCommandTransport(cmd *exec.Cmd) *commandTransport {
	_, isFile := cmd.Stderr.(*os.File)
	t := &commandTransport{
		stderr:  &tailWriter{w: cmd.Stderr},
		ownCopy: cmd.Stderr == nil || isFile,
	}
	cmd.Stderr = t.stderr
	t.inner = &mcp.CommandTransport{Command: cmd}
	return t
}

// Connect implements mcp.Transport.
func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &commandConn{Connection: conn, t: t}
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	return c, nil
}

// explain returns err, from a failed or lost connection, with how the
// process ended and the end of its stderr, once the process is stopped.
func (t *commandTransport) explain(err error) error {
	t.mu.Lock()
	conn := t.conn
	t.mu.Unlock()
	if conn == nil {
		return err // it did not start: err says why
	}
	_ = conn.Close() // stops the process, if the client has not
	return t.describe(err)
}

// describe returns err with how the process ended, if it was waited for,
// and the end of its stderr; err itself when there is neither.
func (t *commandTransport) describe(err error) error {
	ce := &CommandError{Err: err}
	ce.Stderr, ce.Cut = t.stderr.tail()
	t.mu.Lock()
	ce.ProcessState = t.state
	t.mu.Unlock()
	if ce.ProcessState == nil && ce.Stderr == "" {
		return err
	}
	return ce
}

// commandConn is the connection to a subprocess server; Close notes how
// the process ended.
type commandConn struct {
	mcp.Connection
	t *commandTransport
}

// Close implements mcp.Connection.
func (c *commandConn) Close() error {
	err := c.Connection.Close()
	// The SDK's Close returns the error of exec.Cmd.Wait once the process
	// was waited for; any other error means the wait may still be going on.
	var exit *exec.ExitError
	waited := err == nil || errors.As(err, &exit) || errors.Is(err, exec.ErrWaitDelay)
	c.t.mu.Lock()
	if waited && !c.t.waited {
		c.t.waited, c.t.state = true, c.t.inner.Command.ProcessState
	}
	c.t.mu.Unlock()
	if c.t.ownCopy && errors.Is(err, exec.ErrWaitDelay) {
		return nil
	}
	return err
}
