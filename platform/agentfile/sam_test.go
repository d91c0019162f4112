package agentfile_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// warnings returns the warnings as "line:col: message".
func warnings(list []agentfile.Problem) []string {
	var out []string
	for _, w := range list {
		out = append(out, strings.TrimPrefix(w.String(), w.File+":"))
	}
	return out
}

// TestParseSAMAgentDocument parses an agent document with every field
// SAM defines: no problem, each field acted on or kept, and a warning,
// with its line, for each one kept but not acted on.
func TestParseSAMAgentDocument(t *testing.T) {
	data, err := os.ReadFile("testdata/sam-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := agentfile.Parse(data, "sam-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings := []string{
		"4:1: description is kept but not acted on here",
		`6:3: spec.type "standard" is kept but not acted on: every agent here runs the same way`,
		"7:3: spec.modelProvider is kept but not acted on: the program that runs the agent chooses its model",
		"8:3: spec.deploy is kept but not acted on: deploying is the platform's",
		`11:29: built-in group "builtin_artifact_tools" is not provided here: it is one of SAM's own groups of tools, not a package; the agent runs without it`,
		"12:3: spec.inputModes are kept but not acted on: they are the agent card's",
		"13:3: spec.outputModes are kept but not acted on: they are the agent card's",
		"14:3: the agent card's skills (those with an id) are kept but not acted on: nothing here publishes an agent card",
		`33:19: built-in group "artifact_management" is not provided here: it is one of SAM's own groups of tools, not a package; the agent runs without it`,
	}
	if got := warnings(f.Warnings); !reflect.DeepEqual(got, wantWarnings) {
		t.Errorf("warnings:\n got %q\nwant %q", got, wantWarnings)
	}
	if f.Name != "finance-assistant" || f.Instructions != "You help the finance team read the markets.\n" ||
		f.Description != "Answers questions about markets and places orders." || f.Type != "standard" ||
		!reflect.DeepEqual(f.ModelProvider, []string{"general"}) || f.Deploy == nil || !*f.Deploy ||
		!reflect.DeepEqual(f.InputModes, []string{"text/plain"}) || !reflect.DeepEqual(f.OutputModes, []string{"text/plain", "application/json"}) {
		t.Errorf("parsed %+v", f)
	}
	if len(f.Card) != 1 {
		t.Fatalf("card %+v", f.Card)
	}
	if c := f.Card[0]; c.ID != "market-analysis" || c.Name != "Market analysis" || c.Description != "Reads a ticker's technical indicators." ||
		!reflect.DeepEqual(c.Tags, []string{"finance", "markets"}) || c.Pos != (agentfile.Position{Line: 15, Column: 7}) {
		t.Errorf("card skill %+v", c)
	}
	wantSkills := []agentfile.SkillRef{{Name: "market-glossary", Pos: agentfile.Position{Line: 19, Column: 7}}, {Name: "risk-rules", Pos: agentfile.Position{Line: 20, Column: 14}}}
	if !reflect.DeepEqual(f.Skills, wantSkills) {
		t.Errorf("attached skills %+v", f.Skills)
	}
	if got := f.Packages(); !reflect.DeepEqual(got, []string{"finance-tools", "weather-tools"}) {
		t.Errorf("Packages() = %v", got)
	}
	if len(f.Toolsets) != 4 {
		t.Fatalf("%d toolsets: %+v", len(f.Toolsets), f.Toolsets)
	}
	fin, weather, files, docs := f.Toolsets[0], f.Toolsets[1], f.Toolsets[2], f.Toolsets[3]
	wantFin := toolpkg.Config{
		Tools:   map[string]map[string]any{"market_get_technicals": {"api_token": "demo-token", "region": "eu"}},
		Exclude: []string{"market_place_order"},
	}
	if fin.Package == nil || fin.Package.Name != "finance-tools" || fin.Only != nil || !reflect.DeepEqual(fin.Package.Config, wantFin) {
		t.Errorf("finance-tools %+v %+v", fin, fin.Package)
	}
	if weather.Package == nil || weather.Package.Name != "weather-tools" || !reflect.DeepEqual(weather.Only, []string{"weather-tools__forecast"}) ||
		!reflect.DeepEqual(weather.Package.Config.Tools, map[string]map[string]any{"forecast": {"units": "metric"}}) {
		t.Errorf("weather-tools %+v %+v", weather, weather.Package)
	}
	if m := files.MCP; m == nil || !reflect.DeepEqual(m.Command, []string{"mcp-server-filesystem", "/srv/reports"}) ||
		!reflect.DeepEqual(m.Env, map[string]string{"LOG_LEVEL": "warn"}) || m.URL != "" || !reflect.DeepEqual(files.Only, []string{"read_file"}) {
		t.Errorf("stdio server %+v %+v", files, files.MCP)
	}
	if m := docs.MCP; m == nil || m.URL != "https://mcp.example.com/mcp" || m.Headers["Authorization"] != "Bearer ${DOCS_TOKEN}" || docs.Only != nil {
		t.Errorf("http server %+v %+v", docs, docs.MCP)
	}

	// ParseDocument reads it the same, as kind agent.
	d, err := agentfile.ParseDocument(data, "sam-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != agentfile.KindAgent || d.Agent == nil || d.Toolset != nil || d.Manifest != nil ||
		!reflect.DeepEqual(d.Agent, f) || !reflect.DeepEqual(warnings(d.Warnings), wantWarnings) {
		t.Errorf("document %+v", d)
	}
}

// TestOlderSpellingLoadsWithWarnings parses a document in the shape this
// package read before it read SAM's: it loads as it did, each of its
// older keys warned of.
func TestOlderSpellingLoadsWithWarnings(t *testing.T) {
	data, err := os.ReadFile("testdata/platform-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := agentfile.Parse(data, "platform-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"4:1: apiVersion is not SAM's: it is ignored (an older spelling of this package's); leave it out",
		"6:1: metadata is an older spelling of this package's: SAM writes name and description at the top level; labels and annotations are not acted on",
		"11:3: spec.description is an older spelling of this package's: SAM writes description at the top level; it is kept but not acted on here",
		"12:3: spec.instructions is an older spelling of this package's: SAM writes spec.systemPrompt",
		"24:1: a top-level toolsetConfigs is an older spelling of this package's: SAM writes it in spec",
	}
	if got := warnings(f.Warnings); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
	if f.Description != "Answers questions about invoices." {
		t.Errorf("description %q", f.Description)
	}
}

// financeStore is a store with the finance demo's toolsets: finance-tools
// (echo; market_get_technicals, which needs an API token; and
// market_place_order) and news-tools (headlines, echo).
func financeStore(t *testing.T) *toolpkg.Store {
	t.Helper()
	s := openStore(t)
	finance := `{"tools": {
  "echo": {"description": "Echo the text back.", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "config_schema": [{"key": "greeting", "type": "string", "default": "hello"}]},
  "market_get_technicals": {"description": "Technical indicators of a ticker.", "parameters": {"type": "object", "properties": {"ticker": {"type": "string"}}},
    "config_schema": [{"key": "api_token", "type": "string", "required": true, "secret": true}, {"key": "region", "type": "string", "default": "us"}]},
  "market_place_order": {"description": "Place an order.", "parameters": {"type": "object", "properties": {}}}
}}`
	if info := upload(t, s, "finance-tools", demoPackage(t, map[string]string{"schema.json": finance})); info.Status != toolpkg.StatusReady {
		t.Fatalf("finance-tools: %+v", info)
	}
	if info := upload(t, s, "news-tools", demoPackage(t, map[string]string{"schema.json": schema("headlines")})); info.Status != toolpkg.StatusReady {
		t.Fatalf("news-tools: %+v", info)
	}
	return s
}

// TestFinanceDemoAgentResolves loads the finance demo's agent against a
// store with its toolsets: the model gets the toolset's tools as
// finance-tools__<tool> (the hyphen kept), less the excluded one, and
// the one tool spec.tools names of another toolset.
func TestFinanceDemoAgentResolves(t *testing.T) {
	s := financeStore(t)
	a, err := agentfile.Load(context.Background(), "testdata/finance-agent.yaml", &agentfile.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Name != "market-analyst" || !strings.HasPrefix(a.Instructions, "You analyse tickers") {
		t.Fatalf("agent %+v", a)
	}
	tools, err := toolset.BuildTools(context.Background(), a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"finance-tools__echo", "finance-tools__market_get_technicals", "news-tools__headlines"}
	if got := tools.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "finance-tools__echo", Args: json.RawMessage(`{"text":"AAPL"}`)})
	if err != nil || !strings.Contains(text(res), "hello, AAPL") {
		t.Fatalf("echo: %s, %v", text(res), err)
	}
}

// TestRequiredConfigSetNowhereIsAProblem: a tool whose required key (a
// secret here) no layer sets would be left out at run time without a
// word; Check says which tool needs which key, until the agent, the
// toolset's own configuration or the tool's exclusion settles it.
func TestRequiredConfigSetNowhereIsAProblem(t *testing.T) {
	s := financeStore(t)
	check := func(file string) []string {
		t.Helper()
		f, err := agentfile.Parse([]byte(file), "a.yaml")
		if err != nil {
			t.Fatal(err)
		}
		err = agentfile.Check(context.Background(), f, &agentfile.Options{Store: s})
		if err == nil {
			return nil
		}
		return lines(t, err)
	}
	bare := "kind: agent\nname: a\nspec:\n  toolsets: [finance-tools]\n"
	want := []string{`4:14: package "finance-tools": tool "market_get_technicals" needs "api_token" (a secret), set nowhere: not in the agent's configuration, the toolset's, nor by a default; the tool would be left out`}
	if got := check(bare); !reflect.DeepEqual(got, want) {
		t.Fatalf("problems:\n got %q\nwant %q", got, want)
	}
	// The tool named alone in spec.tools is checked the same.
	if got := check("kind: agent\nname: a\nspec:\n  tools:\n    - {tool_type: builtin, tool_name: finance-tools__market_get_technicals}\n"); len(got) != 1 || !strings.Contains(got[0], `needs "api_token"`) {
		t.Fatalf("problems %q", got)
	}
	for name, file := range map[string]string{
		"the agent's value":  bare + "  toolsetConfigs:\n    - toolset: finance-tools\n      configValues: {market_get_technicals: {api_token: t}}\n",
		"toolset-level":      "name: a\ntoolsets:\n  - package: finance-tools\n    config: {api_token: t}\n",
		"excluded":           bare + "  toolsetConfigs:\n    - toolset: finance-tools\n      excludedTools: [market_get_technicals]\n",
		"another tool alone": "kind: agent\nname: a\nspec:\n  tools:\n    - {tool_type: builtin, tool_name: finance-tools__echo}\n",
	} {
		if got := check(file); got != nil {
			t.Errorf("%s: problems %q", name, got)
		}
	}
	// Set in the store's configuration of the toolset, it is set.
	if _, err := s.SetConfig("finance-tools", map[string]any{"api_token": "from-the-store"}); err != nil {
		t.Fatal(err)
	}
	if got := check(bare); got != nil {
		t.Fatalf("with the store's configuration: %q", got)
	}
}

// TestRequiredConfigUncheckedWithoutStoredConfigs: Packages that keep no
// toolset configuration Check can read leave required keys unchecked,
// since they may be set there.
func TestRequiredConfigUncheckedWithoutStoredConfigs(t *testing.T) {
	infos := remoteInfos()
	fin := infos["finance"]
	fin.Tools = append(fin.Tools, toolpkg.ToolInfo{Name: "lookup", Description: "Look up.",
		Config: []toolpkg.ConfigField{{Key: "api_token", Type: "string", Required: true, Secret: true}}})
	infos["finance"] = fin
	f, err := agentfile.Parse([]byte("name: a\ntoolsets: [finance]\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := agentfile.Check(context.Background(), f, &agentfile.Options{Packages: &remotePackages{infos: infos}}); err != nil {
		t.Fatal(err)
	}
	err = agentfile.Check(context.Background(), f, &agentfile.Options{Packages: configuredPackages{&remotePackages{infos: infos}, nil}})
	if got := lines(t, err); len(got) != 1 || !strings.Contains(got[0], `tool "lookup" needs "api_token" (a secret), set nowhere`) {
		t.Fatalf("problems %q", got)
	}
	err = agentfile.Check(context.Background(), f, &agentfile.Options{Packages: configuredPackages{&remotePackages{infos: infos}, errors.New("no config here")}})
	if got := lines(t, err); len(got) != 1 || !strings.Contains(got[0], `package "finance": reading its configuration: no config here`) {
		t.Fatalf("problems %q", got)
	}
}

// configuredPackages are Packages with a toolset configuration: none,
// or an error.
type configuredPackages struct {
	*remotePackages
	err error
}

func (c configuredPackages) Config(string) (map[string]any, error) { return map[string]any{}, c.err }

// TestToolsEntries gives spec.tools entries of every kind: a package's
// tool joins the entry of its package, or makes one limited to it;
// what is not supported is a problem that says what is.
func TestToolsEntries(t *testing.T) {
	parse := func(tools string, more ...string) *agentfile.File {
		t.Helper()
		f, err := agentfile.Parse([]byte("kind: agent\nname: a\nspec:\n"+strings.Join(more, "")+"  tools:\n"+tools), "a.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// A tool of a toolset the agent lists already: nothing to add.
	f := parse("    - {tool_type: builtin, tool_name: p__a}\n", "  toolsets: [p]\n")
	if len(f.Toolsets) != 1 || f.Toolsets[0].Only != nil {
		t.Errorf("with the toolset: %+v", f.Toolsets)
	}
	// Two tools of one toolset: one entry limited to both, each tool's
	// configuration merged, and toolsetConfigs reaches it.
	f = parse("    - {tool_type: builtin, tool_name: p__a, tool_config: {k: v}, required_scopes: [finance]}\n    - {tool_type: builtin, tool_name: p__b}\n",
		"  toolsetConfigs:\n    - {toolset: p, configValues: {b: {k: w}}}\n")
	if len(f.Toolsets) != 1 || !reflect.DeepEqual(f.Toolsets[0].Only, []string{"p__a", "p__b"}) ||
		!reflect.DeepEqual(f.Toolsets[0].Package.Config.Tools, map[string]map[string]any{"a": {"k": "v", "required_scopes": []any{"finance"}}, "b": {"k": "w"}}) {
		t.Errorf("two tools: %+v %+v", f.Toolsets, f.Toolsets[0].Package)
	}
	// A toolset's name never holds "__": the first one splits.
	f = parse("    - {tool_type: builtin, tool_name: p__a__b}\n")
	if len(f.Toolsets) != 1 || f.Toolsets[0].Package.Name != "p" || !reflect.DeepEqual(f.Toolsets[0].Only, []string{"p__a__b"}) {
		t.Errorf("split: %+v", f.Toolsets)
	}
	f = parse("    - tool_type: builtin\n      tool_name: p__a\n      tool_description: Reads things.\n")
	if got := warnings(f.Warnings); !reflect.DeepEqual(got, []string{"7:7: tool_description is not acted on: a package's tool is described by its package"}) {
		t.Errorf("warnings %q", got)
	}

	for _, tc := range []struct{ name, tools, want string }{
		{"in-process builtin", "    - {tool_type: builtin, tool_name: web_request}\n",
			`6:39: builtin tool "web_request" is one of SAM's in-process tools, which are not provided here: spec.tools takes builtin entries naming a tool of a package as TOOLSET__TOOL (such as finance-tools__market_get_technicals) and mcp entries (connection_params type stdio or streamable-http); builtin-group entries are noted and left out`},
		{"openapi", "    - {tool_type: openapi, specification_file: api.yaml}\n",
			`6:19: tool_type "openapi" is not supported here: spec.tools takes builtin entries naming a tool of a package as TOOLSET__TOOL (such as finance-tools__market_get_technicals) and mcp entries (connection_params type stdio or streamable-http); builtin-group entries are noted and left out`},
		{"no type", "    - {tool_name: p__a}\n", "6:7: an entry of spec.tools needs tool_type: builtin, builtin-group, mcp or openapi"},
		{"not a map", "    - p__a\n", "6:7: an entry of spec.tools must be a map, {tool_type: TYPE, ...}, not a string"},
		{"not a list", "    {tool_type: builtin}\n", "6:5: spec.tools must be a list, not a map"},
		{"key of another type", "    - {tool_type: builtin, tool_name: p__a, group_name: g}\n", `6:45: "group_name" does not go with tool_type builtin; its keys: tool_type, tool_name, tool_config, tool_description, required_scopes`},
		{"builtin without a name", "    - {tool_type: builtin}\n", "6:7: a builtin entry needs tool_name: TOOLSET__TOOL"},
		{"bad toolset name", "    - {tool_type: builtin, tool_name: ../x__a}\n", `6:39: tool_name "../x__a": the toolset's name is not valid: invalid toolset name "../x": use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit`},
		{"twice", "    - {tool_type: builtin, tool_name: p__a}\n    - {tool_type: builtin, tool_name: p__a}\n", `7:39: tool "p__a" is listed twice in spec.tools`},
		{"group without a name", "    - {tool_type: builtin-group}\n", "6:7: a builtin-group entry needs group_name: GROUP"},
		{"mcp without connection", "    - {tool_type: mcp}\n", "6:7: an mcp entry needs connection_params: {type: stdio, command: PROGRAM, args: [ARG]} or {type: streamable-http, url: URL}"},
		{"mcp sse", "    - {tool_type: mcp, connection_params: {type: sse, url: \"https://h/sse\"}}\n", "6:50: connection_params.type sse is not supported here: the MCP client here speaks stdio and streamable-http"},
		{"mcp no type", "    - {tool_type: mcp, connection_params: {command: x}}\n", "6:43: connection_params needs type: stdio or streamable-http"},
		{"mcp stdio no command", "    - {tool_type: mcp, connection_params: {type: stdio}}\n", "6:43: a stdio server needs connection_params.command: PROGRAM"},
		{"mcp stdio url", "    - {tool_type: mcp, connection_params: {type: stdio, command: x, url: \"https://h/\"}}\n", "6:69: connection_params.url is not for a stdio server"},
		{"mcp http env", "    - tool_type: mcp\n      connection_params: {type: streamable-http, url: \"https://h/\"}\n      environment_variables: {A: b}\n", "8:7: environment_variables are for a stdio server; this one has a url (give headers in connection_params)"},
		{"mcp credentials", "    - {tool_type: mcp, connection_params: {type: streamable-http, url: \"https://u:p@h/\"}}\n", `6:72: connection_params.url "https://u:p@h/" holds credentials; send them in headers, from the environment with ${NAME}`},
		{"mcp header line break", "    - tool_type: mcp\n      connection_params: {type: streamable-http, url: \"https://h/\", headers: {X: \"a\\nb\"}}\n", "7:82: a value of connection_params.headers holds a line break"},
		{"mcp bad env name", "    - tool_type: mcp\n      connection_params: {type: stdio, command: x}\n      environment_variables: {A-B: b}\n", `8:31: environment_variables: "A-B" is not an environment variable name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, "kind: agent\nname: a\nspec:\n  toolsets: [q]\n  tools:\n"+tc.tools)
			if !reflect.DeepEqual(got, []string{tc.want}) {
				t.Errorf("problems:\n got %q\nwant %q", got, []string{tc.want})
			}
		})
	}
	// Listed and excluded, and configured twice.
	got := problemsOf(t, "kind: agent\nname: a\nspec:\n  tools:\n    - {tool_type: builtin, tool_name: p__a, tool_config: {k: v}}\n"+
		"  toolsetConfigs:\n    - {toolset: p, configValues: {a: {k: w}}, excludedTools: [a]}\n")
	want := []string{`7:39: tool "a": "k" is configured twice`, `7:63: tool "p__a" is listed in spec.tools and excluded; leave one out`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
}

// TestToolsEntriesResolve resolves spec.tools entries: a package's tool
// the package lacks is a problem of Check; an mcp entry with a
// tool_name gets that tool of the server alone.
func TestToolsEntriesResolve(t *testing.T) {
	s := financeStore(t)
	f, err := agentfile.Parse([]byte("kind: agent\nname: a\nspec:\n  tools:\n    - {tool_type: builtin, tool_name: news-tools__nosuch}\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = agentfile.Check(context.Background(), f, &agentfile.Options{Store: s})
	if got := lines(t, err); len(got) != 1 || !strings.HasPrefix(got[0], `5:39: package "news-tools" has no tool "news-tools__nosuch" (its tools are named news-tools__TOOL: `) {
		t.Fatalf("problems %q", got)
	}

	srv := httptest.NewServer(mcptoolset.NewServer(registry(nil)["orders"]).HTTPHandler(nil))
	t.Cleanup(srv.Close) // after the agent's own cleanup, which ends its connection
	a := resolve(t, "kind: agent\nname: a\nspec:\n  tools:\n    - tool_type: mcp\n      tool_name: lookup\n      connection_params: {type: streamable-http, url: '"+srv.URL+"'}\n"+
		"    - {tool_type: builtin, tool_name: news-tools__headlines}\n", &agentfile.Options{Store: s})
	tools, err := toolset.BuildTools(context.Background(), a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if got := tools.Names(); !reflect.DeepEqual(got, []string{"lookup", "news-tools__headlines"}) {
		t.Fatalf("tools %v", got)
	}
	res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "lookup", Args: json.RawMessage(`{"id":"7"}`)})
	if err != nil || !strings.Contains(text(res), "order 7: shipped") {
		t.Fatalf("lookup: %s, %v", text(res), err)
	}
}

// TestSkillsAreToldApartByShape: an object with an id is the agent
// card's; a string or {skill: NAME} is attached; anything else is a
// problem naming both forms.
func TestSkillsAreToldApartByShape(t *testing.T) {
	f, err := agentfile.Parse([]byte("name: a\nskills:\n  - {id: x, name: X, description: Does x., tags: [t], examples: [do x], inputModes: [text/plain]}\n  - pdf-reading\n  - {skill: tax-rules}\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Card) != 1 || f.Card[0].ID != "x" || !reflect.DeepEqual(f.Card[0].Examples, []string{"do x"}) ||
		!reflect.DeepEqual(f.Skills, []agentfile.SkillRef{{Name: "pdf-reading", Pos: agentfile.Position{Line: 4, Column: 5}}, {Name: "tax-rules", Pos: agentfile.Position{Line: 5, Column: 13}}}) {
		t.Fatalf("card %+v, skills %+v", f.Card, f.Skills)
	}
	both := "a skill is an agent card's skill, {id: ID, name: NAME, description: TEXT, tags: [TAG]}, or an attached skill, NAME or {skill: NAME}; this one is "
	for _, tc := range []struct{ name, skills, want string }{
		{"id and skill", "  - {id: x, skill: y}\n", "3:5: a skill has both id and skill: an agent card's skill has an id ({id, name, description, tags}); an attached skill is NAME or {skill: NAME}, without an id"},
		{"name alone", "  - {name: x}\n", "3:5: " + both + "a map with neither id nor skill"},
		{"a list", "  - [x]\n", "3:5: " + both + "a list"},
		{"a number", "  - 7\n", "3:5: " + both + "a number"},
		{"attached with more", "  - {skill: x, version: 2}\n", `3:16: unknown key "version" in an attached skill; known keys: skill`},
		{"card with more", "  - {id: x, level: 2}\n", `3:13: unknown key "level" in a skill of the agent card; known keys: id, name, description, tags, examples, inputModes, outputModes`},
		{"bad name", "  - ../up\n", "3:5: skill name \"../up\" must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"},
		{"attached twice", "  - x\n  - {skill: x}\n", `4:13: skill "x" is attached twice`},
		{"two ids", "  - {id: x}\n  - {id: x}\n", `4:5: the agent card has two skills with id "x"`},
		{"not a list", "  {id: x}\n", "3:3: skills must be a list, not a map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := problemsOf(t, "name: a\nskills:\n"+tc.skills); !reflect.DeepEqual(got, []string{tc.want}) {
				t.Errorf("problems:\n got %q\nwant %q", got, []string{tc.want})
			}
		})
	}

	// Options.Skills checks that attached skills exist; a panic is a
	// problem.
	f, err = agentfile.Parse([]byte("kind: agent\nname: a\nspec:\n  skills: [pdf-reading, gone, {id: card-only}]\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := agentfile.Check(context.Background(), f, nil); err != nil {
		t.Fatalf("unchecked: %v", err)
	}
	uploaded := func(name string) bool { return name == "pdf-reading" }
	err = agentfile.Check(context.Background(), f, &agentfile.Options{Skills: uploaded})
	if got := lines(t, err); !reflect.DeepEqual(got, []string{`4:25: unknown skill "gone": no skill of that name was uploaded`}) {
		t.Fatalf("problems %q", got)
	}
	err = agentfile.Check(context.Background(), f, &agentfile.Options{Skills: func(string) bool { panic("boom") }})
	if got := lines(t, err); len(got) != 2 || !strings.Contains(got[0], `skill "pdf-reading": looking it up panicked: boom`) {
		t.Fatalf("problems %q", got)
	}
}

// TestAgentDocumentProblems gives the problems of SAM's agent shape.
func TestAgentDocumentProblems(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"unknown key", "kind: agent\nname: a\nmodel: x\n", []string{`3:1: unknown key "model" in the agent document; known keys: kind, name, description, spec`}},
		{"two names", "kind: agent\nname: a\nmetadata: {name: b}\n", []string{`3:18: the agent is named "b" here and "a" at line 2; give it one name`}},
		{"prompt twice", "kind: agent\nname: a\nspec:\n  systemPrompt: x\n  instructions: y\n", []string{"5:3: spec has both systemPrompt and instructions; give systemPrompt alone"}},
		{"deploy not a bool", "kind: agent\nname: a\nspec: {deploy: yes please}\n", []string{"3:16: spec.deploy must be true or false, not a string"}},
		{"model provider of maps", "kind: agent\nname: a\nspec: {modelProvider: [{a: b}]}\n", []string{"3:24: a model provider must be a string, not a map"}},
		{"modes not strings", "kind: agent\nname: a\nspec: {inputModes: [1]}\n", []string{"3:21: an input mode must be a string, not a number"}},
		{"duplicate spec key", "kind: agent\nname: a\nspec:\n  type: standard\n  type: other\n", []string{`5:3: duplicate key "type" in spec`}},
		{"toolset kind", "kind: toolset\nname: a\n", []string{`1:7: kind is "toolset"; an agent document has kind agent`}},
		{"a toolset config too deep", "kind: agent\nname: a\nspec:\n  tools:\n    - {tool_type: builtin, tool_name: p__a, tool_config: {k: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "}}\n",
			[]string{"5:94: a configuration value is nested more than 32 levels deep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := problemsOf(t, tc.file); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	// Without a kind, a spec still reads as an agent's, with a warning.
	f, err := agentfile.Parse([]byte("name: a\nspec: {systemPrompt: x}\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := warnings(f.Warnings); !reflect.DeepEqual(got, []string{"1:1: the document has no kind; it is read as kind: agent"}) || f.Instructions != "x" {
		t.Fatalf("warnings %q, %+v", got, f)
	}
}

// TestParseToolsetDocument reads a kind: toolset document.
func TestParseToolsetDocument(t *testing.T) {
	data, err := os.ReadFile("testdata/sam-toolset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := agentfile.ParseDocument(data, "sam-toolset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &agentfile.ToolsetDoc{Pos: agentfile.Position{Line: 1, Column: 1}, Name: "finance-tools", Description: "Market data for the finance agents.",
		Config: map[string]any{"region": "eu", "api_token": "demo-token", "retries": int64(3)}}
	if d.Kind != agentfile.KindToolset || d.Agent != nil || !reflect.DeepEqual(d.Toolset, want) || d.Warnings != nil {
		t.Fatalf("document %+v %+v", d, d.Toolset)
	}
	// Parse, which reads agents, refuses it.
	if _, err := agentfile.Parse(data, "sam-toolset.yaml"); err == nil {
		t.Fatal("Parse accepted a toolset")
	}
	for _, tc := range []struct{ file, want string }{
		{"kind: toolset\n", "1:1: the toolset has no name; give it name: NAME"},
		{"kind: toolset\nname: ../x\n", `2:7: package name "../x" is not valid: invalid toolset name "../x": use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit`},
		{"kind: toolset\nname: a\nspec: {config: [a]}\n", "3:16: spec.config must be a map, not a list"},
		{"kind: toolset\nname: a\nspec: {source: ./src}\n", `3:8: unknown key "source" in spec; known keys: config`},
		{"kind: workflow\nname: a\n", `1:7: kind is "workflow"; a document has kind agent, toolset or manifest`},
	} {
		_, err := agentfile.ParseDocument([]byte(tc.file), "t.yaml")
		if got := lines(t, err); !reflect.DeepEqual(got, []string{tc.want}) {
			t.Errorf("%q:\n got %q\nwant %q", tc.file, got, []string{tc.want})
		}
	}
}

// TestParseManifest reads a kind: manifest document: its agents and
// toolsets as those documents, the rest kept and warned of.
func TestParseManifest(t *testing.T) {
	data, err := os.ReadFile("testdata/sam-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := agentfile.ParseDocument(data, "sam-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := d.Manifest
	if d.Kind != agentfile.KindManifest || m == nil || len(m.Agents) != 2 || len(m.Toolsets) != 2 {
		t.Fatalf("document %+v %+v", d, m)
	}
	wantWarnings := []string{
		"3:3: resources.models are kept but not acted on here",
		"7:3: resources.connectors are kept but not acted on here",
		`19:35: built-in group "builtin_artifact_tools" is not provided here: it is one of SAM's own groups of tools, not a package; the agent runs without it`,
		"28:3: resources.workflows are kept but not acted on here",
	}
	if got := warnings(d.Warnings); !reflect.DeepEqual(got, wantWarnings) {
		t.Errorf("warnings:\n got %q\nwant %q", got, wantWarnings)
	}
	analyst, support := m.Agents[0], m.Agents[1]
	if analyst.Name != "market-analyst" || analyst.Filename != "sam-manifest.yaml" || !reflect.DeepEqual(analyst.Packages(), []string{"finance-tools", "news-tools"}) ||
		len(analyst.Warnings) != 1 || analyst.Warnings[0].Line != 19 {
		t.Errorf("analyst %+v", analyst)
	}
	if support.Name != "support" || support.Toolsets[0].Prefix != "news" || support.Warnings != nil {
		t.Errorf("support %+v", support)
	}
	if m.Toolsets[0].Name != "finance-tools" || m.Toolsets[0].Config["region"] != "eu" || m.Toolsets[1].Name != "news-tools" {
		t.Errorf("toolsets %+v %+v", m.Toolsets[0], m.Toolsets[1])
	}
	if len(m.Models) != 1 || m.Models[0].(map[string]any)["provider"] != "openai" || m.Connectors == nil || len(m.Workflows) != 1 {
		t.Errorf("models %v connectors %v workflows %v", m.Models, m.Connectors, m.Workflows)
	}
	// Each agent checks as one: the store has both toolsets.
	s := financeStore(t)
	for _, a := range m.Agents {
		if err := agentfile.Check(context.Background(), a, &agentfile.Options{Store: s}); err != nil && !strings.Contains(err.Error(), `needs "api_token"`) {
			t.Errorf("%s: %v", a.Name, err)
		}
	}

	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"unknown resource", "kind: manifest\nresources: {gateways: []}\n", []string{`2:13: unknown key "gateways" in resources; known keys: models, connectors, toolsets, agents, workflows`}},
		{"not a list", "kind: manifest\nresources: {agents: {a: b}}\n", []string{"2:21: resources.agents must be a list, not a map"}},
		{"agent twice", "kind: manifest\nresources:\n  agents:\n    - {name: a}\n    - {name: a}\n", []string{`5:7: agent "a" is in resources.agents twice (first at line 4)`}},
		{"toolset twice", "kind: manifest\nresources:\n  toolsets:\n    - {name: t}\n    - {name: t}\n", []string{`5:7: toolset "t" is in resources.toolsets twice (first at line 4)`}},
		{"agent of another kind", "kind: manifest\nresources:\n  agents:\n    - {kind: toolset, name: a}\n", []string{`4:14: kind is "toolset"; an agent document has kind agent`}},
		{"agent not a map", "kind: manifest\nresources:\n  agents: [a]\n", []string{"3:12: an agent of resources.agents must be a map, not a string"}},
		{"agent problems", "kind: manifest\nresources:\n  agents:\n    - {name: a, spec: {tools: [{tool_type: openapi}]}}\n", []string{`4:44: tool_type "openapi" is not supported here: ` +
			"spec.tools takes builtin entries naming a tool of a package as TOOLSET__TOOL (such as finance-tools__market_get_technicals) and mcp entries (connection_params type stdio or streamable-http); builtin-group entries are noted and left out"}},
		{"unknown key", "kind: manifest\nname: m\n", []string{`2:1: unknown key "name" in the manifest; known keys: kind, resources`}},
		{"model too deep", "kind: manifest\nresources:\n  models: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n", []string{"3:43: a configuration value is nested more than 32 levels deep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agentfile.ParseDocument([]byte(tc.file), "m.yaml")
			if got := lines(t, err); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestWarningsComeWithProblems: a document refused for its problems
// still says its warnings, apart.
func TestWarningsComeWithProblems(t *testing.T) {
	_, err := agentfile.Parse([]byte("kind: agent\nname: a\nspec:\n  deploy: true\n  model: x\n"), "a.yaml")
	var ce *agentfile.CheckError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || len(ce.Warnings) != 1 || ce.Warnings[0].Line != 4 || strings.Contains(err.Error(), "acted on") {
		t.Fatalf("error %v, %+v", err, ce)
	}
}
