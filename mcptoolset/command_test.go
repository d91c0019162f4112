package mcptoolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A subprocess server that exits before it answers gives an error that
// says how it ended and what it last wrote to stderr, not only that the
// connection closed; its stderr still reaches the command's Stderr.
func TestCommandServerExitingAtStartReportsExitStatusAndStderr(t *testing.T) {
	checkLeaks(t)
	bin := testServer(t)
	const line = "testserver: fatal: no API key in $FILES_TOKEN"
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer file.Close()
	var buf bytes.Buffer
	for name, stderr := range map[string]io.Writer{"nil": nil, "buffer": &buf, "file": file} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, "-exit-at-start", "3")
			cmd.Stderr = stderr
			ts := mcptoolset.NewCommand(cmd, mcptoolset.WithName("files"), mcptoolset.WithRetryDelay(0))
			_, err := ts.GetTools(context.Background())
			var se *mcptoolset.ServerError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "connect", se.Op)
			assert.Contains(t, err.Error(), "exit status 3")
			assert.Contains(t, err.Error(), line)
			var ce *mcptoolset.CommandError
			require.ErrorAs(t, err, &ce)
			require.NotNil(t, ce.ProcessState)
			assert.Equal(t, 3, ce.ProcessState.ExitCode())
			assert.Equal(t, line+"\n", ce.Stderr)
			assert.ErrorIs(t, err, mcp.ErrConnectionClosed, "the cause is still found")
			require.NoError(t, ts.Close())
		})
	}
	assert.Equal(t, line+"\n", buf.String(), "the output is copied to Stderr too")
	written, err := os.ReadFile(file.Name())
	require.NoError(t, err)
	assert.Equal(t, line+"\n", string(written))
}

// A subprocess server that floods stderr with terminal escapes and bytes
// that are not text before it exits cannot make the error big or put
// those bytes in it: the error keeps the last 2 KiB, made printable.
func TestCommandServerStderrInErrorIsBoundedAndPrintable(t *testing.T) {
	checkLeaks(t)
	bin := testServer(t)
	ts := mcptoolset.NewCommand(exec.Command(bin, "-exit-at-start", "1", "-noise", "100000"), mcptoolset.WithName("files"))
	defer ts.Close()
	_, err := ts.GetTools(context.Background())
	var ce *mcptoolset.CommandError
	require.ErrorAs(t, err, &ce)
	assert.LessOrEqual(t, len(ce.Stderr), mcptoolset.MaxStderrTail)
	assert.True(t, strings.HasSuffix(ce.Stderr, "testserver: fatal: no API key in $FILES_TOKEN\n"))
	msg := err.Error()
	assert.Less(t, len(msg), mcptoolset.MaxStderrTail+256, "escaping does not make it longer")
	assert.Contains(t, msg, "exit status 1")
	assert.Contains(t, msg, "testserver: fatal: no API key in $FILES_TOKEN")
	for _, r := range msg {
		assert.True(t, unicode.IsPrint(r), "the error holds only printable characters, not %q", r)
		if !unicode.IsPrint(r) {
			break
		}
	}
}

// A subprocess server that crashes in the middle of a request fails it
// with an error that says how the process ended and what it last wrote to
// stderr, and the warning that the session ended says so too.
func TestCommandServerCrashingInARequestReportsExitStatusAndStderr(t *testing.T) {
	checkLeaks(t)
	const line = "testserver: panic: out of file handles"
	for _, method := range []string{"tools/call", "tools/list"} {
		t.Run(method, func(t *testing.T) {
			logger, logs := logBuffer()
			ts := mcptoolset.NewCommand(exec.Command(testServer(t), "-crash-on", method, "-crash-code", "70"),
				mcptoolset.WithName("files"), mcptoolset.WithLogger(logger))
			defer ts.Close()
			tools, err := toolset.BuildTools(context.Background(), "a", ts)
			if method == "tools/call" {
				require.NoError(t, err)
				_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)})
			}
			var se *mcptoolset.ServerError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, err.Error(), "exit status 70")
			assert.Contains(t, err.Error(), line)
			var ce *mcptoolset.CommandError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, 70, ce.ProcessState.ExitCode())
			assert.Equal(t, line+"\n", ce.Stderr)
			if method == "tools/list" {
				// Real time, not synctest: the server is a real subprocess.
				require.Eventually(t, func() bool { return strings.Contains(logs.String(), "closed the connection") }, 5*time.Second, 5*time.Millisecond)
				assert.Contains(t, logs.String(), line)
			}
		})
	}
}
