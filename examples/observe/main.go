// Command observe prints the OpenTelemetry spans of one agent turn as a
// tree: the turn's build_tools span and, under it, an execute_tool span
// per call the model makes, with the library's toolset.* attributes (where
// the tool came from, its name before the prefix, the cache's hit or miss)
// and the tool's progress reports as events. With -json it prints the
// spans as the SDK's stdout exporter writes them instead.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/oteltoolset"
)

// ForecastArgs are the arguments of the forecast tool.
type ForecastArgs struct {
	City string `json:"city" jsonschema:"City name, e.g. Paris"`
}

func main() {
	asJSON := flag.Bool("json", false, "print the spans as JSON, as the SDK's stdout exporter writes them")
	flag.Parse()
	if err := run(os.Stdout, *asJSON); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer, asJSON bool) error {
	rec := tracetest.NewSpanRecorder()
	opts := []trace.TracerProviderOption{trace.WithSpanProcessor(rec)}
	if asJSON {
		exporter, err := stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint(), stdouttrace.WithoutTimestamps())
		if err != nil {
			return err
		}
		// A syncer exports each span as it ends, in order.
		opts = append(opts, trace.WithSyncer(exporter))
	}
	tp := trace.NewTracerProvider(opts...)
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
	if err := tp.ForceFlush(context.Background()); err != nil {
		return err
	}
	if !asJSON {
		printTree(w, rec.Ended())
	}
	return nil
}

// printTree prints spans as a tree, each span under its parent, in the
// order they began: its name, then its attributes and events indented.
func printTree(w io.Writer, spans []trace.ReadOnlySpan) {
	children := map[string][]trace.ReadOnlySpan{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID().String()] = true
	}
	var roots []trace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent(); p.IsValid() && ids[p.SpanID().String()] {
			children[p.SpanID().String()] = append(children[p.SpanID().String()], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b trace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	var walk func(s trace.ReadOnlySpan, lead, more string)
	walk = func(s trace.ReadOnlySpan, lead, more string) {
		fmt.Fprintf(w, "%s%s (%v)\n", lead, s.Name(), s.EndTime().Sub(s.StartTime()).Round(time.Microsecond))
		attrs := slices.Clone(s.Attributes())
		slices.SortFunc(attrs, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
		for _, a := range attrs {
			fmt.Fprintf(w, "%s    %s = %s\n", more, a.Key, a.Value.String())
		}
		for _, e := range s.Events() {
			var parts []string
			for _, a := range e.Attributes {
				parts = append(parts, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
			}
			fmt.Fprintf(w, "%s    event %s: %s\n", more, e.Name, strings.Join(parts, " "))
		}
		kids := children[s.SpanContext().SpanID().String()]
		slices.SortStableFunc(kids, byStart)
		for i, k := range kids {
			if i == len(kids)-1 {
				walk(k, more+"└─ ", more+"   ")
			} else {
				walk(k, more+"├─ ", more+"│  ")
			}
		}
	}
	slices.SortStableFunc(roots, byStart)
	for _, r := range roots {
		walk(r, "", "")
	}
}
