package openaitools_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
)

// OrderArgs is a typical mid-sized argument struct.
type OrderArgs struct {
	Customer string   `json:"customer" jsonschema:"Customer ID"`
	Items    []string `json:"items" jsonschema:"SKUs to order"`
	Express  bool     `json:"express,omitempty"`
	Note     string   `json:"note,omitempty" jsonschema:"maxLength=200"`
	Address  struct {
		Street string `json:"street"`
		City   string `json:"city"`
		Zip    string `json:"zip,omitempty"`
	} `json:"address"`
}

// BenchmarkChatTools measures converting a turn of 50 tools, as every turn
// of an agent loop does.
func BenchmarkChatTools(b *testing.B) {
	var tools []toolset.Tool
	for i := range 50 {
		tools = append(tools, toolset.NewTool(fmt.Sprintf("order_%d", i), "Place an order.",
			func(context.Context, OrderArgs) (string, error) { return "", nil }))
	}
	set, err := toolset.BuildTools(context.Background(), "bench", toolset.NewFunction(tools...))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		opts []openaitools.Option
	}{{"plain", nil}, {"strict", []openaitools.Option{openaitools.WithStrict()}}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := openaitools.ChatTools(set, mode.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
