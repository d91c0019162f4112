package agentfile_test

import (
	"context"
	"fmt"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform/agentfile"
)

// An agent whose order tools only staff see, one of them behind an
// approval, and a typo the check reports with its position.
func Example() {
	type args struct {
		ID string `json:"id"`
	}
	lookup := toolset.NewTool("lookup", "Look an order up.", func(ctx context.Context, in args) (string, error) {
		return "order " + in.ID + ": shipped", nil
	})
	answer := toolset.NewTool("answer", "Answer a common question.", func(ctx context.Context, in args) (string, error) {
		return "see the FAQ", nil
	})
	opts := &agentfile.Options{Local: map[string]toolset.Toolset{
		"orders": toolset.NewFunction(lookup),
		"faq":    toolset.NewFunction(answer),
	}}

	file := []byte(`
name: support
toolsets:
  - local: faq
  - local: orders
    prefix: orders
    roles: [staff]
    approval: true
`)
	f, err := agentfile.Parse(file, "support.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	agent, err := f.Resolve(context.Background(), opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer agent.Close()
	for _, role := range []string{"staff", "guest"} {
		run := toolset.NewRun("req-"+role, toolset.WithValue(agentfile.Role, role))
		tools, err := toolset.BuildTools(run.Turn(context.Background()), agent.Name, agent.Toolsets...)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(role+":", tools.Names())
		run.End()
	}

	_, err = agentfile.Parse([]byte("name: support\ntoolsets:\n  - local: orders\n    timeout: 30\n"), "typo.yaml")
	fmt.Println(err)
	// Output:
	// staff: [answer orders_lookup]
	// guest: [answer]
	// typo.yaml:4:14: timeout must be a duration such as "30s" or "5m", not a number
}
