// Command runtime shows the tool policies at work across three turns of a
// run: a result cache shared by a tool's prefixed copy, a rate limit that
// tells the model when to retry, a retry budget, and a tool search that
// reveals a deferred tool on the next turn.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/gotoolset/toolset"
)

// QuoteArgs are the arguments of the quote tool.
type QuoteArgs struct {
	Symbol string `json:"symbol" jsonschema:"Ticker symbol, e.g. ACME"`
}

func main() {
	fetches := 0
	quote := toolset.NewTool("quote", "Get the latest price of a stock.",
		func(_ context.Context, in QuoteArgs) (string, error) {
			fetches++
			return fmt.Sprintf("%s trades at 101.50 (fetch #%d)", in.Symbol, fetches), nil
		},
		toolset.WithCache(toolset.CachePolicy{TTL: time.Minute}),
		toolset.WithRateLimit(toolset.RateLimit{Requests: 2, Interval: time.Minute, Reject: true}),
	)
	trade := toolset.NewTool("place_order", "Buy or sell a stock.",
		func(context.Context, QuoteArgs) (string, error) { return "order placed", nil },
		toolset.WithDeferred())
	history := toolset.NewTool("price_history", "Daily price history of a stock.",
		func(context.Context, QuoteArgs) (string, error) { return "[...]", nil },
		toolset.WithDeferred())

	market := toolset.NewFunction(quote).Prefixed("market")
	catalog := toolset.NewFunction(trade, history)
	search := toolset.NewToolSearch(catalog)

	run := toolset.NewRun("run-1")
	defer run.End()
	turn := func() (context.Context, *toolset.ToolList) {
		ctx := run.Turn(context.Background())
		tools, err := toolset.BuildTools(ctx, "trader", market, quote, catalog, search)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("\nturn %d: the model sees %s\n", toolset.FromContext(ctx).Step(), strings.Join(tools.Names(), ", "))
		return ctx, tools
	}
	call := func(ctx context.Context, tools *toolset.ToolList, name, args string) {
		res, err := tools.Execute(ctx, toolset.ToolCall{Name: name, Args: json.RawMessage(args)})
		if msg, ok := toolset.ErrorText(err); ok {
			fmt.Printf("  %s %s -> error for the model: %s\n", name, args, msg)
			return
		} else if err != nil {
			log.Fatal(err)
		}
		text, _ := toolset.ResultText(res)
		fmt.Printf("  %s %s -> %s\n", name, args, text)
	}

	ctx, tools := turn()
	call(ctx, tools, "market_quote", `{"symbol":"ACME"}`)
	call(ctx, tools, "quote", `{ "symbol": "ACME" }`) // same tool, same arguments: a cache hit
	fmt.Printf("  cache: %+v, fetches: %d\n", quote.CacheStats(), fetches)
	call(ctx, tools, "market_quote", `{"symbol":"INIT"}`) // a miss: fetches again
	call(ctx, tools, "quote", `{"symbol":"GLOBEX"}`)      // the third fetch in a minute (hits take no token): over the limit
	call(ctx, tools, "place_order", `{"symbol":"ACME"}`)  // deferred: not available yet
	call(ctx, tools, "tool_search", `{"query":"buy stock order"}`)

	ctx, tools = turn()
	call(ctx, tools, "place_order", `{"symbol":"ACME"}`)

	other := toolset.NewRun("run-2")
	defer other.End()
	tools, _ = toolset.BuildTools(other.Turn(context.Background()), "trader", market, quote, catalog, search)
	fmt.Printf("\nanother run, meanwhile, sees %s\n", strings.Join(tools.Names(), ", "))
}
