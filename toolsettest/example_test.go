package toolsettest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolsettest"
)

// A run context for a turn: who is asking, for which tenant.
func ExampleNewRun() {
	ctx := toolsettest.NewRun().Role("admin").Tenant("acme").Step(2).Context(context.Background())
	rc := toolset.FromContext(ctx)
	fmt.Println(rc.RunID, rc.Agent, rc.Step, rc.String("role"), rc.String("tenant"))
	// Output: test-run test-agent 2 admin acme
}

// Recording the calls of a toolset: what the code under test called, with
// which arguments, and what came back.
func ExampleRecord() {
	notes := toolset.NewFunction(toolset.NewTool("add_note", "Add a note.",
		func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			if in.Text == "" {
				return "", toolset.NewModelError("the note is empty")
			}
			return "saved", nil
		}))
	rec := toolsettest.Record(notes)

	ctx := toolsettest.NewRun().Role("editor").Context(context.Background())
	tools, err := toolset.BuildTools(ctx, "assistant", rec)
	if err != nil {
		log.Fatal(err)
	}
	_, _ = tools.Call(ctx, "add_note", json.RawMessage(`{"text":"buy milk"}`))
	_, _ = tools.Call(ctx, "add_note", json.RawMessage(`{"text":""}`))

	for _, c := range rec.Calls() {
		fmt.Printf("%s %s -> %v, %v (role %s)\n", c.Tool, c.Args, c.Result, c.Err, c.Run.String("role"))
	}
	// Output:
	// add_note {"text":"buy milk"} -> saved, <nil> (role editor)
	// add_note {"text":""} -> <nil>, toolset: retry requested: the note is empty (role editor)
}

// A fake tool with scripted results, to test an agent loop's handling of
// a retry request and of an outage without a real backend.
func ExampleFake() {
	weather := toolsettest.NewFake("get_weather",
		toolsettest.Return("22°C"),
		toolsettest.Fail(toolset.NewModelError("unknown city; give a city name")),
		toolsettest.Fail(errors.New("weather service is down")),
	)
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "assistant", weather.Tool())
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		res, err := tools.Call(ctx, "get_weather", json.RawMessage(`{"city":"Paris"}`))
		if msg, ok := toolset.ErrorText(err); ok {
			fmt.Println("to the model:", msg)
			continue
		}
		if err != nil {
			fmt.Println("stop the run:", err)
			continue
		}
		fmt.Println("result:", res)
	}
	fmt.Println("calls:", weather.Calls())
	// Output:
	// result: 22°C
	// to the model: unknown city; give a city name
	// stop the run: toolset: tool "get_weather": weather service is down
	// calls: 3
}

// The tool list as the model sees it, as golden files hold it.
func ExampleModelView() {
	tools, err := toolset.BuildTools(context.Background(), "assistant", toolsettest.NewFake("ping").Tool())
	if err != nil {
		log.Fatal(err)
	}
	view, err := toolsettest.ModelView(tools)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(view))
	// Output:
	// [
	//   {
	//     "name": "ping",
	//     "description": "A fake ping tool.",
	//     "parameters": {
	//       "type": "object"
	//     }
	//   }
	// ]
}
