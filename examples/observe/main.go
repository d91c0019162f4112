// Command observe prints the OpenTelemetry spans of one agent turn: the
// turn's build_tools span and, as its children, an execute_tool span per
// call the model makes, with the library's toolset.* attributes (where the
// tool came from, its name before the prefix, the cache's hit or miss) and
// the tool's progress reports. Spans go to standard output as JSON.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/trace"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/oteltoolset"
)

// ForecastArgs are the arguments of the forecast tool.
type ForecastArgs struct {
	City string `json:"city" jsonschema:"City name, e.g. Paris"`
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	exporter, err := stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint(), stdouttrace.WithoutTimestamps())
	if err != nil {
		return err
	}
	// A syncer exports each span as it ends, in order.
	tp := trace.NewTracerProvider(trace.WithSyncer(exporter))
	defer tp.Shutdown(context.Background())
	obs, err := oteltoolset.New(oteltoolset.WithTracerProvider(tp))
	if err != nil {
		return err
	}

	forecast := toolset.NewTool("forecast", "Get the weather forecast.",
		func(ctx context.Context, in ForecastArgs) (string, error) {
			toolset.ReportProgress(ctx, toolset.Progress{Message: "asking the weather service", Fraction: 0.5})
			return in.City + ": 22°C, sunny", nil
		},
		toolset.WithCache(toolset.CachePolicy{TTL: time.Minute}))
	weather := toolset.NewFunction(forecast).Prefixed("weather")

	run := toolset.NewRun("request-42", toolset.WithObserver(obs))
	defer run.End()
	turn := run.Turn(context.Background())
	tools, err := toolset.BuildTools(turn, "assistant", weather)
	if err != nil {
		return err
	}
	// The model asks twice for the same forecast: the second call is a
	// cache hit.
	for _, id := range []string{"call_1", "call_2"} {
		res, err := tools.Execute(turn, toolset.ToolCall{ID: id, Name: "weather_forecast", Args: json.RawMessage(`{"city":"Paris"}`)})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", id, res)
	}
	return tp.ForceFlush(context.Background())
}
