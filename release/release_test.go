package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// consumerMain is a program of a user's module: it serves a tool over MCP
// in memory with mcptoolset, builds the tools of a turn through the
// client, prints their names and calls one.
const consumerMain = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
)

type greetArgs struct {
	Name string ` + "`json:\"name\"`" + `
}

func main() {
	greet := toolset.NewTool("greet", "Greets someone.", func(_ context.Context, in greetArgs) (string, error) {
		return "hello " + in.Name, nil
	})
	srv := mcptoolset.NewServer(toolset.NewFunction(greet))
	remote := mcptoolset.NewInMemory("demo", srv.MCP())
	defer remote.Close()
	run := toolset.NewRun("consumer")
	defer run.End()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "consumer", remote.Prefixed("demo"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for t := range tools.All() {
		fmt.Println("tool", t.Name)
	}
	res, err := tools.Execute(turn, toolset.ToolCall{ID: "c1", Name: "demo_greet", Args: json.RawMessage(` + "`" + `{"name":"world"}` + "`" + `)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("result", res.(*toolset.Content).ModelText())
}
`

// cloneRepo clones the repository this test is in (its committed HEAD)
// into a temporary directory, with no tags, and returns the clone.
func cloneRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("git is not installed: %v", err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		t.Skipf("the repository is not a git checkout: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "repo")
	mustRun(t, "", nil, "git", "clone", "-q", "--no-tags", repo, clone)
	for _, tag := range strings.Fields(mustRun(t, clone, nil, "git", "tag", "--list")) {
		mustRun(t, clone, nil, "git", "tag", "-d", tag)
	}
	mustRun(t, clone, nil, "git", "config", "user.email", "release-test@example.com")
	mustRun(t, clone, nil, "git", "config", "user.name", "release test")
	return clone
}

// mustRun runs a command in dir with env (the process's if nil) and
// returns its standard output.
func mustRun(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

// sumLines returns the go.sum lines of path for modules with the prefix.
func sumLines(t *testing.T, file, prefix string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && strings.HasPrefix(f[0], prefix) {
			lines[f[0]+" "+f[1]] = f[2]
		}
	}
	return lines
}

// TestReleaseThroughAFileProxy releases v0.1.0 in a clone of the
// repository, and uses the release from a module outside it, as a user
// would: go get of the core and mcptoolset from the release's file proxy
// (every other module from the module cache or the usual proxy), a
// program built and run, go install of the toolset command.
func TestReleaseThroughAFileProxy(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("releases every module of the repository")
	}
	clone := cloneRepo(t)
	proxy := filepath.Join(t.TempDir(), "proxy")
	var out bytes.Buffer
	mods, err := findModules(clone)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := release(&out, clone, mods, releaseOptions{Version: "v0.1.0", Proxy: proxy}); err != nil {
		t.Fatalf("release: %v\n%s", err, out.String())
	}
	t.Logf("release (%s):\n%s", time.Since(start).Round(time.Second), out.String())
	tags := mustRun(t, clone, nil, "git", "tag", "--list")
	for _, want := range []string{"v0.1.0", "mcptoolset/v0.1.0", "cmd/toolset/v0.1.0", "oteltoolset/otelmcp/v0.1.0"} {
		if !strings.Contains("\n"+tags, "\n"+want+"\n") {
			t.Errorf("no tag %s among:\n%s", want, tags)
		}
	}
	if status := mustRun(t, clone, nil, "git", "status", "--porcelain"); status != "" {
		t.Errorf("the release left changes in the tree:\n%s", status)
	}
	for _, m := range mods {
		gomod, err := os.ReadFile(filepath.Join(clone, m.Dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(gomod, []byte("\nreplace")) {
			t.Errorf("%s/go.mod of the release has a replace directive", m.Dir)
		}
	}
	released := sumLines(t, filepath.Join(clone, "cmd", "toolset", "go.sum"), "github.com/gotoolset/toolset")
	if len(released) == 0 {
		t.Fatal("cmd/toolset's go.sum has no line for its siblings")
	}

	start = time.Now()
	home := t.TempDir()
	cache, err := releaseModCache(rootPath(mods))
	if err != nil {
		t.Fatal(err)
	}
	env, err := goEnv(proxy, cache)
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, "GOBIN="+filepath.Join(home, "bin"))
	user := filepath.Join(home, "consumer")
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(user, "main.go"), []byte(consumerMain), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, user, env, "go", "mod", "init", "example.com/consumer")
	mustRun(t, user, env, "go", "get", "github.com/gotoolset/toolset@v0.1.0", "github.com/gotoolset/toolset/mcptoolset@v0.1.0",
		"github.com/gotoolset/toolset/provider/openaitools@v0.1.0")
	// A provider adapter builds from the release: it imports only the
	// core's public packages (package provider) and the frozen internal ones.
	mustRun(t, user, env, "go", "build", "github.com/gotoolset/toolset/provider/openaitools")
	mustRun(t, user, env, "go", "mod", "tidy")
	gomod, err := os.ReadFile(filepath.Join(user, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"github.com/gotoolset/toolset v0.1.0", "github.com/gotoolset/toolset/mcptoolset v0.1.0"} {
		if !bytes.Contains(gomod, []byte(want)) {
			t.Errorf("the user's go.mod does not require %s:\n%s", want, gomod)
		}
	}
	// What the user's go command hashed is what the release wrote.
	for k, h := range sumLines(t, filepath.Join(user, "go.sum"), "github.com/gotoolset/toolset") {
		if r, ok := released[k]; ok && r != h {
			t.Errorf("%s: the user's go.sum has %s, the release's %s", k, h, r)
		}
	}
	t.Logf("go get, go mod tidy: %s", time.Since(start).Round(time.Second))
	start = time.Now()
	mustRun(t, user, env, "go", "build", "-o", filepath.Join(home, "consumer.bin"), ".")
	got := mustRun(t, user, env, filepath.Join(home, "consumer.bin"))
	if !strings.Contains(got, "tool demo_greet\n") || !strings.Contains(got, "result hello world\n") {
		t.Errorf("the program printed:\n%s", got)
	}

	t.Logf("go build, run: %s", time.Since(start).Round(time.Second))
	start = time.Now()
	mustRun(t, home, env, "go", "install", "github.com/gotoolset/toolset/cmd/toolset@v0.1.0")
	help := mustRun(t, home, env, filepath.Join(home, "bin", "toolset"), "--help")
	t.Logf("go install, run: %s", time.Since(start).Round(time.Second))
	if !strings.Contains(help, "serve") {
		t.Errorf("toolset --help printed:\n%s", help)
	}
}

// A release refuses a tree with uncommitted changes, and a version that
// is already tagged.
func TestReleaseRefusesADirtyTreeAndATakenVersion(t *testing.T) {
	t.Parallel()
	clone := cloneRepo(t)
	mods, err := findModules(clone)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "stray.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = release(&out, clone, mods, releaseOptions{Version: "v0.1.0"})
	if err == nil || !strings.Contains(err.Error(), "commit or stash") {
		t.Errorf("release of a dirty tree: %v", err)
	}
	if err := os.Remove(filepath.Join(clone, "stray.txt")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, clone, nil, "git", "tag", "mcptoolset/v0.1.0")
	err = release(&out, clone, mods, releaseOptions{Version: "v0.1.0"})
	if err == nil || !strings.Contains(err.Error(), "tag mcptoolset/v0.1.0 exists") {
		t.Errorf("release of a tagged version: %v", err)
	}
	for _, v := range []string{"0.1.0", "v0.1", "v2.0.0", "v0.1.0+meta", ""} {
		if err := release(&out, clone, mods, releaseOptions{Version: v}); err == nil {
			t.Errorf("release of version %q: no error", v)
		}
	}
}
