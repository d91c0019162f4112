package agentfile_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// guarded is the program's toolset of one tool, payout, with the
// program's own guards: it shows only to runs whose "scopes" value holds
// "payouts", and every call waits for a human. runs counts its calls.
func guarded(runs *atomic.Int32) map[string]toolset.Toolset {
	scopes := toolset.NewKey[[]string]("scopes")
	payout := toolset.NewTool("payout", "Pay a customer out.", func(ctx context.Context, in orderArgs) (string, error) {
		runs.Add(1)
		return "paid " + in.ID, nil
	},
		toolset.WithEnabled(func(ctx context.Context, _ toolset.Tool) (bool, error) {
			return slices.Contains(scopes.Get(ctx), "payouts"), nil
		}),
		toolset.WithApprovalRequired(toolset.Always),
	)
	return map[string]toolset.Toolset{"payments": toolset.NewFunction(payout), "payments-own": ownToolset{payout}}
}

// ownToolset is a toolset of the program's own type, as a store's
// packaged toolset is: its GetTools gives its tools as they were made.
type ownToolset []toolset.Tool

func (o ownToolset) GetTools(context.Context) ([]toolset.Tool, error) { return o, nil }

// TestEntryPolicyDoesNotShowAToolItsOwnerHides gives the program's
// toolset a policy in the file: the tool must still be hidden from the
// runs its own predicate hides it from, and a call of it must fail.
func TestEntryPolicyDoesNotShowAToolItsOwnerHides(t *testing.T) {
	for _, local := range []string{"payments", "payments-own"} {
		t.Run(local, func(t *testing.T) { testEntryPolicyHides(t, local) })
	}
}

func testEntryPolicyHides(t *testing.T, local string) {
	var runs atomic.Int32
	a := resolve(t, "name: a\ntoolsets:\n  - local: "+local+"\n    timeout: 30s\n", &agentfile.Options{Local: guarded(&runs)})
	run := toolset.NewRun("no-scopes")
	defer run.End()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if got := tools.Names(); len(got) != 0 {
		t.Errorf("a run without the scope is shown %v", got)
	}
	call := toolset.ToolCall{ID: "1", Name: "payout", Args: json.RawMessage(`{"id":"7"}`)}
	if _, err := tools.Execute(turn, call); err == nil {
		t.Error("a run without the scope called the tool")
	}
}

// TestEntryCacheDoesNotAnswerForACallThatNeedsApproval caches the
// results of a tool whose every call waits for a human: a second run's
// call with the same arguments must wait for its own approval, not get
// the first run's result.
func TestEntryCacheDoesNotAnswerForACallThatNeedsApproval(t *testing.T) {
	var runs atomic.Int32
	a := resolve(t, "name: a\ntoolsets:\n  - local: payments\n    cache: true\n", &agentfile.Options{Local: guarded(&runs)})
	scopes := toolset.WithValue(toolset.NewKey[[]string]("scopes"), []string{"payouts"})
	call := toolset.ToolCall{ID: "1", Name: "payout", Args: json.RawMessage(`{"id":"7"}`)}

	first := toolset.NewRun("first", scopes)
	defer first.End()
	turn := first.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	var ar *toolset.ApprovalRequiredError
	if _, err := tools.Execute(turn, call); !errors.As(err, &ar) {
		t.Fatalf("first call: %v, want an *ApprovalRequiredError", err)
	}
	first.RecordApproval(ar.Call)
	if res, err := tools.Execute(turn, call); err != nil || text(res) != "paid 7" {
		t.Fatalf("approved call: %v, %v", text(res), err)
	}

	second := toolset.NewRun("second", scopes)
	defer second.End()
	turn = second.Turn(context.Background())
	tools, err = toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tools.Execute(turn, call)
	if !errors.As(err, &ar) {
		t.Errorf("another run's call without approval: %v, %v", text(res), err)
	}
}

// TestEntryApprovalOfAToolThatAsksItselfIsGivenOnce asks approval in the
// file for a tool that asks for it too: one recorded approval lets the
// call run, instead of each asking in turn forever.
func TestEntryApprovalOfAToolThatAsksItselfIsGivenOnce(t *testing.T) {
	var runs atomic.Int32
	a := resolve(t, "name: a\ntoolsets:\n  - local: payments\n    approval: true\n", &agentfile.Options{Local: guarded(&runs)})
	run := toolset.NewRun("twice", toolset.WithValue(toolset.NewKey[[]string]("scopes"), []string{"payouts"}))
	defer run.End()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	call := toolset.ToolCall{ID: "1", Name: "payout", Args: json.RawMessage(`{"id":"7"}`)}
	for i := range 3 {
		res, err := tools.Execute(turn, call)
		var ar *toolset.ApprovalRequiredError
		if !errors.As(err, &ar) {
			if err != nil || text(res) != "paid 7" {
				t.Fatalf("call %d: %v, %v", i, text(res), err)
			}
			if i != 1 {
				t.Errorf("the call ran after %d approvals, want 1", i)
			}
			return
		}
		run.RecordApproval(ar.Call)
	}
	t.Fatal("the call never ran")
}

// TestEntryPolicyKeepsAPackagesRequiredScopes gives a policy to a
// package whose tools need a scope: a run without it is still not shown
// them.
func TestEntryPolicyKeepsAPackagesRequiredScopes(t *testing.T) {
	s := openStore(t)
	upload(t, s, "finance", demoPackage(t, nil))
	a := resolve(t, "name: a\ntoolsets:\n  - package: finance\n    config: {required_scopes: payouts}\n    timeout: 30s\n", &agentfile.Options{Store: s})
	run := toolset.NewRun("no-scopes")
	defer run.End()
	tools, err := toolset.BuildTools(run.Turn(context.Background()), a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if got := tools.Names(); len(got) != 0 {
		t.Errorf("a run without the scope is shown %v", got)
	}
	run = toolset.NewRun("scopes", toolset.WithValue(toolpkg.Scopes, []string{"payouts"}))
	defer run.End()
	tools, err = toolset.BuildTools(run.Turn(context.Background()), a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if tools.Len() == 0 {
		t.Error("a run with the scope is shown no tool")
	}
}

// TestCheckReportsToolNamesOfferedTwice checks a file whose entries give
// the model the same tool name twice, which no turn of the agent could
// build: the same package twice, and a rename onto a name the package
// has. Entries shown to different roles may share names.
func TestCheckReportsToolNamesOfferedTwice(t *testing.T) {
	s := openStore(t)
	upload(t, s, "finance", demoPackage(t, nil))
	file := `name: a
toolsets:
  - package: finance
    roles: [staff]
  - package: finance
    roles: [admin]
  - package: finance
    rename: {finance__echo: finance__fail}
    roles: [guest]
  - package: finance
    roles: [staff, guest]
    exclude: [echo]
`
	f, err := agentfile.Parse([]byte(file), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := lines(t, agentfile.Check(context.Background(), f, &agentfile.Options{Store: s}))
	want := []string{
		`8:14: rename makes two tools named "finance__fail"`,
		`10:14: the tool name "finance__big" is offered twice, here and by the toolset at line 3; give one a prefix`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}

	// Entries shown to different roles build in every role's turn.
	f.Toolsets = f.Toolsets[:2]
	a, err := f.Resolve(context.Background(), &agentfile.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, role := range []string{"staff", "admin"} {
		run := toolset.NewRun(role, toolset.WithValue(agentfile.Role, role))
		if _, err := toolset.BuildTools(run.Turn(context.Background()), a.Name, a.Toolsets...); err != nil {
			t.Errorf("role %s: %v", role, err)
		}
		run.End()
	}
}

// TestEntryRateLimitOfAPackageHoldsFromTurnToTurn limits a package's
// tools to one call an hour: a new turn, or a new run, must not start a
// new window.
func TestEntryRateLimitOfAPackageHoldsFromTurnToTurn(t *testing.T) {
	s := openStore(t)
	upload(t, s, "finance", demoPackage(t, nil))
	a := resolve(t, "name: a\ntoolsets:\n  - package: finance\n    rateLimit: {calls: 1, per: 1h, reject: true}\n", &agentfile.Options{Store: s})
	call := toolset.ToolCall{ID: "1", Name: "finance__echo", Args: json.RawMessage(`{"text":"hi"}`)}
	for i := range 3 {
		run := toolset.NewRun("limited")
		turn := run.Turn(context.Background())
		tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tools.Execute(turn, call)
		run.End()
		if i == 0 && err != nil {
			t.Fatalf("first call: %v", err)
		}
		if i > 0 && err == nil {
			t.Fatalf("call %d in a new run was not limited", i+1)
		}
	}
}

// remade is a local toolset of one tool that it makes anew each turn,
// with a description of that turn, as a store's toolset does for a new
// version; the tool search fails, the tool ping answers.
type remade struct {
	name  string
	turns atomic.Int32
}

func (r *remade) GetTools(context.Context) ([]toolset.Tool, error) {
	n := r.turns.Add(1)
	desc := "Version " + string(rune('0'+n%10)) + "."
	return []toolset.Tool{toolset.NewRawTool(r.name, desc, nil, func(context.Context, json.RawMessage) (any, error) {
		if r.name == "search" {
			return nil, toolset.NewModelError("the index is down")
		}
		return "pong", nil
	})}, nil
}

// The file's maxFailures and rateLimit bind a tool that its toolset makes
// anew (a new definition each turn): the tool made in front of it keeps
// the budget and the window of the one before.
func TestEntryPoliciesBindAToolMadeAnew(t *testing.T) {
	file := "name: a\ntoolsets:\n  - local: searcher\n    maxFailures: 2\n  - local: pinger\n    rateLimit: {calls: 1, per: 1h, reject: true}\n"
	local := map[string]toolset.Toolset{"searcher": &remade{name: "search"}, "pinger": &remade{name: "ping"}}
	a := resolve(t, file, &agentfile.Options{Local: local})
	run := toolset.NewRun("anew")
	defer run.End()
	ctx := context.Background()
	for i := range 2 {
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
		if err != nil {
			t.Fatal(err)
		}
		if got := tools.Names(); !slices.Contains(got, "search") {
			t.Fatalf("turn %d: %v", i, got)
		}
		if _, err := tools.Execute(turn, toolset.ToolCall{Name: "search", Args: json.RawMessage(`{}`)}); err == nil {
			t.Fatalf("turn %d: search did not fail", i)
		}
		_, err = tools.Execute(turn, toolset.ToolCall{Name: "ping", Args: json.RawMessage(`{}`)})
		var rl *toolset.RateLimitError
		if i == 0 && err != nil || i == 1 && !errors.As(err, &rl) {
			t.Fatalf("turn %d: ping: %v (the second, made anew, has the window of the first)", i, err)
		}
	}
	tools, err := toolset.BuildTools(run.Turn(ctx), a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if got := tools.Names(); slices.Contains(got, "search") {
		t.Fatalf("search failed in two turns, as two tools, and is not spent: %v", got)
	}
}
