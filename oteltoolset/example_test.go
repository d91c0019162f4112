package oteltoolset_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/oteltoolset"
)

// A run observed by OpenTelemetry: its turn is a span, and the turn's
// call a child of it.
func ExampleNew() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	obs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp))
	if err != nil {
		panic(err)
	}
	run := toolset.NewRun("request-1", toolset.WithObserver(obs))
	defer run.End()

	forecast := toolset.NewTool("forecast", "Get the weather forecast.",
		func(_ context.Context, in struct {
			City string `json:"city"`
		}) (string, error) {
			return in.City + ": sunny", nil
		})
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "assistant", toolset.NewFunction(forecast).Prefixed("weather"))
	if err != nil {
		panic(err)
	}
	if _, err := tools.Execute(turn, toolset.ToolCall{ID: "call_1", Name: "weather_forecast", Args: json.RawMessage(`{"city":"Paris"}`)}); err != nil {
		panic(err)
	}

	ended := spans.Ended()
	for _, s := range ended {
		fmt.Println(s.Name())
	}
	fmt.Println("child of the turn:", ended[1].Parent().SpanID() == ended[0].SpanContext().SpanID())
	// Output:
	// build_tools assistant
	// execute_tool weather_forecast
	// child of the turn: true
}
