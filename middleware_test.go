package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMiddleware(t *testing.T) {
	var mu sync.Mutex
	var log []string
	record := func(tag string) toolset.Middleware {
		return func(next toolset.Handler) toolset.Handler {
			return func(ctx context.Context, c toolset.ToolCall) (any, error) {
				mu.Lock()
				log = append(log, fmt.Sprintf("%s>%s#%s", tag, c.Name, c.ID))
				mu.Unlock()
				res, err := next(ctx, c)
				mu.Lock()
				log = append(log, tag+"<")
				mu.Unlock()
				return res, err
			}
		}
	}
	var runs atomic.Int64
	tool := counted("lookup", &runs, toolset.WithMiddleware(record("tool1"), record("tool2")), toolset.WithCache(toolset.CachePolicy{}))
	wrapped := toolset.Wrapper{Wrapped: toolset.Wrapper{Wrapped: toolset.NewFunction(tool), Middleware: []toolset.Middleware{record("inner")}},
		Middleware: []toolset.Middleware{record("outer1"), record("outer2")}}
	ctx := context.Background()
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewPrefixed(wrapped, "w"), toolset.NewRenamed(toolset.NewFunction(tool), map[string]string{"lookup": "plain"}))
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "w_lookup", Args: json.RawMessage(`{"id":1}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"outer1>w_lookup#c1", "outer2>w_lookup#c1", "inner>w_lookup#c1", "tool1>w_lookup#c1", "tool2>w_lookup#c1",
		"tool2<", "tool1<", "inner<", "outer2<", "outer1<",
	}, log, "outermost first, like net/http")

	log = nil
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c2", Name: "plain", Args: json.RawMessage(`{"id":2}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{"tool1>plain#c2", "tool2>plain#c2", "tool2<", "tool1<"}, log, "a copy outside the wrapper runs only the tool's middleware")

	log = nil
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "plain", Args: json.RawMessage(`{"id":1}`)})
	require.NoError(t, err)
	assert.Empty(t, log, "a cache hit skips the middleware")
	assert.Equal(t, toolset.CacheStats{Hits: 1, Misses: 2}, tool.CacheStats(), "the wrapped copy shares the tool's cache")
	got, _ := tools.Lookup("w_lookup")
	assert.True(t, got.Same(tool))
}
