package toolset_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
)

// A turn over unchanged toolsets reuses the renamed tools and the name
// index of earlier turns: what it allocates does not grow with the number
// of tools, only with the number of toolsets.
func TestBuildToolsSteadyStateDoesNotScaleWithTools(t *testing.T) {
	skipAllocCounts(t)
	allocs := func(n int) float64 {
		tools := make([]toolset.Tool, n)
		for i := range tools {
			md := map[string]string{"audience": "all"}
			if i%2 == 1 {
				md["audience"] = "admin"
			}
			tools[i] = toolset.NewTool(fmt.Sprint("t", i), "", func(context.Context, struct{}) (int, error) { return 0, nil }, toolset.WithMetadata(md))
		}
		tree := toolset.NewCombined(
			toolset.NewFunction(tools...).Prefixed("a").Filtered(adminsOnly),
			toolset.NewFunction(tools...).Prefixed("b").Renamed(map[string]string{"b_t0": "first"}),
		)
		run := testRun(t, "guest", toolset.WithValue(Role, "guest"))
		standalone := echoTool("standalone")
		turn := func() {
			got, err := toolset.BuildTools(run.Turn(context.Background()), "a", tree, standalone)
			if err != nil || got.Len() != n/2+n+1 {
				t.Fatalf("turn: %v, %d tools", err, got.Len())
			}
		}
		turn()
		return testing.AllocsPerRun(20, turn)
	}
	small, large := allocs(10), allocs(2000)
	assert.Equal(t, small, large, "allocations per turn with 10 and 2,000 tools per toolset")
}

// A toolset of the caller's that returns the same tools every turn gets
// the same memoisation as the toolsets of this package.
func TestUserToolsetTurnsDoNotScaleWithTools(t *testing.T) {
	skipAllocCounts(t)
	allocs := func(n int) float64 {
		tools := make([]toolset.Tool, n)
		for i := range tools {
			tools[i] = toolset.NewTool(fmt.Sprint("t", i), "", func(context.Context, struct{}) (int, error) { return 0, nil })
		}
		tree := toolset.NewCombined(toolset.NewPrefixed(listToolset{tools: tools}, "a"), toolset.NewFunction(echoTool("x")))
		ctx := context.Background()
		turn := func() {
			got, err := toolset.BuildTools(ctx, "a", tree)
			if err != nil || got.Len() != n+1 {
				t.Fatalf("turn: %v", err)
			}
		}
		turn()
		return testing.AllocsPerRun(20, turn) - float64(1) // listToolset's own copy
	}
	assert.Equal(t, allocs(10), allocs(2000))
}

func TestSharedRunContextAttachedConcurrently(t *testing.T) {
	rc := testRun(t, "shared")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ctx := toolset.NewContext(context.Background(), rc)
			toolset.FromContext(ctx).RecordApproval(toolset.ToolCall{ID: "c", Name: "t"})
			_ = rc.Turn(ctx)
		})
	}
	wg.Wait()
	assert.Equal(t, 7, rc.Step(), "concurrent turns get distinct steps")
}
