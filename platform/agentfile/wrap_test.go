package agentfile_test

import (
	"context"
	"encoding/json"
	"slices"
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
		toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return true, nil }),
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
