package toolpkg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// forEachMode runs fn once per sandbox mode that works here, the modes
// side by side: each has a store of its own, and most of their time is
// spent waiting on the processes they run. A test calls it last and
// defers nothing: the modes run once the test's own function returned.
func forEachMode(t *testing.T, fn func(t *testing.T, mode Mode)) {
	for _, mode := range available(t) {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			fn(t, mode)
		})
	}
}

func TestCallSucceeds(t *testing.T) {
	t.Setenv("TOOLPKG_HOST_SECRET", "do-not-leak")
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := readyToolset(t, s, "demo", map[string]any{"greeting": "hi", "verbose": true})
		run := toolset.NewRun("run-7-"+string(mode), toolset.WithValues(map[string]any{"user_id": "u1", "session_id": "s1", "app_name": "ops"}))
		defer run.End()
		ctx := run.Turn(context.Background())

		tools, err := toolset.BuildTools(ctx, "ops", ts)
		require.NoError(t, err)
		assert.Equal(t, []string{"demo__echo", "demo__fail", "demo__crash", "demo__hang", "demo__spin", "demo__big",
			"demo__slow", "demo__connect", "demo__garbage", "demo__noresult", "demo__fs"}, tools.Names(), "declaration order of --schema")
		echo, ok := tools.Lookup("demo__echo")
		require.True(t, ok)
		assert.Equal(t, "Echo the text back, with the tool's configuration.", echo.Description)
		params, err := echo.ParametersJSON()
		require.NoError(t, err)
		assert.JSONEq(t, `{"type":"object","properties":{"text":{"type":"string","description":"What to echo"}},"required":["text"]}`, string(params))
		assert.Equal(t, "demo", echo.Metadata["toolpkg.toolset"])

		res, err := tools.Execute(ctx, toolset.ToolCall{Name: "demo__echo", Args: []byte(`{"text":"world"}`)})
		require.NoError(t, err)
		text, err := toolset.ResultText(res)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(text, "hi, world\n{"), text)
		data := resultData(t, res)
		assert.Equal(t, map[string]any{"greeting": "hi", "retries": float64(2), "verbose": true}, data["config"], "defaults applied, unset optional keys left out")
		assert.Equal(t, []any{"app_name", "args", "artifact_metadata", "artifact_paths", "ipc_socket", "output_dir", "result_file",
			"session_id", "status_pipe", "task_id", "tool_auth_headers", "tool_config", "tool_name", "tool_oauth_token", "user_id", "volume_mounts"}, data["keys"])
		for _, kv := range data["env"].([]any) {
			assert.NotContains(t, kv, "TOOLPKG_HOST_SECRET", "the environment is cleared")
		}
		if mode == ModeBwrap {
			assert.Equal(t, "/toolset/work/result.json", data["result_file"])
			assert.Equal(t, "/toolset/work/output", data["output_dir"])
		}

		// Bad arguments are refused before a process starts.
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "demo__echo", Args: []byte(`{"txt":"world"}`)})
		msg, forModel := toolset.ErrorText(err)
		require.True(t, forModel)
		assert.Contains(t, msg, `"text": required field is missing`)

		entries, err := os.ReadDir(filepath.Join(s.Dir(), ".calls"))
		require.NoError(t, err)
		assert.Empty(t, entries, "work directories are removed after each call")
	})
}

func TestCallFailures(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := readyToolset(t, s, "demo", map[string]any{"api_key": "sk-live-123456"})
		ctx := context.Background()

		t.Run("error in result.json reaches the model", func(t *testing.T) {
			_, err := callTool(ctx, t, ts, "demo__fail", `{"reason":"no quota"}`)
			var tf *ToolFailure
			require.ErrorAs(t, err, &tf)
			msg, forModel := toolset.ErrorText(err)
			assert.True(t, forModel)
			assert.Equal(t, "cannot do that: no quota", msg)
		})
		// Each of these stops the run with an *ExecError the model never
		// sees, and never shows a secret.
		for _, tc := range []struct {
			name, tool string
			want       []string // in the error
		}{
			{"exit 1 stops the run with stderr, secrets hidden", "crash",
				[]string{`tool "crash": exit code 1; stderr:`, "crash: the key [secret] was rejected"}},
			{"malformed result.json", "garbage",
				[]string{`result.json is not valid JSON`, `"not json{"`}},
			{"missing result.json", "noresult",
				[]string{`exited 0 without writing result.json; stderr was empty`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := callTool(ctx, t, ts, "demo__"+tc.tool, `{}`)
				var ee *ExecError
				require.ErrorAs(t, err, &ee)
				assert.Equal(t, tc.tool, ee.Tool)
				_, forModel := toolset.ErrorText(err)
				assert.False(t, forModel)
				for _, w := range tc.want {
					assert.Contains(t, err.Error(), w)
				}
				assert.NotContains(t, err.Error(), "sk-live-123456")
			})
		}
	})
}

var markerSeq atomic.Int64

// uniqueMarker returns a sleep duration that no other process uses, to
// find the tool's grandchild by its command line.
func uniqueMarker() string {
	return fmt.Sprintf("%d.%06d%d", 300+markerSeq.Add(1), os.Getpid()%1000000, time.Now().UnixNano()%1000)
}

func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		upload(t, s, "demo", demoPackage(t, strings.Replace(demoManifest(""), "timeout_seconds: 2", "timeout_seconds: 1", 1)))
		ts := s.Toolset("demo", nil)
		marker := uniqueMarker()
		start := time.Now()
		_, err := callTool(context.Background(), t, ts, "demo__hang", fmt.Sprintf(`{"marker":%q}`, marker))
		elapsed := time.Since(start)
		var te *toolset.TimeoutError
		require.ErrorAs(t, err, &te)
		msg, forModel := toolset.ErrorText(err)
		assert.True(t, forModel)
		assert.Equal(t, `tool "demo__hang" timed out after 1s; try again with a smaller request, or another approach`, msg)
		assert.Equal(t, "demo__hang", te.Tool)
		assert.Equal(t, time.Second, te.After)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, elapsed, 3*time.Second)
		assert.Eventually(t, func() bool { return !processWithArg(marker) }, 2*time.Second, 20*time.Millisecond,
			"the grandchild (sleep %s) is gone", marker)
	})
}

func TestCancelKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := readyToolset(t, s, "demo", nil)
		marker := uniqueMarker()
		ctx, cancel := context.WithCancel(context.Background())
		tools, err := toolset.BuildTools(ctx, "a", ts)
		require.NoError(t, err)
		// Real time, not synctest: the tool is a real process, polled in /proc.
		go func() {
			// Cancel once the grandchild runs (or after 2 s, failing below).
			deadline := time.Now().Add(2 * time.Second)
			for !processWithArg(marker) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		_, err = tools.Execute(ctx, toolset.ToolCall{Name: "demo__hang", Args: []byte(fmt.Sprintf(`{"marker":%q}`, marker))})
		require.ErrorIs(t, err, context.Canceled)
		assert.Contains(t, err.Error(), "call canceled, process killed")
		assert.Eventually(t, func() bool { return !processWithArg(marker) }, 2*time.Second, 20*time.Millisecond)
	})
}

func TestCPULimitStopsASpinningTool(t *testing.T) {
	t.Parallel()
	for _, mode := range available(t) {
		if mode == ModeDirect {
			continue
		}
		t.Run(string(mode), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: mode})
			man := strings.Replace(demoManifest("    resource_limits:\n      max_cpu_seconds: 1\n"), "timeout_seconds: 2", "timeout_seconds: 20", 1)
			upload(t, s, "demo", demoPackage(t, man))
			start := time.Now()
			_, err := callTool(context.Background(), t, s.Toolset("demo", nil), "demo__spin", `{}`)
			var ee *ExecError
			require.ErrorAs(t, err, &ee)
			assert.Contains(t, ee.Reason, "CPU time limit of 1s")
			assert.Less(t, time.Since(start), 10*time.Second, "stopped by the CPU limit, not the timeout")
		})
	}
}

func TestNetworkByProfile(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	defer wg.Wait()
	defer ln.Close()

	s := openStore(t, Options{Sandbox: ModeBwrap})
	args := fmt.Sprintf(`{"addr":%q}`, ln.Addr().String())
	for _, tc := range []struct {
		profile   Profile
		connected bool
	}{{Restrictive, false}, {Standard, true}, {Permissive, true}} {
		t.Run(string(tc.profile), func(t *testing.T) {
			name := "net-" + string(tc.profile)
			upload(t, s, name, demoPackage(t, demoManifest("    sandbox_profile: "+string(tc.profile)+"\n")))
			res, err := callTool(context.Background(), t, s.Toolset(name, nil), name+"__connect", args)
			require.NoError(t, err)
			data := resultData(t, res)
			assert.Equal(t, tc.connected, data["connected"], "connect to %s from the %s profile: %v", ln.Addr(), tc.profile, data["error"])
		})
	}
}

func TestBwrapFileSystem(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	hostDir := t.TempDir()
	hostFile := filepath.Join(hostDir, "host-secret.txt")
	require.NoError(t, os.WriteFile(hostFile, []byte("x"), 0o644))
	s := openStore(t, Options{Sandbox: ModeBwrap})
	ts := readyToolset(t, s, "demo", nil)
	res, err := callTool(context.Background(), t, ts, "demo__fs",
		fmt.Sprintf(`{"read":[%q,"/toolset/pkg/tooldemo"],"write":["/toolset/pkg/new","/toolset/work/output/out.txt","/tmp/scratch","/usr/evil"]}`, hostFile))
	require.NoError(t, err)
	data := resultData(t, res)
	assert.Contains(t, data["read "+hostFile], "no such file or directory", "the host's files are not visible")
	assert.Equal(t, "ok", data["read /toolset/pkg/tooldemo"], "the package is readable")
	assert.Contains(t, data["write /toolset/pkg/new"], "read-only file system", "the package is read-only")
	assert.Contains(t, data["write /usr/evil"], "read-only file system", "system directories are read-only")
	assert.Equal(t, "ok", data["write /toolset/work/output/out.txt"], "the work directory is writable")
	assert.Equal(t, "ok", data["write /tmp/scratch"], "/tmp is private and writable")
	assert.NoFileExists(t, "/tmp/scratch")
}

func TestOutputCap(t *testing.T) {
	t.Parallel()
	// Nothing is saved as an artifact here: MaxOutputBytes alone cuts.
	s := openStore(t, Options{Sandbox: ModeDirect, MaxOutputBytes: 1000, Artifacts: &ArtifactOptions{SaveThresholdBytes: 1 << 20}})
	ts := readyToolset(t, s, "demo", nil)
	res, err := callTool(context.Background(), t, ts, "demo__big", `{"n":5000}`)
	require.NoError(t, err)
	r := res.(*Result)
	assert.True(t, r.Truncated())
	text := r.ModelText()
	assert.True(t, strings.HasPrefix(text, "big\n\"xxxx"))
	assert.True(t, strings.HasSuffix(text, "\n[output cut: 1000 of 5006 bytes shown]"), text[len(text)-60:])
	assert.Len(t, strings.TrimSuffix(text, "\n[output cut: 1000 of 5006 bytes shown]"), 1000)
	assert.Len(t, r.Data, 5002, "the program still gets the whole data")

	res, err = callTool(context.Background(), t, ts, "demo__big", `{"n":100}`)
	require.NoError(t, err)
	assert.False(t, res.(*Result).Truncated())
	assert.Equal(t, "big\n\""+strings.Repeat("x", 100)+"\"", res.(*Result).ModelText())
}

// By default, as the platform does, output above 4,096 bytes is saved as
// an artifact and the model is sent its first 8,192 bytes.
func TestOutputCapDefault(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	ts := readyToolset(t, s, "demo", nil)
	res, err := callTool(context.Background(), t, ts, "demo__big", `{"n":200000}`)
	require.NoError(t, err)
	c := res.(*toolset.Content)
	text := c.ModelText()
	assert.Contains(t, text, "[output cut: 8192 of 200006 bytes shown]")
	assert.Contains(t, text, "[the whole output was saved as artifact big_output.txt version 1]")
	r := c.Structured.(*Result)
	require.Len(t, r.Artifacts, 1)
	assert.Equal(t, ArtifactRef{Name: "big_output.txt", Version: 1, Size: 200006, MIMEType: "text/plain", Description: "the whole output of demo__big"}, r.Artifacts[0])
	_, rc, err := s.artifacts.Store.Load(context.Background(), ArtifactScope{}, "big_output.txt", 0)
	require.NoError(t, err)
	data, _ := io.ReadAll(rc)
	rc.Close()
	assert.Len(t, data, 200006)

	// Below the threshold, a result is as it was: a *Result.
	res, err = callTool(context.Background(), t, ts, "demo__big", `{"n":4000}`)
	require.NoError(t, err)
	assert.False(t, res.(*Result).Truncated())
}

func TestReuploadWhileACallRuns(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{Sandbox: ModeDirect})
	pkg := func(version string) []byte {
		return demoPackage(t, demoManifest(""), zfile{name: "version.txt", data: []byte(version)})
	}
	upload(t, s, "demo", pkg("one"))
	ts := s.Toolset("demo", nil) // the agent's toolset: never changes
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "a", ts)
	require.NoError(t, err)

	type out struct {
		res any
		err error
	}
	done := make(chan out)
	release := filepath.Join(t.TempDir(), "release")
	go func() {
		res, err := tools.Execute(ctx, toolset.ToolCall{Name: "demo__slow", Args: []byte(fmt.Sprintf(`{"ms":20000,"until":%q}`, release))})
		done <- out{res, err}
	}()
	require.Eventually(t, func() bool {
		des, _ := os.ReadDir(filepath.Join(s.Dir(), ".calls"))
		return len(des) == 1
	}, 2*time.Second, 10*time.Millisecond, "the call started")

	info := upload(t, s, "demo", pkg("two"))
	require.Equal(t, StatusReady, info.Status)
	assert.Equal(t, 2, info.Version)
	assert.DirExists(t, filepath.Join(s.Dir(), "demo", "v1"), "the old version stays while a call uses it")
	require.NoError(t, os.WriteFile(release, nil, 0o644))

	o := <-done
	require.NoError(t, o.err)
	assert.Equal(t, "one", o.res.(*Result).Message, "the running call finished on the old version")
	assert.NoDirExists(t, filepath.Join(s.Dir(), "demo", "v1"), "the old version is deleted after its last call")

	res, err := callTool(ctx, t, ts, "demo__slow", `{"ms":0}`)
	require.NoError(t, err)
	assert.Equal(t, "two", res.(*Result).Message, "the next turn uses the new version")

	// A call from the old turn's tool list after its version is gone.
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "demo__slow", Args: []byte(`{"ms":0}`)})
	var stale *StaleToolError
	require.ErrorAs(t, err, &stale)
	_, forModel := toolset.ErrorText(err)
	assert.True(t, forModel)
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		ts := readyToolset(t, s, "demo", nil)
		ctx := context.Background()
		tools, err := toolset.BuildTools(ctx, "a", ts)
		require.NoError(t, err)
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		texts := make([]any, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := tools.Execute(ctx, toolset.ToolCall{Name: "demo__echo", Args: []byte(fmt.Sprintf(`{"text":"call-%d"}`, i))})
				errs[i] = err
				if err == nil {
					texts[i] = resultData(t, res)["text"]
				}
			}()
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			assert.Equal(t, fmt.Sprintf("call-%d", i), texts[i])
		}
	})
}

func TestCloseWaitsForCalls(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), &Options{Sandbox: ModeDirect})
	require.NoError(t, err)
	ts := readyToolset(t, s, "demo", nil)
	tools, err := toolset.BuildTools(context.Background(), "a", ts)
	require.NoError(t, err)
	done := make(chan error)
	go func() {
		_, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "demo__slow", Args: []byte(`{"ms":300}`)})
		done <- err
	}()
	require.Eventually(t, func() bool {
		des, _ := os.ReadDir(filepath.Join(s.Dir(), ".calls"))
		return len(des) == 1
	}, 2*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Close())
	des, err := os.ReadDir(filepath.Join(s.Dir(), ".calls"))
	require.NoError(t, err)
	assert.Empty(t, des, "Close returned after the call had cleaned up")
	// Real time, not synctest: the call runs a real process.
	select {
	case err := <-done:
		require.NoError(t, err, "the call finished normally")
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not return")
	}
	require.NoError(t, s.Close(), "closing twice is safe")
	pkg := demoPackage(t, demoManifest(""))
	_, err = s.Upload(context.Background(), "x", bytes.NewReader(pkg), int64(len(pkg)))
	assert.ErrorIs(t, err, ErrClosed)
	_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "demo__slow", Args: []byte(`{"ms":0}`)})
	assert.True(t, errors.As(err, new(*StaleToolError)))
}
