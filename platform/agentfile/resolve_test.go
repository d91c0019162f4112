package agentfile_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/mcptoolset"
	"github.com/gotoolset/toolset/platform/agentfile"
)

type orderArgs struct {
	ID string `json:"id" jsonschema:"The order's ID"`
}

// registry is the program's local toolsets: orders (lookup, cancel,
// wait) and faq (answer). calls counts the lookups that ran.
func registry(calls *atomic.Int32) map[string]toolset.Toolset {
	lookup := toolset.NewTool("lookup", "Look an order up.", func(ctx context.Context, in orderArgs) (string, error) {
		if calls != nil {
			calls.Add(1)
		}
		return "order " + in.ID + ": shipped", nil
	})
	cancel := toolset.NewTool("cancel", "Cancel an order.", func(ctx context.Context, in orderArgs) (string, error) {
		return "order " + in.ID + " cancelled", nil
	})
	wait := toolset.NewTool("wait", "Wait for the warehouse.", func(ctx context.Context, in orderArgs) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	answer := toolset.NewTool("answer", "Answer a frequently asked question.", func(ctx context.Context, in struct {
		Question string `json:"question"`
	}) (string, error) {
		return "see the FAQ", nil
	})
	return map[string]toolset.Toolset{
		"orders": toolset.NewFunction(lookup, cancel, wait),
		"faq":    toolset.NewFunction(answer),
	}
}

// resolve parses and resolves an agent file against the registry.
func resolve(t *testing.T, file string, opts *agentfile.Options) *agentfile.Agent {
	t.Helper()
	f, err := agentfile.Parse([]byte(file), "agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Resolve(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	})
	return a
}

// names builds the turn's tools and returns their names.
func names(t *testing.T, turn context.Context, a *agentfile.Agent) []string {
	t.Helper()
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	return tools.Names()
}

func TestRolesShowToolsetsOnlyToTheirRuns(t *testing.T) {
	a := resolve(t, `
name: support
toolsets:
  - local: faq
  - local: orders
    prefix: orders
    rename: {lookup: find}
    roles: [staff, admin]
`, &agentfile.Options{Local: registry(nil)})
	for _, tc := range []struct {
		role string
		want []string
	}{
		{"staff", []string{"answer", "orders_find", "orders_cancel", "orders_wait"}},
		{"admin", []string{"answer", "orders_find", "orders_cancel", "orders_wait"}},
		{"guest", []string{"answer"}},
		{"", []string{"answer"}},
	} {
		var opts []toolset.RunOption
		if tc.role != "" {
			opts = append(opts, toolset.WithValue(agentfile.Role, tc.role))
		}
		run := toolset.NewRun("run-"+tc.role, opts...)
		if got := names(t, run.Turn(context.Background()), a); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("role %q sees %v, want %v", tc.role, got, tc.want)
		}
		run.End()
	}
}

// A file's roleKey names the run value its roles match: the default key no
// longer shows the entry, the named one does, and Agent.WithRole sets
// whichever the file names.
func TestRoleKeyNamesTheRunValueRolesMatch(t *testing.T) {
	a := resolve(t, `
name: support
roleKey: plan
toolsets:
  - local: faq
  - local: orders
    roles: [pro]
`, &agentfile.Options{Local: registry(nil)})
	if a.RoleKey != "plan" {
		t.Fatalf("RoleKey = %q, want plan", a.RoleKey)
	}
	all := []string{"answer", "lookup", "cancel", "wait"}
	for _, tc := range []struct {
		name string
		opt  toolset.RunOption
		want []string
	}{
		{"the default key", toolset.WithValue(agentfile.Role, "pro"), []string{"answer"}},
		{"the named key", toolset.WithValue(toolset.NewKey[string]("plan"), "pro"), all},
		{"WithRole", a.WithRole("pro"), all},
		{"WithRole of another role", a.WithRole("free"), []string{"answer"}},
	} {
		run := toolset.NewRun("run", tc.opt)
		if got := names(t, run.Turn(context.Background()), a); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s sees %v, want %v", tc.name, got, tc.want)
		}
		run.End()
	}
	// Without roleKey, WithRole sets Role.
	b := resolve(t, "name: b\ntoolsets:\n  - local: orders\n    roles: [pro]\n", &agentfile.Options{Local: registry(nil)})
	run := toolset.NewRun("run", b.WithRole("pro"))
	defer run.End()
	if got := agentfile.Role.Get(run.Turn(context.Background())); got != "pro" {
		t.Errorf("WithRole without roleKey set Role to %q", got)
	}
}

func TestRoleKeyMustBeAName(t *testing.T) {
	for _, doc := range []string{"name: a\nroleKey: \"\"\ntoolsets: []\n", "name: a\nroleKey: [x]\ntoolsets: []\n"} {
		_, err := agentfile.Parse([]byte(doc), "agent.yaml")
		if err == nil || !strings.Contains(err.Error(), "roleKey") {
			t.Errorf("%q: err = %v, want one naming roleKey", doc, err)
		}
	}
}

func TestPrefixEndingInSeparatorIsUsedAsItIs(t *testing.T) {
	a := resolve(t, "name: a\ntoolsets:\n  - local: faq\n    prefix: help__\n", &agentfile.Options{Local: registry(nil)})
	if got := names(t, context.Background(), a); !reflect.DeepEqual(got, []string{"help__answer"}) {
		t.Fatalf("names %v", got)
	}
}

func TestDeferredToolsAreBehindTheToolSearch(t *testing.T) {
	a := resolve(t, `
name: support
toolsets:
  - local: faq
  - local: orders
    deferred: true
`, &agentfile.Options{Local: registry(nil)})
	run := toolset.NewRun("deferred")
	defer run.End()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if got := tools.Names(); !reflect.DeepEqual(got, []string{"answer", "tool_search"}) {
		t.Fatalf("first turn: %v", got)
	}
	res, err := tools.Execute(turn, toolset.ToolCall{ID: "1", Name: "tool_search", Args: json.RawMessage(`{"query":"cancel an order","top_k":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(res), "cancel") {
		t.Fatalf("search found %s", text(res))
	}
	got := names(t, run.Turn(context.Background()), a)
	if !reflect.DeepEqual(got, []string{"answer", "cancel", "tool_search"}) {
		t.Fatalf("after the search: %v", got)
	}
}

func TestTimeoutOfAnEntryFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := resolve(t, "name: a\ntoolsets:\n  - local: orders\n    timeout: 2s\n", &agentfile.Options{Local: registry(nil)})
		run := toolset.NewRun("timeout")
		defer run.End()
		turn := run.Turn(context.Background())
		tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = tools.Execute(turn, toolset.ToolCall{ID: "1", Name: "wait", Args: json.RawMessage(`{"id":"7"}`)})
		var te *toolset.TimeoutError
		if !errors.As(err, &te) || te.After != 2*time.Second {
			t.Fatalf("error %v (%T), want a *TimeoutError after 2s", err, err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("timed out after %v", d)
		}
		if msg, ok := toolset.ErrorText(err); !ok || !strings.Contains(msg, `"wait" timed out after 2s`) {
			t.Errorf("the model reads %q", msg)
		}
	})
}

func TestApprovalStopsACallUntilApproved(t *testing.T) {
	a := resolve(t, "name: a\ntoolsets:\n  - local: orders\n    approval: true\n", &agentfile.Options{Local: registry(nil)})
	run := toolset.NewRun("approval")
	defer run.End()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	call := toolset.ToolCall{ID: "c1", Name: "cancel", Args: json.RawMessage(`{"id":"7"}`)}
	_, err = tools.Execute(turn, call)
	var ar *toolset.ApprovalRequiredError
	if !errors.As(err, &ar) || ar.Call.Name != "cancel" {
		t.Fatalf("error %v, want an *ApprovalRequiredError", err)
	}
	run.RecordApproval(ar.Call)
	res, err := tools.Execute(turn, call)
	if err != nil || text(res) != "order 7 cancelled" {
		t.Fatalf("after approval: %v, %v", res, err)
	}
}

func TestPoliciesKeepTheirStateFromTurnToTurn(t *testing.T) {
	var calls atomic.Int32
	a := resolve(t, `
name: a
toolsets:
  - local: orders
    cache: {ttl: 1h}
    rateLimit: {calls: 2, per: 1h, reject: true}
`, &agentfile.Options{Local: registry(&calls)})
	run := toolset.NewRun("state")
	defer run.End()
	call := func(id string) error {
		turn := run.Turn(context.Background())
		tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tools.Execute(turn, toolset.ToolCall{ID: "c" + id, Name: "lookup", Args: json.RawMessage(`{"id":"` + id + `"}`)})
		return err
	}
	for _, id := range []string{"1", "1", "1", "2"} {
		if err := call(id); err != nil {
			t.Fatalf("call %s: %v", id, err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the handler ran %d times; the cache should have answered the repeats", n)
	}
	var rl *toolset.RateLimitError
	if err := call("3"); !errors.As(err, &rl) {
		t.Fatalf("third distinct call: %v, want a *RateLimitError", err)
	}
}

func TestMaxFailuresSpendsTheBudget(t *testing.T) {
	a := resolve(t, "name: a\ntoolsets:\n  - local: orders\n    maxFailures: 1\n    timeout: 1ms\n", &agentfile.Options{Local: registry(nil)})
	run := toolset.NewRun("budget")
	defer run.End()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tools.Execute(turn, toolset.ToolCall{ID: "1", Name: "wait", Args: json.RawMessage(`{"id":"1"}`)}); err == nil {
		t.Fatal("wait did not fail")
	}
	if got := names(t, run.Turn(context.Background()), a); !reflect.DeepEqual(got, []string{"lookup", "cancel"}) {
		t.Fatalf("after the failure: %v", got)
	}
}

func TestCheckReportsUnknownLocalToolsets(t *testing.T) {
	f, err := agentfile.Parse([]byte("name: a\ntoolsets:\n  - local: faq\n  - local: billing\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = agentfile.Check(context.Background(), f, &agentfile.Options{Local: registry(nil)})
	if got := lines(t, err); !reflect.DeepEqual(got, []string{`4:12: unknown local toolset "billing"; this program has faq, orders`}) {
		t.Fatalf("problems %q", got)
	}
	if err := agentfile.Check(context.Background(), f, nil); err != nil {
		t.Fatalf("without a registry, local toolsets are not checked: %v", err)
	}
	_, err = f.Resolve(context.Background(), nil)
	if got := lines(t, err); !reflect.DeepEqual(got, []string{
		`3:12: local toolset "faq": this program registers no local toolsets`,
		`4:12: local toolset "billing": this program registers no local toolsets`,
	}) {
		t.Fatalf("Resolve without a registry: %q", got)
	}
}

// mcpServer serves the faq toolset over streamable HTTP on loopback,
// answering only requests that carry the bearer token.
func mcpServer(t *testing.T, token string) string {
	t.Helper()
	srv := mcptoolset.NewServer(registry(nil)["faq"])
	h := srv.HTTPHandler(nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestMCPHeadersTakeSecretsFromTheEnvironment(t *testing.T) {
	url := mcpServer(t, "s3cret")
	file := "name: a\ntoolsets:\n  - mcp:\n      name: help\n      url: " + url + "\n      headers: {Authorization: \"Bearer ${HELP_TOKEN}\"}\n    prefix: help\n"
	env := func(name string) (string, bool) {
		if name == "HELP_TOKEN" {
			return "s3cret", true
		}
		return "", false
	}
	a := resolve(t, file, &agentfile.Options{LookupEnv: env})
	tools, err := toolset.BuildTools(context.Background(), a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if got := tools.Names(); !reflect.DeepEqual(got, []string{"help_answer"}) {
		t.Fatalf("names %v", got)
	}
	res, err := tools.Execute(context.Background(), toolset.ToolCall{Name: "help_answer", Args: json.RawMessage(`{"question":"why"}`)})
	if err != nil || !strings.Contains(text(res), "see the FAQ") {
		t.Fatalf("call: %v, %v", text(res), err)
	}

	f, err := agentfile.Parse([]byte(file), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Resolve(context.Background(), &agentfile.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if got := lines(t, err); !reflect.DeepEqual(got, []string{`3:5: mcp.headers "Authorization": environment variable HELP_TOKEN is not set`}) {
		t.Fatalf("unset variable: %q", got)
	}
}

func TestMCPPoliciesApplyToTheServersTools(t *testing.T) {
	url := mcpServer(t, "t")
	a := resolve(t, "name: a\ntoolsets:\n  - mcp:\n      url: "+url+"\n      headers: {Authorization: Bearer t}\n    approval: true\n", nil)
	run := toolset.NewRun("mcp-approval")
	defer run.End()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tools.Execute(turn, toolset.ToolCall{ID: "1", Name: "answer", Args: json.RawMessage(`{"question":"q"}`)})
	var ar *toolset.ApprovalRequiredError
	if !errors.As(err, &ar) {
		t.Fatalf("error %v, want an *ApprovalRequiredError", err)
	}
}

// text is the model text of a result.
func text(res any) string {
	s, err := toolset.ResultText(res)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}
