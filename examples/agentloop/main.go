// Command agentloop is a complete agent loop on the OpenAI Chat Completions
// API, run by openaitools.RunChatLoop: tools built per turn, parallel tool
// calls run through the turn's set, a bad-argument error fed back to the
// model, and the model's final answer, streamed. With -by-hand it runs the
// same loop written out (handwritten.go), to show what RunChatLoop does. Conversions of large amounts wait for the
// user's approval, and a tool that keeps failing leaves the list once its
// retry budget is spent.
//
// By default it talks to a scripted model served in-process on 127.0.0.1
// (toolsettest.ScriptedModel, which tests use too), so it runs with no API
// key and no network. With OPENAI_API_KEY set it
// talks to the OpenAI API instead (model from OPENAI_MODEL, default
// gpt-4.1-mini).
//
//	go run ./examples/agentloop
//	go run ./examples/agentloop -by-hand
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

const question = "I'm going to Lisbon and Porto with 250 EUR. What's the weather in both, and how much is my money in USD?"

// WeatherArgs are the arguments of get_weather.
type WeatherArgs struct {
	City string `json:"city" jsonschema:"City name, e.g. Lisbon"`
}

// ConvertArgs are the arguments of convert_currency.
type ConvertArgs struct {
	Amount float64 `json:"amount" jsonschema:"description=Amount to convert,minimum=0"`
	From   string  `json:"from" jsonschema:"description=ISO currency code,enum=EUR,enum=USD,enum=GBP"`
	To     string  `json:"to" jsonschema:"description=ISO currency code,enum=EUR,enum=USD,enum=GBP"`
}

// travelTools are the assistant's tools. They sleep a little, as real
// tools wait on the network, so parallel calls show.
func travelTools() []toolset.Toolset {
	weather := toolset.NewTool("get_weather", "Get the current weather in a city.",
		func(ctx context.Context, in WeatherArgs) (string, error) {
			if err := pause(ctx); err != nil {
				return "", err
			}
			temps := map[string]int{"lisbon": 24, "porto": 19}
			t, ok := temps[strings.ToLower(in.City)]
			if !ok {
				return "", toolset.ModelErrorf("no weather data for %q; try Lisbon or Porto", in.City)
			}
			return fmt.Sprintf("%s: %d°C, sunny", in.City, t), nil
		})
	rates := map[string]float64{"EUR": 1, "USD": 1.09, "GBP": 0.86}
	convert := toolset.NewTool("convert_currency", "Convert an amount between currencies.",
		func(ctx context.Context, in ConvertArgs) (string, error) {
			if err := pause(ctx); err != nil {
				return "", err
			}
			v := in.Amount / rates[in.From] * rates[in.To]
			return fmt.Sprintf("%.2f %s = %.2f %s", in.Amount, in.From, math.Round(v*100)/100, in.To), nil
		},
		// Two failed steps and the model must do without the tool.
		toolset.WithMaxFailures(2),
		// Converting more than 200 needs the user's OK.
		toolset.WithApprovalRequired(func(_ context.Context, _ toolset.Tool, args json.RawMessage) (bool, error) {
			var in ConvertArgs
			if err := json.Unmarshal(args, &in); err != nil {
				return false, nil // the call fails validation anyway
			}
			return in.Amount > 200, nil
		}))
	// Refunds are for support staff only: a filter reads the caller's role
	// from the run context each turn, so the traveller never sees the tool.
	refund := toolset.NewFunction(toolset.NewTool("refund_booking", "Refund a booking.",
		func(context.Context, struct {
			BookingID string `json:"booking_id"`
		}) (string, error) {
			return "refunded", nil
		})).Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) {
		return Role.Get(ctx) == "support", nil
	})
	return []toolset.Toolset{weather, convert, refund}
}

// Role is the caller's role, a value of the run.
var Role = toolset.NewKey[string]("role")

func pause(ctx context.Context) error {
	select {
	case <-time.After(300 * time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func main() {
	var byHand bool
	flag.BoolVar(&byHand, "by-hand", false, "run the hand-written loop (handwritten.go) instead of openaitools.RunChatLoop")
	flag.Parse()
	ctx := context.Background()
	var client openai.Client
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4.1-mini"
	}
	if os.Getenv("OPENAI_API_KEY") != "" {
		fmt.Printf("model: %s on the OpenAI API\n", model)
		client = openai.NewClient() // reads OPENAI_API_KEY and OPENAI_BASE_URL
	} else {
		scripted, err := toolsettest.StartScriptedModel(toolsettest.OpenAIChat, script()...)
		if err != nil {
			log.Fatal(err)
		}
		defer scripted.Close()
		model = "scripted"
		fmt.Println("model: scripted, served on " + scripted.URL() + " (set OPENAI_API_KEY to use the OpenAI API)")
		client = scriptedClient(scripted)
	}
	if byHand {
		answer, err := runByHand(ctx, os.Stdout, client, model)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("\nassistant:", answer)
		return
	}
	if _, err := run(ctx, os.Stdout, client, model); err != nil {
		log.Fatal(err)
	}
}

// run is the agent loop, run by openaitools.RunChatLoop: each step
// builds the tools for that turn, asks the model (its text streamed to
// out), and runs its tool calls, until the model answers in text. Then it
// prints what the loop did, from the conversation it returns.
func run(ctx context.Context, out io.Writer, client openai.Client, model string) (string, error) {
	// One run for the user's request: made once, ended when it is over.
	rc := toolset.NewRun("run-1", toolset.WithValue(Role, "traveller"))
	defer rc.End()
	fmt.Fprintln(out, "user:", question)
	streamed := false
	res, err := openaitools.RunChatLoop(ctx, client, openai.ChatCompletionNewParams{
		Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are a travel assistant. Use the tools; call independent tools in parallel."),
			openai.UserMessage(question),
		},
	}, rc, "travel-assistant", travelTools(),
		openaitools.WithMaxSteps(6),
		openaitools.WithStream(func(delta string) {
			if !streamed {
				fmt.Fprint(out, "\nassistant: ")
				streamed = true
			}
			fmt.Fprint(out, delta)
		}),
		openaitools.WithCallOptions(openaitools.WithApprover(askUser(out))))
	if streamed {
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "\nwhat the loop did, in %s:\n", plural(res.Steps, "step"))
	for _, m := range res.Messages {
		switch {
		case m.OfAssistant != nil:
			for _, c := range m.OfAssistant.ToolCalls {
				if f := c.OfFunction; f != nil {
					fmt.Fprintf(out, "  -> %s %s %s\n", f.ID, f.Function.Name, f.Function.Arguments)
				}
			}
		case m.OfTool != nil:
			text := strings.ReplaceAll(m.OfTool.Content.OfString.Value, "\n", "\n     ")
			fmt.Fprintf(out, "  <- %s %s\n", m.OfTool.ToolCallID, text)
		}
	}
	return res.Text, err
}

// askUser puts a call that needs approval to the user; here, the user
// approves on the spot.
func askUser(out io.Writer) toolset.Approver {
	var mu sync.Mutex // calls run side by side; ask one question at a time
	return func(_ context.Context, call toolset.ToolCall) (bool, string, error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "  ?? %s %s %s needs the user's approval: approved\n", call.ID, call.Name, call.Args)
		return true, "", nil
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// scriptedClient is an OpenAI client of the scripted model.
func scriptedClient(m *toolsettest.ScriptedModel) openai.Client {
	return openai.NewClient(option.WithBaseURL(m.BaseURL()), option.WithHTTPClient(m.Client()),
		option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

// script is the scripted model's part: first it calls the tools in
// parallel, one call with bad arguments; told the arguments were bad, it
// calls that tool again, fixed; then it answers from the tool results.
func script() []toolsettest.Step {
	call := func(id, name, args string) toolset.ToolCall {
		return toolset.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
	}
	return []toolsettest.Step{
		toolsettest.CallTools(
			call("call_lisbon", "get_weather", `{"city":"Lisbon"}`),
			call("call_porto", "get_weather", `{"city":"Porto"}`),
			call("call_convert", "convert_currency", `{"amount":"250","from":"EUR","to":"USD"}`), // a string, not a number
		),
		toolsettest.Decide(func(req toolsettest.ModelRequest) (toolsettest.Step, error) {
			if n := len(req.Results); n == 0 || !strings.HasPrefix(req.Results[n-1].Text, "invalid arguments") {
				return toolsettest.Step{}, errors.New("want to be told the arguments of convert_currency were bad")
			}
			return toolsettest.CallTools(call("call_convert_2", "convert_currency", `{"amount":250,"from":"EUR","to":"USD"}`)), nil
		}),
		toolsettest.Decide(func(req toolsettest.ModelRequest) (toolsettest.Step, error) {
			var facts []string
			for _, r := range req.Results {
				if !strings.HasPrefix(r.Text, "invalid arguments") {
					facts = append(facts, r.Text)
				}
			}
			return toolsettest.Answer("Here is what I found: " + strings.Join(facts, "; ") + ". Enjoy the trip!"), nil
		}),
	}
}
