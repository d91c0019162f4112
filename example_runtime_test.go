package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gotoolset/toolset"
)

type priceArgs struct {
	Symbol string `json:"symbol" jsonschema:"Ticker symbol"`
}

func ExampleWithCache() {
	lookups := 0
	price := toolset.NewTool("price", "Get a stock price.", func(_ context.Context, in priceArgs) (string, error) {
		lookups++
		return in.Symbol + ": 101.5", nil
	}, toolset.WithCache(toolset.CachePolicy{TTL: time.Minute, MaxEntries: 100}))

	// The prefixed copy shares the cache with the original.
	ctx := context.Background()
	tools, _ := toolset.BuildTools(ctx, "trader", toolset.NewFunction(price).Prefixed("market"))
	tools.Execute(ctx, toolset.ToolCall{Name: "market_price", Args: json.RawMessage(`{"symbol":"ACME"}`)})
	res, _ := tools.Execute(ctx, toolset.ToolCall{Name: "market_price", Args: json.RawMessage(`{ "symbol" : "ACME" }`)})
	res2, _ := price.Execute(ctx, toolset.ToolCall{Args: json.RawMessage(`{"symbol":"ACME"}`)})
	fmt.Println(res, res2, lookups, price.CacheStats())
	// Output:
	// ACME: 101.5 ACME: 101.5 1 {2 1}
}

func ExampleWithRateLimit() {
	send := toolset.NewTool("send_sms", "Send a text message.", func(context.Context, struct{}) (string, error) {
		return "sent", nil
	}, toolset.WithRateLimit(toolset.RateLimit{Requests: 2, Interval: time.Hour, Reject: true}))

	// A call never waits for its turn past its context's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		res, err := send.Execute(ctx, toolset.ToolCall{Args: nil})
		if msg, ok := toolset.ErrorText(err); ok {
			fmt.Println("model sees:", msg)
			continue
		}
		fmt.Println(res)
	}
	// Output:
	// sent
	// sent
	// model sees: tool "send_sms" is rate limited; try again in 30m0s
}

func ExampleWithTimeout() {
	slow := toolset.NewTool("crawl", "Crawl a site.", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-time.After(5 * time.Second): // the crawl
			return "done", nil
		case <-ctx.Done(): // cancelled at the deadline
			return "", ctx.Err()
		}
	}, toolset.WithTimeout(20*time.Millisecond, toolset.TimeoutTellModel))

	_, err := slow.Execute(context.Background(), toolset.ToolCall{Args: nil})
	msg, forModel := toolset.ErrorText(err)
	fmt.Println(forModel, msg)
	// Output:
	// true tool "crawl" timed out after 20ms; try again with a smaller request, or another approach
}

func ExampleNewModelError() {
	lookup := toolset.NewTool("find_user", "Find a user by email.", func(_ context.Context, in struct {
		Email string `json:"email"`
	}) (string, error) {
		if in.Email == "" {
			return "", toolset.NewModelError("give the user's email address")
		}
		return "user 42", nil
	})
	_, err := lookup.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"email":""}`)})
	msg, _ := toolset.ErrorText(err)
	fmt.Println(msg)
	// Output:
	// give the user's email address
}

func ExampleWithMaxFailures() {
	flaky := toolset.NewTool("flaky", "Often fails.", func(context.Context, struct{}) (string, error) {
		return "", toolset.NewModelError("try later")
	}, toolset.WithMaxFailures(2))

	run := toolset.NewRun("r1")
	defer run.End()
	for range 3 {
		ctx := run.Turn(context.Background())
		tools, _ := toolset.BuildTools(ctx, "a", flaky, tool("steady"))
		fmt.Println(toolset.FromContext(ctx).Step(), tools.Names())
		tools.Execute(ctx, toolset.ToolCall{Name: "flaky"})
	}
	// Output:
	// 0 [flaky steady]
	// 1 [flaky steady]
	// 2 [steady]
}

func ExampleWithEnabled() {
	plan := toolset.NewKey[string]("plan")
	billing := toolset.NewTool("billing", "Billing tools.", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithEnabled(func(ctx context.Context, _ toolset.Tool) (bool, error) {
			return plan.Get(ctx) == "pro", nil
		}))
	for _, p := range []string{"pro", "free"} {
		run := toolset.NewRun("", toolset.WithValue(plan, p))
		tools, _ := toolset.BuildTools(run.Turn(context.Background()), "a", billing, tool("help"))
		fmt.Println(p, tools.Names())
		run.End()
	}
	// Output:
	// pro [billing help]
	// free [help]
}

func ExampleWithPrepare() {
	search := toolset.NewTool("search", "Search the knowledge base.", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithPrepare(func(ctx context.Context, t toolset.Tool) (toolset.Tool, bool, error) {
			tenant, _ := toolset.FromContext(ctx).Value("tenant").(string)
			t.Description += " Only " + tenant + "'s documents are searched."
			return t, true, nil
		}))
	run := toolset.NewRun("", toolset.WithValues(map[string]any{"tenant": "Acme"}))
	defer run.End()
	tools, _ := toolset.BuildTools(run.Turn(context.Background()), "a", search)
	t, _ := tools.Lookup("search")
	fmt.Println(t.Description)
	// Output:
	// Search the knowledge base. Only Acme's documents are searched.
}

func ExampleValidate() {
	geo := toolset.NewTool("geocode", "", func(context.Context, struct{}) (string, error) { return "", nil },
		toolset.WithRequiredEnv("EXAMPLE_GEO_API_KEY"))
	os.Unsetenv("EXAMPLE_GEO_API_KEY")
	fmt.Println(toolset.Validate(context.Background(), toolset.NewFunction(geo)))
	// Output:
	// toolset: missing or empty environment variables:
	//   - EXAMPLE_GEO_API_KEY (needed by tool "geocode")
}

func ExampleWithApprovalRequired() {
	refund := toolset.NewTool("refund", "Refund an order.", func(_ context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		return fmt.Sprintf("refunded %d", in.Amount), nil
	}, toolset.WithApprovalRequired(toolset.Always))

	run := toolset.NewRun("r1")
	defer run.End()
	ctx := run.Turn(context.Background())
	tools, _ := toolset.BuildTools(ctx, "support", refund)
	call := toolset.ToolCall{ID: "call_1", Name: "refund", Args: json.RawMessage(`{"amount":30}`)}

	_, err := tools.Execute(ctx, call)
	var pending *toolset.ApprovalRequiredError
	if errors.As(err, &pending) { // not for the model: the loop stops and asks
		fmt.Println("ask a human about", pending.Call.ID)
		run.RecordApproval(pending.Call)
	}
	res, _ := tools.Execute(ctx, call)
	fmt.Println(res)
	// Output:
	// ask a human about call_1
	// refunded 30
}

func ExampleWithMiddleware() {
	logCalls := func(next toolset.Handler) toolset.Handler {
		return func(ctx context.Context, c toolset.ToolCall) (any, error) {
			res, err := next(ctx, c)
			fmt.Printf("%s(%s) = %v\n", c.Name, c.Args, res)
			return res, err
		}
	}
	echo := toolset.NewTool("echo", "", func(_ context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		return in.S, nil
	})
	// Middleware on a Wrapper applies to every tool it yields.
	logged := toolset.Wrapper{Wrapped: toolset.NewFunction(echo), Middleware: []toolset.Middleware{logCalls}}
	tools, _ := toolset.BuildTools(context.Background(), "a", toolset.NewPrefixed(logged, "x"))
	tools.Execute(context.Background(), toolset.ToolCall{Name: "x_echo", Args: json.RawMessage(`{"s":"hi"}`)})
	// Output:
	// x_echo({"s":"hi"}) = hi
}

func ExampleNewAgentTool() {
	research := toolset.NewAgentTool(researcher{})
	tools, _ := toolset.BuildTools(context.Background(), "lead", toolset.NewFunction(research).Prefixed("team"))
	res, _ := tools.Execute(context.Background(), toolset.ToolCall{Name: "team_researcher", Args: json.RawMessage(`{"prompt":"tides"}`)})
	t, _ := tools.Lookup("team_researcher")
	fmt.Println(res, "/", t.DelegateAgent().Name())
	// Output:
	// findings on tides / researcher
}

func ExampleNewToolSearch() {
	deferred := func(name, desc string) toolset.Tool {
		return toolset.NewTool(name, desc, func(context.Context, struct{}) (string, error) { return name, nil }, toolset.WithDeferred())
	}
	catalog := toolset.NewFunction(
		deferred("create_invoice", "Create an invoice."),
		deferred("refund_payment", "Refund a payment."),
	)
	search := toolset.NewToolSearch(catalog)

	run := toolset.NewRun("r1")
	defer run.End()
	for step := range 2 {
		ctx := run.Turn(context.Background())
		tools, _ := toolset.BuildTools(ctx, "billing", catalog, search)
		fmt.Println(tools.Names())
		if step == 0 {
			res, _ := tools.Execute(ctx, toolset.ToolCall{Name: "tool_search", Args: json.RawMessage(`{"query":"refund"}`)})
			text, _ := toolset.ResultText(res)
			fmt.Println(text)
		}
	}
	// Output:
	// [tool_search]
	// {"tools":[{"name":"refund_payment","description":"Refund a payment."}],"note":"These tools are available from your next step."}
	// [refund_payment tool_search]
}
