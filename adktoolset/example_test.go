package adktoolset_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/adktoolset"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
)

type exampleArgs struct {
	ID int `json:"id" jsonschema:"order ID"`
}

// exampleModel looks order 7 up, then answers with what the tool said.
func exampleModel() *scripted {
	return &scripted{steps: []func(*model.LLMRequest) *genai.Content{
		func(*model.LLMRequest) *genai.Content {
			return calls(call("c1", "lookup", map[string]any{"id": 7}))
		},
		func(req *model.LLMRequest) *genai.Content {
			return answer(fmt.Sprint(responses(req)["c1"]["result"]))
		},
	}}
}

// exampleRun runs a once in a session whose state says role, and prints
// the tools each model step was offered and the answer.
func exampleRun(a agent.Agent, m *scripted, role string) {
	svc := session.InMemoryService()
	ctx := context.Background()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "shop", UserID: "u", SessionID: "s", State: map[string]any{"role": role}}); err != nil {
		fmt.Println(err)
		return
	}
	r, err := runner.New(runner.Config{AppName: "shop", Agent: a, SessionService: svc})
	if err != nil {
		fmt.Println(err)
		return
	}
	var last string
	for ev, err := range r.Run(ctx, "u", "s", genai.NewContentFromText("where is order 7?", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Content != nil && len(ev.Content.Parts) > 0 && ev.Content.Parts[0].Text != "" {
			last = ev.Content.Parts[0].Text
		}
	}
	for i, names := range m.offered {
		fmt.Printf("  step %d offered: %s\n", i, strings.Join(names, ", "))
	}
	fmt.Println("  answer:", last)
}

// The same agent twice: with a tool of ADK's own, then with the library's
// toolsets behind the bridge, where a refund tool is shown to staff only
// (the session state's "role", carried into the run's values).
func ExampleNew() {
	lookup := func(_ context.Context, in exampleArgs) (string, error) {
		return fmt.Sprintf("order %d: shipped", in.ID), nil
	}

	// Without the bridge: an ADK function tool.
	adkLookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Look an order up."},
		func(ctx agent.Context, in exampleArgs) (map[string]any, error) {
			s, err := lookup(ctx, in)
			return map[string]any{"result": s}, err
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := exampleModel()
	a, _ := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{adkLookup}})
	fmt.Println("ADK tool:")
	exampleRun(a, m, "staff")

	// With the bridge: the library's toolsets, composed and filtered per run.
	role := toolset.NewKey[string]("role")
	orders := toolset.NewFunction(toolset.NewTool("lookup", "Look an order up.", lookup))
	refunds := toolset.NewFunction(toolset.NewTool("refund", "Refund an order.",
		func(context.Context, exampleArgs) (string, error) { return "refunded", nil })).
		Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) { return role.Get(ctx) == "staff", nil })
	for _, who := range []string{"staff", "guest"} {
		ts := adktoolset.New("shop", []toolset.Toolset{orders, refunds}, adktoolset.WithStateKeys("role"))
		m := exampleModel()
		a, _ := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Toolsets: []tool.Toolset{ts}})
		fmt.Printf("library toolsets, %s:\n", who)
		exampleRun(a, m, who)
		_ = ts.Close()
	}
	// Output:
	// ADK tool:
	//   step 0 offered: lookup
	//   step 1 offered: lookup
	//   answer: order 7: shipped
	// library toolsets, staff:
	//   step 0 offered: lookup, refund
	//   step 1 offered: lookup, refund
	//   answer: order 7: shipped
	// library toolsets, guest:
	//   step 0 offered: lookup
	//   step 1 offered: lookup
	//   answer: order 7: shipped
}
