package toolsettest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolsettest"
)

// A run for a test, and its turns: who is asking, for which tenant. The
// run ends with the test.
func ExampleNewRun() {
	role, tenant := toolset.NewKey[string]("role"), toolset.NewKey[string]("tenant")
	adminOnly := toolset.NewFunction(toolset.NewTool("wipe", "Wipe.", func(context.Context, struct{}) (string, error) {
		return "wiped", nil
	})).Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) { return role.Get(ctx) == "admin", nil })

	_ = func(t *testing.T) { // a test
		run := toolsettest.NewRun(t, toolset.WithValue(role, "admin"), toolset.WithValue(tenant, "acme"))
		for range 2 { // two turns of the run
			ctx := run.Turn(t.Context())
			toolsettest.AssertNames(t, toolsettest.Build(t, ctx, adminOnly), "wipe")
		}
	}
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

	run := toolset.NewRun("", toolset.WithValues(map[string]any{"role": "editor"}))
	defer run.End()
	ctx := run.Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "assistant", rec)
	if err != nil {
		log.Fatal(err)
	}
	_, _ = tools.Execute(ctx, toolset.ToolCall{Name: "add_note", Args: json.RawMessage(`{"text":"buy milk"}`)})
	_, _ = tools.Execute(ctx, toolset.ToolCall{Name: "add_note", Args: json.RawMessage(`{"text":""}`)})

	for _, c := range rec.Calls() {
		fmt.Printf("%s %s -> %v, %v (role %s)\n", c.Tool, c.Args, c.Result, c.Err, c.Run.Value("role"))
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
		res, err := tools.Execute(ctx, toolset.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)})
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
