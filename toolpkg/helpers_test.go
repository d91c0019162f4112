package toolpkg

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gotoolset/toolset"
)

func TestMain(m *testing.M) {
	code := func() int {
		defer cleanupBuilt()
		return m.Run()
	}()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	builtDir  string
	builtBin  []byte
	buildErr  error
)

// toolBinary builds testdata/tooldemo once (a static binary, as a package
// would carry) and returns its bytes.
func toolBinary(t testing.TB) []byte {
	t.Helper()
	buildOnce.Do(func() {
		builtDir, buildErr = os.MkdirTemp("", "toolpkg-test-bin-")
		if buildErr != nil {
			return
		}
		out := filepath.Join(builtDir, "tooldemo")
		cmd := exec.Command(goTool(), "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./testdata/tooldemo")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, b)
			return
		}
		builtBin, buildErr = os.ReadFile(out)
	})
	require.NoError(t, buildErr)
	return builtBin
}

func cleanupBuilt() {
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
}

// goTool returns the go command: the one on PATH, or the one go test
// itself runs from.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// zfile is one entry of a zip made by a test.
type zfile struct {
	name    string
	data    []byte
	mode    fs.FileMode // 0 means 0644
	symlink string      // link target; makes the entry a symlink
	dir     bool
	store   bool // stored, not compressed: cheap to read under the race detector
}

// makeZip writes the entries into a zip.
func makeZip(t testing.TB, files ...zfile) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate}
		if f.store {
			h.Method = zip.Store
		}
		mode := f.mode
		switch {
		case f.symlink != "":
			mode = fs.ModeSymlink | 0o777
			f.data = []byte(f.symlink)
		case f.dir:
			mode = fs.ModeDir | 0o755
			h.Method = zip.Store
		case mode == 0:
			mode = 0o644
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write(f.data)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// demoManifest is a manifest for the tooldemo binary at "tooldemo".
func demoManifest(extra string) string {
	return "version: 1\ntools:\n  demo:\n    runtime: go\n    executable: ./tooldemo\n    timeout_seconds: 2\n" + extra
}

// demoPackage is a zip with the tooldemo binary, its manifest and extra
// files.
func demoPackage(t testing.TB, manifest string, extra ...zfile) []byte {
	t.Helper()
	files := []zfile{
		{name: "manifest.yaml", data: []byte(manifest)},
		{name: "tooldemo", data: toolBinary(t), mode: 0o755, store: true},
	}
	return makeZip(t, append(files, extra...)...)
}

// available lists the sandbox modes that work on this machine.
func available(t testing.TB) []Mode {
	modes := []Mode{ModeDirect}
	if _, err := findPrlimit(); err == nil {
		modes = append(modes, ModePrlimit)
	}
	if _, err := bwrapSandbox(); err == nil {
		modes = append(modes, ModeBwrap)
	} else {
		t.Logf("bwrap mode not tested: %v", err)
	}
	return modes
}

// The skip messages of tests that need a program a machine may lack: one
// text each, the same in every module, so that a summary of the run
// (internal/testsummary) counts them under one line.
const (
	skipBwrap  = "bubblewrap cannot run here (apt-get install bubblewrap)"
	skipPython = "python3 not installed (apt-get install python3)"
)

// requireBwrap skips the test, saying why, when bubblewrap cannot run here.
func requireBwrap(t testing.TB) {
	t.Helper()
	if _, err := bwrapSandbox(); err != nil {
		t.Logf("bubblewrap: %v", err)
		t.Skip(skipBwrap)
	}
}

// openStore opens a store in a temporary directory, closed at the end of
// the test.
func openStore(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.DiscoveryTimeout == 0 {
		opts.DiscoveryTimeout = 10 * time.Second
	}
	s, err := Open(storeDir(t), &opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// storeDir returns a temporary directory for a store that the user tools
// run as can reach (the testing package makes the one above it private).
func storeDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	return dir
}

func upload(t testing.TB, s *Store, name string, zipData []byte) Info {
	t.Helper()
	info, err := s.Upload(context.Background(), name, bytes.NewReader(zipData), int64(len(zipData)))
	require.NoError(t, err)
	return info
}

// readyToolset uploads the demo package and returns its toolset.
func readyToolset(t testing.TB, s *Store, name string, config map[string]any) *Toolset {
	t.Helper()
	info := upload(t, s, name, demoPackage(t, demoManifest("")))
	require.Equal(t, StatusReady, info.Status, "discovery errors: %v", info.Errors)
	return s.Toolset(name, config)
}

// callTool builds the toolset's tools and calls one.
func callTool(ctx context.Context, t testing.TB, ts toolset.Toolset, name, args string) (any, error) {
	t.Helper()
	tools, err := toolset.BuildTools(ctx, "tester", ts)
	require.NoError(t, err)
	return tools.Execute(ctx, toolset.ToolCall{Name: name, Args: json.RawMessage(args)})
}

// processWithArg reports whether a process whose command line contains arg
// is running.
func processWithArg(arg string) bool {
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), arg) && !strings.Contains(string(b), "go test") {
			// Skip zombies: they hold no resources and are reaped by init.
			st, _ := os.ReadFile(filepath.Join("/proc", de.Name(), "stat"))
			if fields := strings.Fields(string(st)); len(fields) > 2 && fields[2] == "Z" {
				continue
			}
			return true
		}
	}
	return false
}

// resultData decodes a call result's data.
func resultData(t testing.TB, res any) map[string]any {
	t.Helper()
	if c, ok := res.(*toolset.Content); ok {
		res = c.Structured // a result with artifacts
	}
	r, ok := res.(*Result)
	require.True(t, ok, "result is %T", res)
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Data, &m))
	return m
}
