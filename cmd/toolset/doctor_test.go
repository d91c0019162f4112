package main

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/gotoolset/toolset/toolpkg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolset doctor reports each part, and for a missing one its fix; it
// fails only for bad usage, and --python applies to its command alone.
func TestDoctorSaysWhatIsMissingAndTheFix(t *testing.T) {
	t.Setenv(toolpkg.PythonEnv, "/usr/bin/python3")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	ln.Close()

	code, stdout, stderr := runCLI("doctor", "--python", "/no/such/python", "--redis", closed)
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(stdout, "\n")
	find := func(prefix string) string {
		t.Helper()
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return strings.Join(lines[i:min(i+2, len(lines))], "\n")
			}
		}
		t.Fatalf("no line %q in:\n%s", prefix, stdout)
		return ""
	}
	py := find("MISS python")
	assert.Contains(t, py, "$TOOLSET_PYTHON")
	assert.Contains(t, py, "/no/such/python")
	assert.Contains(t, py, "fix: apt-get install python3, or --python PATH")
	redis := find("MISS redis at")
	assert.Contains(t, redis, closed)
	assert.Contains(t, redis, "fix:")
	assert.Contains(t, find("ok   broker"), "embeds a NATS server")
	assert.Regexp(t, `(?m)^(ok  |MISS) sandbox +(bwrap|prlimit|direct)`, stdout)
	assert.Contains(t, stdout, "missing: what needs them is skipped or refused")
	assert.Equal(t, "/usr/bin/python3", os.Getenv(toolpkg.PythonEnv), "--python does not outlive its command")

	code, _, stderr = runCLI("doctor", "--sandbox", "nonsense")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "nonsense")
	code, _, stderr = runCLI("doctor", "--python", "")
	assert.Equal(t, exitUsage, code, stderr)
}

// With a Redis server and a Python that work, doctor says so.
func TestDoctorReachesARedisServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		if n, _ := c.Read(buf); strings.HasPrefix(string(buf[:n]), "PING") {
			c.Write([]byte("+PONG\r\n"))
		}
	}()
	code, stdout, stderr := runCLI("doctor", "--redis", ln.Addr().String())
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "ok   redis at   "+ln.Addr().String()+": answers PING")
}
