package toolset

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A turn over many in-memory tools is split across goroutines: it gives
// the same list as a turn done in one go, and a Goexit on one of the
// goroutines fails the turn with a *PanicError.
func TestLargeInlineTurnIsSplitAcrossGoroutines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	tools := make([]Tool, 1000)
	for i := range tools {
		tools[i] = NewTool(fmt.Sprint("t", i), "", func(context.Context, struct{}) (int, error) { return 0, nil })
	}
	var workers sync.Map
	odd := func(ctx context.Context, t Tool) (bool, error) {
		if strings.HasSuffix(t.Name, "_t0") {
			workers.Store(goroutineID(), true)
		}
		return len(t.Name)%2 == 1, nil
	}
	children := make([]Toolset, 40)
	for i := range children {
		children[i] = NewFunction(tools...).Prefixed(fmt.Sprint("p", i)).Filtered(odd)
	}
	got, err := BuildTools(context.Background(), "a", NewCombined(children...))
	require.NoError(t, err)
	count := 0
	workers.Range(func(any, any) bool { count++; return true })
	assert.Greater(t, count, 1, "predicates ran on more than one goroutine")

	var want []string
	for i := range children {
		for _, tool := range tools {
			if name := fmt.Sprintf("p%d_%s", i, tool.Name); len(name)%2 == 1 {
				want = append(want, name)
			}
		}
	}
	assert.Equal(t, want, got.Names())

	children[39] = NewFunction(tools...).Prefixed("last").Filtered(func(context.Context, Tool) (bool, error) {
		runtime.Goexit()
		return true, nil
	})
	_, err = BuildTools(context.Background(), "a", NewCombined(children...))
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, ErrGoexit)
}

// goroutineID returns the ID of the calling goroutine, from its stack.
func goroutineID() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:n]), "goroutine "), " ")
	return id
}

// What is made only of this package's in-memory toolsets is materialised
// inline; a Dynamic or a toolset of the caller's anywhere under it is not.
func TestIsInlineAndKnownSizeFollowTheTree(t *testing.T) {
	f := NewFunction(nopTool("a"), nopTool("b"))
	dyn := NewDynamic(func(context.Context) (Toolset, error) { return f, nil })
	yes := func(context.Context, Tool) (bool, error) { return true, nil }
	cases := []struct {
		ts     Toolset
		inline bool
		size   int
	}{
		{f, true, 2},
		{nopTool("x"), true, 1},
		{f.Prefixed("p").Renamed(nil).Filtered(yes), true, 2},
		{f.Prepared(func(_ context.Context, ts []Tool) ([]Tool, error) { return ts, nil }), true, 0},
		{NewCombined(f, nopTool("x")), true, 3},
		{NewCombined(f, dyn), false, 2},
		{Wrapper{Wrapped: f}, true, 0},
		{Wrapper{}, true, 0},
		{&Wrapper{Wrapped: dyn}, false, 0},
		{dyn, false, 0},
		{pathUser{}, false, 0},
		{f.Prefixed("p").Filtered(yes).Prefixed("q").Renamed(nil), true, 2},
	}
	for i, c := range cases {
		assert.Equal(t, c.inline, isInline(c.ts), "case %d: inline", i)
		assert.Equal(t, c.size, knownSize(c.ts), "case %d: size", i)
	}
}

// Among the inline children of a turn, the errors of all that fail are
// joined, each named once; a toolset that may block, alone, fails alone.
func TestMaterializeAllJoinsTheErrorsOfInlineToolsets(t *testing.T) {
	bad := NewFunction(nopTool("x"), nopTool("x"))
	ts := []Toolset{bad, NewFunction(nopTool("y")), bad.WithLabel("again")}
	_, err := materializeAll(context.Background(), ts, []bool{true, true, true}, 0, nil, func(i int, err error) error {
		return fmt.Errorf("#%d: %w", i, err)
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "#0: ")
	assert.Contains(t, err.Error(), "#2: ")
	assert.NotContains(t, err.Error(), "#1: ")
}
