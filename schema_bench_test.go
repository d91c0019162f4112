package toolset_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gotoolset/toolset"
)

// The schema engine's costs outside the valid call: making a tool (its
// schema reflected and checked), parsing and compiling a written schema,
// and refusing invalid arguments (the full validator's path).

var benchRawSchema = []byte(`{"type":"object","properties":{"city":{"type":"string","description":"City name"},` +
	`"days":{"type":"integer","minimum":1,"maximum":14},"units":{"type":"string","enum":["metric","imperial"]},` +
	`"stops":{"type":"array","items":{"$ref":"#/$defs/stop"}}},"required":["city","days"],"additionalProperties":false,` +
	`"$defs":{"stop":{"type":"object","properties":{"name":{"type":"string"},"hours":{"type":"number","exclusiveMinimum":0}},"required":["name"]}}}`)

func BenchmarkNewTool(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := toolset.NewTool("get_weather", "Weather.", benchHandler).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSchema(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := toolset.ParseSchema(benchRawSchema); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchemaCompile makes a raw tool, which compiles its schema at
// once.
func BenchmarkSchemaCompile(b *testing.B) {
	s, err := toolset.ParseSchema(benchRawSchema)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := toolset.NewRawTool("t", "", s, echoHandler).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallInvalid calls a tool with arguments the schema refuses.
func BenchmarkCallInvalid(b *testing.B) {
	tool := toolset.NewTool("get_weather", "Weather.", benchHandler)
	args := json.RawMessage(`{"city":7,"days":30,"units":"kelvin","extra":true}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Execute(ctx, toolset.ToolCall{Args: args}); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkCallRawNotFast calls a raw tool whose schema is outside the
// fast check's subset ($ref), so every call runs the full validator.
func BenchmarkCallRawNotFast(b *testing.B) {
	s, err := toolset.ParseSchema(benchRawSchema)
	if err != nil {
		b.Fatal(err)
	}
	tool := toolset.NewRawTool("t", "", s, echoHandler)
	args := json.RawMessage(`{"city":"Paris","days":3,"stops":[{"name":"a","hours":2}]}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Execute(ctx, toolset.ToolCall{Args: args}); err != nil {
			b.Fatal(err)
		}
	}
}
