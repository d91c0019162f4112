package toolpkg

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

func TestPythonPackageRunsUnchanged(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		_, ts := pyStore(t, mode, Options{})
		ctx := context.Background()
		tools, err := toolset.BuildTools(ctx, "tester", ts)
		require.NoError(t, err)
		assert.Contains(t, tools.Names(), "pyt__greet")
		res, err := tools.Execute(ctx, toolset.ToolCall{Name: "pyt__greet", Args: []byte(`{"name":"Ada"}`)})
		require.NoError(t, err)
		text, err := toolset.ResultText(res)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(text, "** hello, Ada **"), "the vendored dependency under python/ was imported: %s", text)

		res, err = tools.Execute(ctx, toolset.ToolCall{Name: "pyt__where", Args: []byte(`{}`)})
		require.NoError(t, err)
		data := resultData(t, res)
		assert.NotContains(t, data["executable"], "/opt/buildbox", "the shebang is not used")
		assert.True(t, strings.HasSuffix(data["pythonpath"].(string), "/python"), "PYTHONPATH is <package>/python: %v", data["pythonpath"])
		assert.Contains(t, data["sdk"], "/python/sam_tool_sdk/", "the SDK stand-in comes from the package")
		if mode == ModeBwrap {
			assert.Equal(t, "/toolset/pkg/python", data["pythonpath"])
		}
	})
}

func TestDocStyleManifestWarnsAndStrictModeRefuses(t *testing.T) {
	t.Parallel()
	m, err := ParseManifest([]byte(pyManifest))
	require.NoError(t, err)
	assert.Equal(t, 1, m.Version, "version defaults to 1")
	assert.Equal(t, "Python tools built with the platform's conventions", m.Description)
	ex := m.Executables[0]
	assert.Equal(t, Runtime(""), ex.Runtime, "runtime is optional")
	assert.Equal(t, "A console script in the pip layout", ex.Description)
	assert.Equal(t, "src/pytools", ex.ToolDir)
	assert.Equal(t, 3600, ex.SchemaRefreshSeconds)
	require.Len(t, m.Warnings, 1)
	assert.Equal(t, "tools.pytools.author: unknown field, ignored; known fields: runtime, executable, timeout_seconds, sandbox_profile, resource_limits, description, tool_dir, schema_refresh_seconds (line 9)", m.Warnings[0].String())

	_, err = ParseManifestStrict([]byte(pyManifest))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tools.pytools.author: unknown field")
	assert.Contains(t, err.Error(), "tools.pytools.runtime: required")
	assert.Contains(t, err.Error(), `version: required`)

	s := openStore(t, pyOptions(t, ModeDirect))
	info := upload(t, s, "pyt", pyPackage(t))
	require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	assert.Equal(t, []string{"manifest.yaml: " + m.Warnings[0].String()}, info.Warnings)
	assert.Equal(t, KindPython, info.Executables[0].Kind)
	assert.Equal(t, "python/bin/pytools", info.Executables[0].File, "looked up under python/bin/")

	opts := pyOptions(t, ModeDirect)
	opts.StrictManifest = true
	strict := openStore(t, opts)
	data := pyPackage(t)
	_, err = strict.Upload(context.Background(), "pyt", bytes.NewReader(data), int64(len(data)))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, err.Error(), "tools.pytools.author: unknown field")
}

// crossBinary builds a tiny Go program for goos/goarch.
func crossBinary(t *testing.T, goos, goarch string) []byte {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.21\n"), 0o644))
	out := filepath.Join(dir, "tiny")
	cmd := exec.Command(goTool(), "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOWORK=off", "GOFLAGS=")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	return data
}

func TestWrongArchitectureBinaryIsADiscoveryError(t *testing.T) {
	t.Parallel()
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	bin := crossBinary(t, "linux", other)
	forEachMode(t, func(t *testing.T, mode Mode) {
		s := openStore(t, Options{Sandbox: mode})
		info := upload(t, s, "cross", makeZip(t,
			zfile{name: "manifest.yaml", data: []byte("tools:\n  tiny:\n    executable: tiny\n")},
			zfile{name: "tiny", data: bin, mode: 0o755, store: true}))
		require.Equal(t, StatusFailed, info.Status)
		require.Len(t, info.Errors, 1)
		assert.Equal(t, fmt.Sprintf(`executable "tiny": tiny is an ELF binary for linux/%s (64-bit); this runtime runs linux/%s binaries: build it with GOOS=linux GOARCH=%s`,
			other, runtime.GOARCH, runtime.GOARCH), info.Errors[0])
	})
}

func TestForeignBinaryFormatsAreNamed(t *testing.T) {
	t.Parallel()
	macho := []byte{0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0x00, 0x00, 0x01, 0, 0, 0, 0}
	tests := map[string]struct {
		head []byte
		want string
	}{
		"Mach-O":      {macho, "is a Mach-O binary (macOS) for arm64; this runtime runs " + hostPlatform()},
		"PE":          {[]byte("MZ\x90\x00"), "is a PE binary (Windows); this runtime runs " + hostPlatform()},
		"FreeBSD ELF": {append([]byte("\x7fELF\x02\x01\x01\x09"), make([]byte, 12)...), "is an ELF binary for freebsd/"},
		"truncated":   {[]byte("\x7fELF\x02"), "is a truncated ELF file"},
		"data":        {[]byte("(not a program at all)"), `is neither a binary for ` + hostPlatform() + ` nor a script with a "#!" line (it starts "(not a program a"...)`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := classify(tt.head, "tool", "")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	for head, want := range map[string]ExecKind{
		"#!/opt/buildbox/bin/python3.12\n":     KindPython,
		"#!/usr/bin/env -S python3 -u\n":       KindPython,
		"#!/usr/bin/env python\n":              KindPython,
		"#!/bin/sh\necho python\n":             KindScript,
		"#!/usr/local/bin/pythonista-runner\n": KindScript,
		"import sys\n":                         "",
	} {
		got, err := classify([]byte(head), "tool", "")
		if want == "" {
			assert.Error(t, err, head)
			got, err = classify([]byte(head), "tool", RuntimePython)
			require.NoError(t, err)
			assert.Equal(t, KindPython, got, "a script without #! is Python when the manifest says so")
			continue
		}
		require.NoError(t, err, head)
		assert.Equal(t, want, got, head)
	}
}

func TestResultWrittenDuringTheGraceIsKept(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		_, ts := pyStore(t, mode, Options{KillGrace: 3 * time.Second})
		tools, err := toolset.BuildTools(context.Background(), "tester", ts)
		require.NoError(t, err)
		// Its schema gives it a timeout of 1 s.
		start := time.Now()
		res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "pyt__term", Args: []byte(`{"linger": 0.3}`)})
		require.NoError(t, err, "the result written after SIGTERM is the answer")
		assert.Equal(t, float64(15), resultData(t, res)["signal"], "SIGTERM")
		assert.Contains(t, res.(*Result).Message, "cleaned up after SIGTERM")
		elapsed := time.Since(start)
		assert.Greater(t, elapsed, time.Second)
		assert.Less(t, elapsed, 3500*time.Millisecond, "it exited in the grace; no SIGKILL wait")
	})
}

func TestToolIgnoringSIGTERMIsKilledAfterTheGrace(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		_, ts := pyStore(t, mode, Options{KillGrace: 500 * time.Millisecond})
		tools, err := toolset.BuildTools(context.Background(), "tester", ts)
		require.NoError(t, err)
		start := time.Now()
		_, err = tools.Execute(context.Background(), toolset.ToolCall{Name: "pyt__ignore_term", Args: []byte(`{}`)})
		var te *toolset.TimeoutError
		require.ErrorAs(t, err, &te)
		elapsed := time.Since(start)
		assert.Greater(t, elapsed, time.Second+400*time.Millisecond, "SIGKILL waits for the grace")
		assert.Less(t, elapsed, 3500*time.Millisecond)
	})
}

// progressRecorder collects the progress reports of calls.
type progressRecorder struct {
	mu  sync.Mutex
	got []string
}

func (r *progressRecorder) add(p toolset.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p.Message)
}

func (r *progressRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func TestStatusPipeReachesTheProgressCallback(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		_, ts := pyStore(t, mode, Options{})
		var rec progressRecorder
		ctx := toolset.WithProgress(context.Background(), rec.add)
		_, err := callTool(ctx, t, ts, "pyt__greet", `{"name":"Ada"}`)
		require.NoError(t, err)
		assert.Equal(t, []string{"step 1 of 3", "step 2 of 3", "step 3 of 3"}, rec.all())

		// Without a callback the tool writes all the same, and nobody
		// waits.
		_, err = callTool(context.Background(), t, ts, "pyt__greet", `{"name":"Ada"}`)
		require.NoError(t, err)
	})
}

func TestStatusPipeFloodedWithGarbageIsBounded(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		_, ts := pyStore(t, mode, Options{})
		var rec progressRecorder
		ctx := toolset.WithProgress(context.Background(), rec.add)
		res, err := callTool(ctx, t, ts, "pyt__greet", `{"name":"Ada","flood":"garbage"}`)
		require.NoError(t, err, "garbage on the status pipe does not fail the call")
		assert.Contains(t, res.(*Result).Message, "hello, Ada")
		assert.Equal(t, []string{"step 1 of 3", "step 2 of 3", "step 3 of 3", "after the garbage"}, rec.all(),
			"lines that are not JSON, not a string status, or longer than %d bytes are skipped", maxStatusLine)

		rec = progressRecorder{}
		start := time.Now()
		_, err = callTool(ctx, t, ts, "pyt__greet", `{"name":"Ada","flood":"lots"}`)
		require.NoError(t, err)
		got := rec.all()
		assert.LessOrEqual(t, len(got), maxStatusReports, "reports per call are capped")
		assert.Equal(t, "step 1 of 3", got[0])
		assert.Less(t, time.Since(start), 4*time.Second, "a flood does not hold the call up")
	})
}

func TestDiscoveryWithConfigShowsConfiguredTools(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		s, plain := pyStore(t, mode, Options{})
		ctx := context.Background()
		tools, err := toolset.BuildTools(ctx, "tester", plain)
		require.NoError(t, err)
		assert.Contains(t, tools.Names(), "pyt__query", "no configuration: the tool as discovered")
		instr, err := toolset.Instructions(ctx, plain)
		require.NoError(t, err)
		assert.Equal(t, "Greet people by name with pytools__greet.", instr)

		ts := s.Toolset("pyt", map[string]any{"database": "sales", "tables": "orders,items"})
		tools, err = toolset.BuildTools(ctx, "tester", ts)
		require.NoError(t, err)
		assert.NotContains(t, tools.Names(), "pyt__query")
		q, ok := tools.Lookup("pyt__query_sales")
		require.True(t, ok, "renamed by its configuration: %v", tools.Names())
		assert.Equal(t, "Query the sales database.", q.Description)
		params, err := q.ParametersJSON()
		require.NoError(t, err)
		assert.Contains(t, string(params), `"enum":["orders","items"]`)
		instr, err = toolset.Instructions(ctx, ts)
		require.NoError(t, err)
		assert.Equal(t, "Greet people by name with pytools__greet.\n\nUse query_sales for questions about sales.", instr,
			"the instructions of the schema, as configured, reach the system prompt")

		res, err := tools.Execute(ctx, toolset.ToolCall{Name: "pyt__query_sales", Args: []byte(`{"sql":"SELECT 1"}`)})
		require.NoError(t, err)
		assert.Equal(t, "ran SELECT 1 on sales", res.(*Result).Message)
	})
}

func TestErrorCodeAndPendingResults(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode Mode) {
		_, ts := pyStore(t, mode, Options{})
		ctx := context.Background()
		_, err := callTool(ctx, t, ts, "pyt__login", `{}`)
		var ae *AuthRequiredError
		require.ErrorAs(t, err, &ae, "AUTH_REQUIRED is a distinct error: %v", err)
		assert.Equal(t, "sign in to the ledger service first", ae.Message)
		msg, forModel := toolset.ErrorText(err)
		assert.True(t, forModel)
		assert.Equal(t, "authorization required: sign in to the ledger service first", msg)

		res, err := callTool(ctx, t, ts, "pyt__approve", `{}`)
		require.NoError(t, err, "pending is a result")
		r := res.(*Result)
		assert.True(t, r.Pending())
		assert.Equal(t, "status: pending\nwaiting for approval\n{\"approval\": {\"question\": \"Pay 10 EUR?\"}}", r.ModelText())
	})
}

// An interpreter outside the system directories (a virtual environment
// here, a pyenv or Homebrew one elsewhere) is shown to bwrap at its own
// path: its prefix is mounted read-only.
func TestPythonInterpreterPrefixIsMountedUnderBwrap(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to make a virtual environment from")
	}
	dir := storeDir(t)
	venv := filepath.Join(dir, "venv")
	out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--without-pip", venv).CombinedOutput()
	require.NoError(t, err, "%s", out)
	in, err := resolvePython(filepath.Join(venv, "bin", "python3"))
	require.NoError(t, err)
	assert.Equal(t, []string{venv}, in.roots, "the base interpreter is under /usr; the venv is not")

	_, ts := pyStore(t, ModeBwrap, Options{Python: filepath.Join(venv, "bin", "python3")})
	res, err := callTool(context.Background(), t, ts, "pyt__where", `{}`)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(resultData(t, res)["executable"].(string), venv+"/"), "%v", resultData(t, res)["executable"])
}

// The interpreter the store resolves through a wrapper (pyenv's shim
// here) is the real one, and one that the user tools run as cannot reach
// is refused with a message that says what to do.
func TestPythonInterpreterOutOfReachIsNamed(t *testing.T) {
	t.Parallel()
	in, err := resolvePython("python3")
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(in.exe))
	if os.Geteuid() != 0 {
		t.Skip("tools run as this user: every interpreter it has is in reach")
	}
	sb := &sandbox{mode: ModePrlimit, runAs: toolCredential()}
	if in.reachable(sb) == nil {
		t.Skipf("%s is in reach of uid %d here", in.exe, ToolUID)
	}
	if _, err := findPrlimit(); err != nil {
		t.Skip(err)
	}
	s := openStore(t, Options{Sandbox: ModePrlimit, Python: "python3"})
	info := upload(t, s, "pyt", pyPackage(t))
	require.Equal(t, StatusFailed, info.Status)
	require.Len(t, info.Errors, 1)
	assert.Contains(t, info.Errors[0], "is out of reach of uid 65534")
	assert.Contains(t, info.Errors[0], "set Options.Python or TOOLSET_PYTHON")
}

func TestPythonInterpreterThatIsNoPythonIsRefused(t *testing.T) {
	t.Parallel()
	_, err := resolvePython("/bin/false")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not run")
	_, err = resolvePython("no-such-python-anywhere")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "was not found")
}
