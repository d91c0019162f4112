package einotoolset_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/einotoolset"
)

type exampleArgs struct {
	ID int `json:"id" jsonschema:"order ID"`
}

// loop compiles an agent loop: the model node, with the tools infos
// gives for the step, then tools while the model calls tools.
func loop(ctx context.Context, m model.ToolCallingChatModel, infos func(ctx context.Context) ([]*schema.ToolInfo, error),
	tools func(ctx context.Context, msg *schema.Message) ([]*schema.Message, error)) (compose.Runnable[[]*schema.Message, *schema.Message], error) {
	g := compose.NewGraph[[]*schema.Message, *schema.Message]()
	_ = g.AddLambdaNode("model", compose.InvokableLambda(func(ctx context.Context, in []*schema.Message) (*schema.Message, error) {
		ti, err := infos(ctx)
		if err != nil {
			return nil, err
		}
		bound, err := m.WithTools(ti)
		if err != nil {
			return nil, err
		}
		return bound.Generate(ctx, in)
	}))
	_ = g.AddLambdaNode("tools", compose.InvokableLambda(tools))
	_ = g.AddEdge(compose.START, "model")
	_ = g.AddBranch("model", compose.NewGraphBranch(func(_ context.Context, msg *schema.Message) (string, error) {
		if len(msg.ToolCalls) > 0 {
			return "tools", nil
		}
		return compose.END, nil
	}, map[string]bool{"tools": true, compose.END: true}))
	_ = g.AddEdge("tools", "model")
	return g.Compile(ctx)
}

// exampleModel looks order 7 up, then answers.
func exampleModel() *scripted {
	return newScripted(calls(call("c1", "lookup", `{"id":7}`)), answer("done"))
}

// show prints the tools each step offered, and what the tool said.
func show(m *scripted, err error) {
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, names := range *m.offered {
		fmt.Printf("  step %d offered: %s\n", i, strings.Join(names, ", "))
	}
	fmt.Println("  the tool said:", (*m.seen)[1]["c1"])
}

// The same agent twice: with a tool of Eino's own in a fixed ToolsNode,
// then with the library's toolsets, a turn per step, where a refund tool
// is shown to staff only (a value of the run).
func ExampleNew() {
	ctx := context.Background()
	lookup := func(_ context.Context, in exampleArgs) (string, error) {
		return fmt.Sprintf("order %d: shipped", in.ID), nil
	}
	input := []*schema.Message{schema.UserMessage("where is order 7?")}

	// Without the bridge: an Eino tool, the same every step.
	einoLookup, err := utils.InferTool("lookup", "Look an order up.", lookup)
	if err != nil {
		fmt.Println(err)
		return
	}
	tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{einoLookup}})
	if err != nil {
		fmt.Println(err)
		return
	}
	info, _ := einoLookup.Info(ctx)
	m := exampleModel()
	r, err := loop(ctx, m, func(context.Context) ([]*schema.ToolInfo, error) { return []*schema.ToolInfo{info}, nil },
		func(ctx context.Context, msg *schema.Message) ([]*schema.Message, error) { return tn.Invoke(ctx, msg) })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("Eino tool:")
	_, err = r.Invoke(ctx, input)
	show(m, err)

	// With the bridge: the library's toolsets, a turn of the run per step.
	role := toolset.NewKey[string]("role")
	orders := toolset.NewFunction(toolset.NewTool("lookup", "Look an order up.", lookup))
	refunds := toolset.NewFunction(toolset.NewTool("refund", "Refund an order.",
		func(context.Context, exampleArgs) (string, error) { return "refunded", nil })).
		Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) { return role.Get(ctx) == "staff", nil })
	ts := einotoolset.New("assistant", orders, refunds)
	for _, who := range []string{"staff", "guest"} {
		m := exampleModel()
		r, err := loop(ctx, m, func(ctx context.Context) ([]*schema.ToolInfo, error) {
			step, err := ts.Step(ctx)
			if err != nil {
				return nil, err
			}
			return step.Infos, nil
		}, ts.RunTools)
		if err != nil {
			fmt.Println(err)
			return
		}
		run := toolset.NewRun("request-"+who, toolset.WithValue(role, who))
		rctx := toolset.NewContext(ctx, run)
		fmt.Printf("library toolsets, %s:\n", who)
		_, err = r.Invoke(rctx, input)
		show(m, err)
		ts.Forget(rctx)
		run.End()
	}
	// Output:
	// Eino tool:
	//   step 0 offered: lookup
	//   step 1 offered: lookup
	//   the tool said: order 7: shipped
	// library toolsets, staff:
	//   step 0 offered: lookup, refund
	//   step 1 offered: lookup, refund
	//   the tool said: order 7: shipped
	// library toolsets, guest:
	//   step 0 offered: lookup
	//   step 1 offered: lookup
	//   the tool said: order 7: shipped
}
