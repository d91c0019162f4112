package anthropictools_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/anthropictools"
)

// BenchmarkTools measures converting a turn of 50 tools, as every turn of
// an agent loop does.
func BenchmarkTools(b *testing.B) {
	var tools []toolset.Tool
	for i := range 50 {
		tools = append(tools, toolset.NewTool(fmt.Sprintf("order_%d", i), "Place an order.",
			func(context.Context, struct {
				Customer string   `json:"customer"`
				Items    []string `json:"items"`
				Express  bool     `json:"express,omitempty"`
				Note     string   `json:"note,omitempty"`
			}) (string, error) {
				return "", nil
			}))
	}
	set, err := toolset.BuildTools(context.Background(), "bench", toolset.NewFunction(tools...))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := anthropictools.Tools(set); err != nil {
			b.Fatal(err)
		}
	}
}
