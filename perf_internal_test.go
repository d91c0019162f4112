package toolset

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Predicates run inline, and on the goroutines of toolsets that may
// block, read the run with a type assertion, even under a context the
// caller derived from the turn's.
func TestCallbacksGetTheFastRunContext(t *testing.T) {
	run := NewRun("fast-ctx")
	defer run.End()
	type key struct{}
	ctx := context.WithValue(run.Turn(context.Background()), key{}, 1)
	var inline, onGoroutine atomic.Bool
	fast := func(flag *atomic.Bool) Predicate {
		return func(ctx context.Context, _ Tool) (bool, error) {
			_, ok := ctx.(*turnContext)
			flag.Store(ok && FromContext(ctx) != nil && ctx.Value(key{}) == 1)
			return true, nil
		}
	}
	mk := func(name string) Tool {
		return NewTool(name, "", func(context.Context, struct{}) (int, error) { return 0, nil })
	}
	blocking := NewDynamic(func(context.Context) (Toolset, error) {
		return NewFunction(mk("b")).Filtered(fast(&onGoroutine)), nil
	})
	_, err := BuildTools(ctx, "a", NewFunction(mk("a")).Filtered(fast(&inline)), blocking, NewDynamic(func(context.Context) (Toolset, error) { return nil, nil }))
	require.NoError(t, err)
	assert.True(t, inline.Load(), "inline predicate")
	assert.True(t, onGoroutine.Load(), "predicate on a goroutine")
}
