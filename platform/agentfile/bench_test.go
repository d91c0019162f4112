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
