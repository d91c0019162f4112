package toolset_test

import (
	"context"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKey(t *testing.T) {
	plan := toolset.NewKey[string]("plan")
	again := toolset.NewKey[string]("plan")
	assert.Equal(t, plan, again, "one name, one key")
	assert.Equal(t, "plan", plan.Name())
	asInt := toolset.NewKey[int]("plan")

	ctx := newRun(t, "r", toolset.WithValue(plan, "pro"))
	assert.Equal(t, "pro", plan.Get(ctx))
	assert.Equal(t, "pro", again.Get(ctx))
	v, ok := asInt.Lookup(ctx)
	assert.False(t, ok, "a value of another type")
	assert.Zero(t, v)
	assert.Zero(t, toolset.Key[string]{}.Get(ctx), "the zero Key reads nothing")
	_, ok = plan.Lookup(context.Background())
	assert.False(t, ok, "no run")
	_, ok = Tenant.Lookup(ctx)
	assert.False(t, ok, "no value")

	// A value given by name is read by a key of that name, even one made
	// after the run.
	byName := newRun(t, "n", toolset.WithValues(map[string]any{"plan": "free", "fresh-name-for-a-later-key": 7}))
	assert.Equal(t, "free", plan.Get(byName))
	later := toolset.NewKey[int]("fresh-name-for-a-later-key")
	assert.Equal(t, 7, later.Get(byName))

	// An interface-typed key holds a nil value as a value.
	errKey := toolset.NewKey[error]("err")
	e, ok := errKey.Lookup(newRun(t, "e", toolset.WithValue[error](errKey, nil)))
	assert.True(t, ok)
	assert.Nil(t, e)

	// Later options override earlier ones; WithValues is copied.
	m := map[string]any{"plan": "team"}
	over := newRun(t, "o", toolset.WithValue(plan, "pro"), toolset.WithValues(m))
	m["plan"] = "changed"
	assert.Equal(t, "team", plan.Get(over))
}

// Predicates read keys through every context BuildTools and Combined hand
// them, the concurrent ones included, and through contexts derived from a
// turn's.
func TestKeyReadInEveryCallback(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	record := func(ctx context.Context) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, Role.Get(ctx))
	}
	pred := func(ctx context.Context, _ toolset.Tool) (bool, error) { record(ctx); return true, nil }
	dyn := func(name string) toolset.Toolset {
		return toolset.NewDynamic(func(ctx context.Context) (toolset.Toolset, error) {
			record(ctx)
			return toolset.NewFunction(echoTool(name)), nil
		})
	}
	tree := toolset.NewCombined(dyn("a"), dyn("b"), toolset.NewCombined(dyn("c"), dyn("d")).Filtered(pred))
	ctx, cancel := context.WithCancel(withRole(t, "admin"))
	defer cancel()
	tools, err := toolset.BuildTools(ctx, "a", tree, dyn("e"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, tools.Names())
	assert.Len(t, seen, 7)
	for _, r := range seen {
		assert.Equal(t, "admin", r)
	}
}
