package toolpkg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// hostileSchema is the --schema output of the hostile package: tools that
// attack the host through what they leave behind.
func hostileSchema(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/hostile/schema.json")
	require.NoError(t, err)
	return b
}

// hostileToolset uploads the tooldemo binary with the hostile schema and
// the extra manifest lines, and returns its toolset.
// Its tools time out after 30 s: they end at once, but a loaded machine
// may take seconds to start one under bwrap.
func hostileToolset(t testing.TB, s *Store, name, extra string, config map[string]any) *Toolset {
	t.Helper()
	return hostileToolsetTimeout(t, s, name, extra, config, 30)
}

// hostileToolsetTimeout is hostileToolset with the tools' timeout in seconds.
func hostileToolsetTimeout(t testing.TB, s *Store, name, extra string, config map[string]any, seconds int) *Toolset {
	t.Helper()
	man := strings.Replace(demoManifest(extra), "timeout_seconds: 2", fmt.Sprintf("timeout_seconds: %d", seconds), 1)
	info := upload(t, s, name, demoPackage(t, man, zfile{name: "schema.json", data: hostileSchema(t)}))
	require.Equal(t, StatusReady, info.Status, "discovery errors: %v", info.Errors)
	return s.Toolset(name, config)
}

// assertRefused checks that the host refused what the tool made of
// result.json; under bwrap the tool cannot even replace the file the host
// made for it.
func assertRefused(t *testing.T, mode Mode, err error, msg string) {
	t.Helper()
	if mode == ModeBwrap {
		assert.Contains(t, err.Error(), "exit code 1; stderr:")
		assert.Contains(t, err.Error(), "file exists")
		return
	}
	assert.Contains(t, err.Error(), msg)
}

func TestResultFileSymlinkIsRefused(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "host-secret")
	const marker = "HOST-SECRET-MARKER-5f1e"
	require.NoError(t, os.WriteFile(secretFile, []byte(`{"result":{"status":"success","message":"`+marker+`"}}`), 0o644))
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := hostileToolset(t, s, "h", "", nil)
		// The host file, and one of the package inside the sandbox.
		for _, target := range []string{secretFile, "/etc/passwd"} {
			res, err := callTool(context.Background(), t, ts, "h__linkresult", `{"target":"`+target+`"}`)
			require.Error(t, err, "a symbolic link is never read")
			assert.Nil(t, res)
			var ee *ExecError
			require.ErrorAs(t, err, &ee)
			assertRefused(t, mode, err, "result.json is a symbolic link")
			assert.NotContains(t, err.Error(), marker)
			assert.NotContains(t, err.Error(), "root:")
		}
	})
}

func TestResultFileFIFODoesNotHang(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := hostileToolset(t, s, "h", "", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := callTool(ctx, t, ts, "h__fiforesult", `{}`)
		assert.Less(t, time.Since(start), 2*time.Second, "the call returns at once")
		var ee *ExecError
		require.ErrorAs(t, err, &ee)
		assertRefused(t, mode, err, "result.json is a named pipe (FIFO)")
	})
}

func TestResultFileDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := hostileToolset(t, s, "h", "", nil)
		_, err := callTool(context.Background(), t, ts, "h__dirresult", `{}`)
		var ee *ExecError
		require.ErrorAs(t, err, &ee)
		assertRefused(t, mode, err, "result.json is a directory")
	})
}

func TestResultFileOversizeIsRefused(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := hostileToolset(t, s, "h", "", nil)
	_, err := callTool(context.Background(), t, ts, "h__bigresult", `{"n":16777216}`)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), "result.json is 16777235 bytes; at most 16777216 are read")
	assert.NotContains(t, err.Error(), "too big", "nothing of the file is quoted")
	assert.Less(t, len(err.Error()), 400)
}

func TestSecretsDoNotLeakInAnyForm(t *testing.T) {
	t.Parallel()
	const (
		apiKey   = `sk-"live"\key/<&>é😀` // declared secret by another tool than the one called
		password = `dflt<&>"q\pass`      // a secret default
		pin      = 73912846              // an integer secret
		note     = "harmless note"       // not secret: stays
	)
	forms := []string{"data", "message", "uescape", "stderr", "error", "garbage"}
	check := func(t *testing.T, text string) {
		t.Helper()
		for _, leak := range []string{"sk-", "live", "dflt", `q\pass`, "73912846", `"flag":true`, `"flag": true`, "\\u0073\\u006b", "\\u0073\\u006B"} {
			assert.NotContains(t, text, leak)
		}
		assert.NotContains(t, strings.ToLower(text), `\u0073\u006b`)
	}
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := hostileToolset(t, s, "h", "", map[string]any{"api_key": apiKey, "pin": pin, "flag": true, "note": note})
		for _, form := range forms {
			t.Run(form, func(t *testing.T) {
				res, err := callTool(context.Background(), t, ts, "h__leak", `{"form":"`+form+`"}`)
				var text string
				if err != nil {
					text = err.Error()
					if msg, ok := toolset.ErrorText(err); ok {
						text += "\n" + msg
					}
				} else {
					r := res.(*Result)
					text = r.ModelText() + "\n" + string(r.Data) + "\n" + r.Message
				}
				check(t, text)
				if form != "uescape" {
					assert.Contains(t, text, "[secret]", "the secrets were there, hidden")
					assert.Contains(t, text, "harmless", "the rest of the output is kept")
				}
			})
		}
	})
}

func TestSchemaExternalRefIsNotLoaded(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "schema-secret.json")
	require.NoError(t, os.WriteFile(secretFile, []byte(`{"const":"SCHEMA-SECRET-MARKER"}`), 0o644))
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for _, ref := range []string{"file://" + secretFile, "file://" + fifo, "http://127.0.0.1:1/x.json"} {
		out := []byte(`{"tools":{"t":{"description":"d","parameters":{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}}}}`)
		done := make(chan []string, 1)
		go func() {
			_, probs := parseSchemaOutput(Executable{Key: "e", TimeoutSeconds: 1}, out)
			done <- probs
		}()
		// Real time, not synctest: discovery runs a real process that reads a FIFO.
		select {
		case probs := <-done:
			require.Len(t, probs, 1, ref)
			assert.Contains(t, probs[0], "points outside the schema", ref)
			assert.Contains(t, probs[0], ref, "the error names the reference")
			assert.NotContains(t, probs[0], "SCHEMA-SECRET-MARKER")
		case <-time.After(5 * time.Second):
			// Unblock the reader so that the goroutine ends.
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			t.Fatalf("%s: discovery hung on a reference", ref)
		}
	}
}
