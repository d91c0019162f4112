package agentfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// problemsOf parses data and returns its problems as "line:col: message".
func problemsOf(t *testing.T, data string) []string {
	t.Helper()
	f, err := agentfile.Parse([]byte(data), "a.yaml")
	if err == nil {
		t.Fatalf("Parse accepted the file: %+v", f)
	}
	return lines(t, err)
}

// lines returns the problems of a *CheckError without the file name.
func lines(t *testing.T, err error) []string {
	t.Helper()
	var ce *agentfile.CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T, not a *CheckError: %v", err, err)
	}
	var out []string
	for _, p := range ce.Problems {
		out = append(out, strings.TrimPrefix(p.String(), p.File+":"))
	}
	return out
}

func TestParseTheExampleFile(t *testing.T) {
	data, err := os.ReadFile("testdata/support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := agentfile.Parse(data, "support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "support" || !strings.HasPrefix(f.Instructions, "Answer the customer's") || len(f.Toolsets) != 3 {
		t.Fatalf("parsed %+v", f)
	}
	local, docs, fin := f.Toolsets[0], f.Toolsets[1], f.Toolsets[2]
	if local.Local != "orders" || local.Prefix != "orders" || local.Rename["lookup"] != "find_order" || local.Timeout != 30*time.Second {
		t.Errorf("local entry %+v", local)
	}
	if docs.MCP == nil || docs.MCP.URL != "https://mcp.example.com/mcp" || docs.MCP.Headers["Authorization"] != "Bearer ${DOCS_TOKEN}" || !docs.Deferred {
		t.Errorf("mcp entry %+v %+v", docs, docs.MCP)
	}
	want := toolpkg.Config{
		Toolset: map[string]any{"greeting": "hi"},
		Tools:   map[string]map[string]any{"echo": {"retries": int64(3)}},
		Exclude: []string{"crash"},
	}
	if fin.Package == nil || fin.Package.Name != "finance" || !reflect.DeepEqual(fin.Package.Config, want) {
		t.Errorf("package entry %+v", fin.Package)
	}
	if !reflect.DeepEqual(fin.Roles, []string{"staff", "admin"}) || !fin.Approval || fin.MaxFailures != 3 {
		t.Errorf("package entry %+v", fin)
	}
	if *fin.Cache != (agentfile.Cache{TTL: 5 * time.Minute, Scope: toolset.CacheRun}) {
		t.Errorf("cache %+v", fin.Cache)
	}
	if *fin.RateLimit != (agentfile.RateLimit{Calls: 10, Per: time.Minute}) {
		t.Errorf("rate limit %+v", fin.RateLimit)
	}
	if got := f.Packages(); !reflect.DeepEqual(got, []string{"finance"}) {
		t.Errorf("Packages() = %v", got)
	}
}

func TestParsePlatformDocument(t *testing.T) {
	data, err := os.ReadFile("testdata/platform-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := agentfile.Parse(data, "platform-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "finance-assistant" || f.Instructions == "" {
		t.Fatalf("parsed %+v", f)
	}
	if got := f.Packages(); !reflect.DeepEqual(got, []string{"finance", "weather"}) {
		t.Fatalf("Packages() = %v", got)
	}
	fin := f.Toolsets[0].Package
	want := toolpkg.Config{
		Tools:   map[string]map[string]any{"echo": {"greeting": "Dear customer", "retries": "5"}},
		Exclude: []string{"crash"},
	}
	if fin.Name != "finance" || !reflect.DeepEqual(fin.Config, want) {
		t.Errorf("finance %+v", fin)
	}
	if w := f.Toolsets[1].Package; w.Name != "weather" || !reflect.DeepEqual(w.Config.Tools, map[string]map[string]any{"echo": {"verbose": true}}) {
		t.Errorf("weather %+v", w)
	}
}

// TestEveryProblemHasItsPosition gives each kind of problem with the
// line and column it is reported at.
func TestEveryProblemHasItsPosition(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"unknown key", "name: a\nmodel: gpt\n", []string{`2:1: unknown key "model" in the agent file; known keys: name, instructions, roleKey, toolsets, toolsetConfigs, skills`}},
		{"no name", "toolsets: []\n", []string{"1:1: the agent has no name; give it name: NAME"}},
		{"name not a string", "name: [a]\n", []string{"1:7: the agent's name must be a string, not a list"}},
		{"name with control", "name: \"a\\u0007b\"\n", []string{`1:7: the agent's name "a\ab" holds a control character`}},
		{"toolsets not a list", "name: a\ntoolsets: {local: x}\n", []string{"2:11: toolsets must be a list, not a map"}},
		{"no source", "name: a\ntoolsets:\n  - prefix: x\n", []string{"3:5: a toolset needs a source: one of local, mcp or package"}},
		{"two sources", "name: a\ntoolsets:\n  - local: x\n    package: y\n", []string{"4:5: a toolset has one source; this one has both local and package"}},
		{"bad local name", "name: a\ntoolsets:\n  - local: ../x\n", []string{`3:12: local toolset name "../x" may hold only letters, digits, '.', '_' and '-'`}},
		{"bad package name", "name: a\ntoolsets:\n  - package: ../x\n", []string{`3:14: package name "../x" is not valid: invalid toolset name "../x": use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit`}},
		{"bad prefix", "name: a\ntoolsets:\n  - local: x\n    prefix: a.b\n", []string{`4:13: prefix "a.b" must be 1 to 62 letters, digits, '_' or '-'`}},
		{"bad rename target", "name: a\ntoolsets:\n  - local: x\n    rename: {a: b c}\n", []string{`4:17: rename: "b c" is not a valid tool name (1 to 64 letters, digits, '_' or '-')`}},
		{"rename clash", "name: a\ntoolsets:\n  - local: x\n    rename:\n      a: c\n      b: c\n", []string{`6:10: rename: two tools are renamed to "c"`}},
		{"empty roles", "name: a\ntoolsets:\n  - local: x\n    roles: []\n", []string{"4:12: roles is empty, which would show the toolset to no run; leave roles out to show it to every run"}},
		{"role not a string", "name: a\ntoolsets:\n  - local: x\n    roles: [{a: b}]\n", []string{"4:13: a role must be a string, not a map"}},
		{"bad timeout", "name: a\ntoolsets:\n  - local: x\n    timeout: 30\n", []string{`4:14: timeout must be a duration such as "30s" or "5m", not a number`}},
		{"timeout text", "name: a\ntoolsets:\n  - local: x\n    timeout: soon\n", []string{`4:14: timeout must be a duration such as "30s" or "5m", not "soon"`}},
		{"timeout range", "name: a\ntoolsets:\n  - local: x\n    timeout: 48h\n", []string{"4:14: timeout must be from 1ms to 24h0m0s, not 48h0m0s"}},
		{"negative timeout", "name: a\ntoolsets:\n  - local: x\n    timeout: -1s\n", []string{"4:14: timeout must be from 1ms to 24h0m0s, not -1s"}},
		{"deferred not bool", "name: a\ntoolsets:\n  - local: x\n    deferred: yes please\n", []string{"4:15: deferred must be true or false, not a string"}},
		{"max failures range", "name: a\ntoolsets:\n  - local: x\n    maxFailures: 0\n", []string{`4:18: maxFailures must be from 1 to 1000, not "0"`}},
		{"cache scope", "name: a\ntoolsets:\n  - local: x\n    cache: {scope: forever}\n", []string{`4:20: cache.scope must be process or run, not "forever"`}},
		{"cache key", "name: a\ntoolsets:\n  - local: x\n    cache: {size: 3}\n", []string{`4:13: unknown key "size" in cache; known keys: ttl, scope, maxEntries`}},
		{"rate limit incomplete", "name: a\ntoolsets:\n  - local: x\n    rateLimit: {calls: 3}\n", []string{"4:16: rateLimit needs calls and per, as in {calls: 10, per: 1m}"}},
		{"rate limit calls", "name: a\ntoolsets:\n  - local: x\n    rateLimit: {calls: -3, per: 1s}\n", []string{`4:24: rateLimit.calls must be from 1 to 1000000, not "-3"`}},
		{"config on local", "name: a\ntoolsets:\n  - local: x\n    config: {k: v}\n", []string{"4:5: config configures a package; this toolset's source is local"}},
		{"mcp both", "name: a\ntoolsets:\n  - mcp: {command: [x], url: \"https://h/\"}\n", []string{"3:10: mcp has both command and url; give one"}},
		{"mcp neither", "name: a\ntoolsets:\n  - mcp: {name: x}\n", []string{"3:10: mcp needs command: [PROGRAM, ARG...] or url: URL"}},
		{"mcp url scheme", "name: a\ntoolsets:\n  - mcp: {url: \"file:///etc/passwd\"}\n", []string{`3:16: mcp.url "file:///etc/passwd" must be an http or https URL`}},
		{"mcp url credentials", "name: a\ntoolsets:\n  - mcp: {url: \"https://u:p@h/\"}\n", []string{`3:16: mcp.url "https://u:p@h/" holds credentials; send them in headers, from the environment with ${NAME}`}},
		{"mcp env on url", "name: a\ntoolsets:\n  - mcp:\n      url: https://h/\n      env: {A: b}\n", []string{"5:7: mcp.env is for a command; this server has a url (use headers)"}},
		{"mcp bad env name", "name: a\ntoolsets:\n  - mcp:\n      command: [x]\n      env: {A-B: b}\n", []string{`5:13: mcp.env: "A-B" is not an environment variable name`}},
		{"mcp bad reference", "name: a\ntoolsets:\n  - mcp:\n      url: https://h/\n      headers: {Authorization: \"Bearer ${TOKEN\"}\n", []string{`5:32: a value of mcp.headers: "${" without a closing "}"; write ${NAME}`}},
		{"mcp bad reference name", "name: a\ntoolsets:\n  - mcp:\n      url: https://h/\n      headers: {X-Key: \"${1x}\"}\n", []string{`5:24: a value of mcp.headers: "1x" is not an environment variable name; write ${NAME}`}},
		{"mcp header name", "name: a\ntoolsets:\n  - mcp:\n      url: https://h/\n      headers: {\"X Key\": v}\n", []string{`5:17: mcp.headers: "X Key" is not an HTTP header name`}},
		{"mcp header line break", "name: a\ntoolsets:\n  - mcp:\n      url: https://h/\n      headers: {X-Key: \"a\\r\\nHost: evil\"}\n", []string{"5:24: a value of mcp.headers holds a line break"}},
		{"mcp empty command", "name: a\ntoolsets:\n  - mcp: {command: []}\n", []string{"3:20: mcp.command needs a program: command: [PROGRAM, ARG...]"}},
		{"config too deep", "name: a\ntoolsets:\n  - package: p\n    config: {k: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "}\n", []string{"4:49: a configuration value is nested more than 32 levels deep"}},
		{"toolsetConfigs of unknown toolset", "name: a\ntoolsets: [p]\ntoolsetConfigs:\n  - toolset: q\n    configValues: {t: {k: v}}\n", []string{`4:14: toolsetConfigs configures "q", which is not one of the agent's toolsets`}},
		{"toolsetConfigs twice", "name: a\ntoolsets:\n  - package: p\n    tools: {t: {k: v}}\ntoolsetConfigs:\n  - toolset: p\n    configValues: {t: {k: w}}\n", []string{`7:24: tool "t": "k" is configured twice`}},
		{"platform kind", "kind: toolset\nmetadata: {name: a}\n", []string{`1:7: kind is "toolset"; an agent document has kind agent`}},
		{"platform no name", "kind: agent\nspec: {toolsets: [p]}\n", []string{"1:1: the agent has no name; give it name: NAME"}},
		{"platform unknown spec key", "kind: agent\nmetadata: {name: a}\nspec: {model: x}\n", []string{`3:8: unknown key "model" in spec; known keys: type, systemPrompt, modelProvider, deploy, toolsets, tools, toolsetConfigs, skills, inputModes, outputModes`}},
		{"not a map", "- a\n- b\n", []string{"1:1: an agent file must be a map (name, instructions, toolsets), not a list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, tc.file)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestSeveralProblemsAreReportedAtOnce(t *testing.T) {
	data, err := os.ReadFile("testdata/broken.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = agentfile.Parse(data, "testdata/broken.yaml")
	want := "" +
		"testdata/broken.yaml:2:1: unknown key \"modle\" in the agent file; known keys: name, instructions, roleKey, toolsets, toolsetConfigs, skills\n" +
		"testdata/broken.yaml:4:5: a toolset needs a source: one of local, mcp or package\n" +
		"testdata/broken.yaml:6:13: prefix \"not ok\" must be 1 to 62 letters, digits, '_' or '-'\n" +
		"testdata/broken.yaml:7:14: timeout must be a duration such as \"30s\" or \"5m\", not \"forever\"\n" +
		"testdata/broken.yaml:9:5: a toolset has one source; this one has both package and mcp\n" +
		"testdata/broken.yaml:11:18: maxFailures must be from 1 to 1000, not \"-1\""
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestHostileFilesFailQuickly parses the files of testdata/hostile: each
// is refused with a clear problem, in bounded time, without a panic.
func TestHostileFilesFailQuickly(t *testing.T) {
	want := map[string]string{
		"aliases.yaml":        "more than 100000 YAML nodes (aliases counted at each use); reading stopped",
		"deep.yaml":           "a configuration value is nested more than 32 levels deep",
		"deep-flow.yaml":      "not valid YAML: exceeded max depth of 10000",
		"many-toolsets.yaml":  "the agent has 5000 toolsets; at most 256 are allowed",
		"huge-list.yaml":      "the file has more than 50000 YAML tokens (names, values and punctuation); reading stopped",
		"long-roles.yaml":     "roles has 1001 items; at most 1000 are allowed",
		"nonstring-keys.yaml": "a key of the agent file must be a string, not a list",
		"int-keys.yaml":       "a key of a toolset must be a string, not a number",
		"duplicate-keys.yaml": `duplicate key "name" in the agent file`,
		"tabs.yaml":           "not valid YAML: found character that cannot start any token",
		"latin1.yaml":         "the file is not valid UTF-8 text",
		"utf16.yaml":          "the file is not valid UTF-8 text",
		"two-documents.yaml":  "a second YAML document; an agent file holds one",
		"merge-key.yaml":      "merge keys (<<) are not supported; write the keys out",
		"binary-tag.yaml":     "a configuration value of type binary is not supported; quote it to make it a string",
		"empty.yaml":          "the file is empty; an agent file needs at least a name",
		// SAM's documents, read with ParseDocument.
		"sam-alias-models.yaml":     "more than 100000 YAML nodes (aliases counted at each use); reading stopped",
		"sam-alias-config.yaml":     "more than 100000 YAML nodes (aliases counted at each use); reading stopped",
		"sam-many-skills.yaml":      "skills has 1001 items; at most 1000 are allowed",
		"sam-many-agents.yaml":      "resources.agents has 1001 items; at most 1000 are allowed",
		"sam-deep-tool-config.yaml": "a configuration value is nested more than 32 levels deep",
		"sam-wrong-types.yaml":      "the agent's name must be a string, not a list",
		"sam-duplicate-spec.yaml":   `duplicate key "systemPrompt" in spec`,
	}
	dir := "testdata/hostile"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Errorf("%d hostile files, %d expected", len(ents), len(want))
	}
	for _, de := range ents {
		t.Run(de.Name(), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, de.Name()))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if strings.HasPrefix(de.Name(), "sam-") {
				_, err = agentfile.ParseDocument(data, de.Name())
			} else {
				_, err = agentfile.Parse(data, de.Name())
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Parse took %v", d)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if w, ok := want[de.Name()]; !ok || !strings.Contains(err.Error(), w) {
				t.Errorf("error %q\nwant one containing %q", err, w)
			}
			if n := len(err.Error()); n > 16<<10 {
				t.Errorf("error is %d bytes long", n)
			}
		})
	}
}

func TestFileOverOneMebibyteIsRefused(t *testing.T) {
	data := "name: a\ninstructions: |\n" + strings.Repeat("  "+strings.Repeat("x", 1022)+"\n", 2048)
	_, err := agentfile.Parse([]byte(data), "big.yaml")
	if err == nil || err.Error() != fmt.Sprintf("big.yaml: the file is %d bytes; an agent file may have at most 1048576", len(data)) {
		t.Fatalf("error %v", err)
	}
}

func TestLongValuesAreQuotedShort(t *testing.T) {
	long := strings.Repeat("é", 3000)
	got := problemsOf(t, "name: a\ntoolsets:\n  - local: x\n    timeout: "+long+"\n")
	if len(got) != 1 || len(got[0]) > 200 || !strings.HasSuffix(got[0], `"...`) {
		t.Fatalf("problems %q", got)
	}
}

func TestProblemsBeyondAHundredAreCounted(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: a\ntoolsets:\n")
	for range 150 {
		b.WriteString("  - prefix: x\n")
	}
	_, err := agentfile.Parse([]byte(b.String()), "a.yaml")
	got := lines(t, err)
	if len(got) != 101 || got[100] != " and 50 more problems" {
		t.Fatalf("%d problems, last %q", len(got), got[len(got)-1])
	}
}

// TestConfigValueProblemsNeverQuoteTheValue: a configuration value may
// be a secret, so a problem with one says where it is, not what it is.
func TestConfigValueProblemsNeverQuoteTheValue(t *testing.T) {
	got := problemsOf(t, "name: a\ntoolsets:\n  - package: p\n    config: {api_key: !!int 123456789012345678901234567890}\n")
	want := []string{"4:23: a configuration value is a number that does not fit 64 bits"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("problems %q, want %q", got, want)
	}
}

// TestLongOrOddTagsAreQuotedShort tags values with tags of a hundred
// kilobytes, and one whose escapes decode to a terminal's control
// sequence: a problem names the tag quoted and cut short.
func TestLongOrOddTagsAreQuotedShort(t *testing.T) {
	long := strings.Repeat("a", 100_000)
	for _, data := range []string{
		"name: !" + long + " x\n",
		"name: a\ntoolsets:\n  - package: p\n    config: {k: !" + long + " x}\n",
		"name: a\ntoolsets:\n  - package: p\n    config: {k: !<tag:%1b%5b31m> x}\n",
	} {
		_, err := agentfile.Parse([]byte(data), "a.yaml")
		if err == nil {
			t.Fatal("accepted")
		}
		if msg := err.Error(); len(msg) > 300 || strings.ContainsAny(msg, "\x1b\x00") {
			t.Errorf("problem of %d bytes: %q", len(msg), msg[:min(len(msg), 200)])
		}
	}
}
