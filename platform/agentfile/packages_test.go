package agentfile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// remotePackages are toolsets whose tools run elsewhere: a record by
// name, and a toolset made of the record's tools that echoes the
// configuration it was made with.
type remotePackages struct {
	infos map[string]toolpkg.Info

	mu   sync.Mutex
	made []toolpkg.Config
}

func (p *remotePackages) Info(name string) (toolpkg.Info, error) {
	info, ok := p.infos[name]
	if !ok {
		return toolpkg.Info{}, fmt.Errorf("%w: %q", toolpkg.ErrNotFound, name)
	}
	return info, nil
}

func (p *remotePackages) ToolsetWithConfig(name string, cfg toolpkg.Config) toolset.Toolset {
	p.mu.Lock()
	p.made = append(p.made, cfg)
	p.mu.Unlock()
	var tools []toolset.Tool
	for _, t := range p.infos[name].Tools {
		if contains(cfg.Exclude, t.Name) {
			continue
		}
		tools = append(tools, toolset.NewRawTool(name+"__"+t.Name, t.Description, nil, func(context.Context, json.RawMessage) (any, error) {
			return fmt.Sprintf("remote %s with %v", t.Name, cfg.Toolset["greeting"]), nil
		}))
	}
	return toolset.NewFunction(tools...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func remoteInfos() map[string]toolpkg.Info {
	tool := func(name string) toolpkg.ToolInfo {
		return toolpkg.ToolInfo{Name: name, Description: "the " + name + " tool",
			Config: []toolpkg.ConfigField{{Key: "greeting", Type: "string"}, {Key: "retries", Type: "integer"}}}
	}
	return map[string]toolpkg.Info{
		"finance": {Name: "finance", Status: toolpkg.StatusReady, Version: 3, Serving: 3, Tools: []toolpkg.ToolInfo{tool("echo"), tool("quote")}},
		"pending": {Name: "pending", Status: toolpkg.StatusPending, Version: 1},
		"broken":  {Name: "broken", Status: toolpkg.StatusFailed, Version: 2, Errors: []string{"runtime r1: no python here"}},
	}
}

// Without a store, Check and Resolve take packages from Packages, as
// they would from a store.
func TestPackagesStandInForAStore(t *testing.T) {
	p := &remotePackages{infos: remoteInfos()}
	f, err := agentfile.Parse([]byte(`name: a
toolsets:
  - package: nope
  - package: pending
  - package: broken
  - package: finance
    config: {greeting: hi, colour: blue}
    tools:
      echo: {retries: many}
`), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := lines(t, agentfile.Check(context.Background(), f, &agentfile.Options{Packages: p}))
	want := []string{
		`3:14: unknown package "nope": the store has no toolset of that name`,
		`4:14: package "pending" is not ready (status pending)`,
		`5:14: package "broken" is not ready (status failed); an agent is deployed only with ready toolsets; its discovery failed: "runtime r1: no python here"`,
		`7:28: package "finance": no tool takes the configuration key "colour"`,
		`9:14: package "finance": tool "echo": "retries" must be an integer`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}

	a := resolve(t, "name: a\ntoolsets:\n  - package: finance\n    config: {greeting: hi}\n    exclude: [quote]\n    prefix: fin\n", &agentfile.Options{Packages: p})
	tools, err := toolset.BuildTools(context.Background(), a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if names := tools.Names(); len(names) != 1 || names[0] != "fin_finance__echo" {
		t.Fatalf("tools %v", names)
	}
	res, err := tools.Execute(context.Background(), toolset.ToolCall{ID: "c1", Name: "fin_finance__echo", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := toolset.ResultText(res); text != "remote echo with hi" {
		t.Errorf("result %q", text)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.made) != 1 || p.made[0].Toolset["greeting"] != "hi" || !contains(p.made[0].Exclude, "quote") {
		t.Errorf("made with %+v", p.made)
	}
}

// A store, when given, wins over Packages.
func TestStoreWinsOverPackages(t *testing.T) {
	s := openStore(t)
	p := &remotePackages{infos: remoteInfos()}
	f, err := agentfile.Parse([]byte("name: a\ntoolsets:\n  - package: finance\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := lines(t, agentfile.Check(context.Background(), f, &agentfile.Options{Store: s, Packages: p}))
	if len(got) != 1 || !strings.Contains(got[0], `unknown package "finance"`) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
}

// hostilePackages misbehave as a program's Packages might.
type hostilePackages struct {
	info func(name string) (toolpkg.Info, error)
	ts   func(name string) toolset.Toolset
}

func (h hostilePackages) Info(name string) (toolpkg.Info, error) { return h.info(name) }
func (h hostilePackages) ToolsetWithConfig(name string, _ toolpkg.Config) toolset.Toolset {
	return h.ts(name)
}

// Packages that panic, lie or fail make problems, never a panic.
func TestHostilePackagesMakeProblems(t *testing.T) {
	ready := func(name string) (toolpkg.Info, error) {
		return toolpkg.Info{Name: name, Status: toolpkg.StatusReady, Version: 1, Serving: 1, Tools: []toolpkg.ToolInfo{{Name: "echo"}}}, nil
	}
	file := "name: a\ntoolsets:\n  - package: finance\n"
	tests := []struct {
		name string
		p    hostilePackages
		want string
	}{
		{"Info panics", hostilePackages{info: func(string) (toolpkg.Info, error) { panic("boom") }}, `package "finance": reading its record panicked: boom`},
		{"Info of another toolset", hostilePackages{info: func(string) (toolpkg.Info, error) {
			return toolpkg.Info{Name: "other", Status: toolpkg.StatusReady}, nil
		}}, `package "finance": the record read is of another toolset, "other"`},
		{"Info fails", hostilePackages{info: func(string) (toolpkg.Info, error) {
			return toolpkg.Info{}, errors.New("the broker is unreachable" + strings.Repeat("!", 4096))
		}}, `package "finance": the broker is unreachable!!!`},
		{"nil toolset", hostilePackages{info: ready, ts: func(string) toolset.Toolset { return nil }}, `package "finance": no toolset was made of it`},
		{"toolset panics", hostilePackages{info: ready, ts: func(string) toolset.Toolset { panic("bang") }}, `package "finance": making its toolset panicked: bang`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := agentfile.Parse([]byte(file), "a.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Resolve(context.Background(), &agentfile.Options{Packages: tt.p})
			got := lines(t, err)
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
			}
			if len(got[0]) > 1024 {
				t.Errorf("a problem of %d bytes: unbounded", len(got[0]))
			}
		})
	}
}

// listedPackages are remotePackages that list their names.
type listedPackages struct{ *remotePackages }

func (p listedPackages) PackageNames() []string {
	var names []string
	for n := range p.infos {
		names = append(names, n)
	}
	return names
}

// A misspelt package name gets the closest name the packages list; a
// name close to none gets no guess, and packages that do not list their
// names none either.
func TestUnknownPackageGetsTheClosestName(t *testing.T) {
	f, err := agentfile.Parse([]byte("name: a\ntoolsets:\n  - package: finanse\n  - package: zzzzzzzz\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := lines(t, agentfile.Check(context.Background(), f, &agentfile.Options{Packages: listedPackages{&remotePackages{infos: remoteInfos()}}}))
	want := []string{
		`3:14: unknown package "finanse": the store has no toolset of that name; did you mean "finance"?`,
		`4:14: unknown package "zzzzzzzz": the store has no toolset of that name`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = lines(t, agentfile.Check(context.Background(), f, &agentfile.Options{Packages: &remotePackages{infos: remoteInfos()}}))
	if strings.Contains(strings.Join(got, "\n"), "did you mean") {
		t.Errorf("a guess without a list: %v", got)
	}
}
