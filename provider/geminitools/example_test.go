package geminitools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/geminitools"
	"google.golang.org/genai"
)

// The turn's tools as one genai.Tool of function declarations, each with
// the tool's JSON Schema in ParametersJsonSchema.
func ExampleTools() {
	tools, err := toolset.BuildTools(context.Background(), "assistant",
		toolset.NewTool("get_weather", "Get the weather.", func(_ context.Context, in struct {
			City string `json:"city" jsonschema:"City name"`
		}) (string, error) {
			return in.City + ": 22°C", nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	decls, err := geminitools.Tools(tools)
	if err != nil {
		log.Fatal(err)
	}
	config := &genai.GenerateContentConfig{Tools: decls}
	b, _ := json.Marshal(config.Tools)
	fmt.Println(string(b))
	// Output:
	// [{"functionDeclarations":[{"description":"Get the weather.","name":"get_weather","parametersJsonSchema":{"properties":{"city":{"type":"string","description":"City name"}},"additionalProperties":false,"type":"object","required":["city"]}}]}]
}

// A preflight of a tool whose schema came from an MCP server: the
// rewrites Tools makes with WithPreflight are notes, and what Gemini
// cannot take is a problem, with where and what to do.
func ExampleCheck() {
	schema, err := toolset.ParseSchema([]byte(`{
		"type": "object",
		"properties": {
			"path": {"type": ["string", "null"]},
			"confirm": {"const": true}
		}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	remove := toolset.NewRawTool("remove_file", "Remove a file.", schema,
		func(context.Context, json.RawMessage) (any, error) { return "removed", nil })
	tools, err := toolset.BuildTools(context.Background(), "assistant", remove)
	if err != nil {
		log.Fatal(err)
	}
	problems, err := geminitools.Check(tools)
	for _, p := range problems {
		fmt.Println(p.Lowered, p.Path)
	}
	fmt.Println(err != nil)
	// Output:
	// true /parameters/properties/path/type
	// false /parameters/properties/confirm/const
	// true
}
