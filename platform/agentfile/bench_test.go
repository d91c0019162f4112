package agentfile_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform/agentfile"
)

// BenchmarkTurn measures one turn's BuildTools over an agent of 100 local
// tools, composed as a file says (prefix and roles), with an entry policy
// (each tool offered again with a timeout) and without.
func BenchmarkTurn(b *testing.B) {
	type args struct {
		ID string `json:"id"`
	}
	var tools []toolset.Tool
	for i := range 100 {
		tools = append(tools, toolset.NewTool(fmt.Sprintf("tool%03d", i), "A tool.",
			func(context.Context, args) (string, error) { return "ok", nil }))
	}
	local := map[string]toolset.Toolset{"orders": toolset.NewFunction(tools...)}
	for _, c := range []struct{ name, entry string }{
		{"composed", "prefix: orders\n    roles: [staff]"},
		{"policy", "prefix: orders\n    roles: [staff]\n    timeout: 30s"},
	} {
		b.Run(c.name, func(b *testing.B) {
			f, err := agentfile.Parse([]byte("name: a\ntoolsets:\n  - local: orders\n    "+c.entry+"\n"), "agent.yaml")
			if err != nil {
				b.Fatal(err)
			}
			a, err := f.Resolve(context.Background(), &agentfile.Options{Local: local})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			run := toolset.NewRun("bench", toolset.WithValue(agentfile.Role, "staff"))
			defer run.End()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				list, err := toolset.BuildTools(run.Turn(ctx), a.Name, a.Toolsets...)
				if err != nil || list.Len() != 100 {
					b.Fatal(err, list.Len())
				}
			}
		})
	}
}

// A steady turn of an entry with policies allocates what the same turn
// composed only does: the policies are applied once per tool, not per
// turn.
func TestPolicyTurnAllocatesAsComposed(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("allocation counts")
	}
	type args struct {
		ID string `json:"id"`
	}
	var tools []toolset.Tool
	for i := range 100 {
		tools = append(tools, toolset.NewTool(fmt.Sprintf("tool%03d", i), "A tool.",
			func(context.Context, args) (string, error) { return "ok", nil }))
	}
	local := map[string]toolset.Toolset{"orders": toolset.NewFunction(tools...)}
	allocs := func(entry string) float64 {
		f, err := agentfile.Parse([]byte("name: a\ntoolsets:\n  - local: orders\n    "+entry+"\n"), "agent.yaml")
		if err != nil {
			t.Fatal(err)
		}
		a, err := f.Resolve(context.Background(), &agentfile.Options{Local: local})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		run := toolset.NewRun("allocs", a.WithRole("staff"))
		defer run.End()
		turn := func() {
			list, err := toolset.BuildTools(run.Turn(context.Background()), a.Name, a.Toolsets...)
			if err != nil || list.Len() != 100 {
				t.Fatal(err, list.Len())
			}
		}
		turn()
		return testing.AllocsPerRun(20, turn)
	}
	composed := allocs("prefix: orders\n    roles: [staff]")
	policy := allocs("prefix: orders\n    roles: [staff]\n    timeout: 30s\n    maxFailures: 3\n    cache: {ttl: 1m}")
	if policy != composed {
		t.Errorf("a steady turn with policies allocates %v times, composed only %v", policy, composed)
	}
}
