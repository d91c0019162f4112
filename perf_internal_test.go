package toolset

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Prepared whose function returns the same list turn after turn yields
// the same snapshot, so the layers above it keep their memo: the
// prefixed copies above it are made once, not every turn.
func TestPreparedUnchangedKeepsTheMemoAbove(t *testing.T) {
	tools := make([]Tool, 50)
	for i := range tools {
		tools[i] = NewTool(fmt.Sprint("t", i), "", func(context.Context, struct{}) (int, error) { return 0, nil })
	}
	drop := true
	ts := NewPrepared(NewFunction(tools...), func(_ context.Context, tools []Tool) ([]Tool, error) {
		if drop {
			return tools[1:], nil
		}
		return tools, nil
	}).Prefixed("p")
	ctx := context.Background()
	turn := func() *snapshot {
		v, err := materialize(ctx, ts, nil)
		require.NoError(t, err)
		return v.snap
	}
	first := turn()
	assert.True(t, first == turn(), "an unchanged prepared list keeps the prefixed copies")
	drop = false
	other := turn()
	assert.True(t, first != other, "a changed list is prefixed anew")
	assert.Len(t, other.tools, 50)
	drop = true
	assert.True(t, first == turn(), "a recent list is remembered")
}

// The first turn of a fresh Combined lays its children's prefixed copies
// end to end, and its join shares them instead of copying them again;
// where the tools came from is still known, for error messages.
func TestFreshCombinedJoinSharesItsChildrensCopies(t *testing.T) {
	tools := make([]Tool, 40)
	for i := range tools {
		tools[i] = NewTool(fmt.Sprint("t", i), "", func(context.Context, struct{}) (int, error) { return 0, nil })
	}
	a, b := NewFunction(tools...).Prefixed("a"), NewFunction(tools...).Prefixed("b")
	c := NewCombined(a, b)
	sc := getScratch()
	v, err := materialize(context.Background(), c, sc)
	sc.release()
	require.NoError(t, err)
	av, err := materialize(context.Background(), a, nil)
	require.NoError(t, err)
	bv, err := materialize(context.Background(), b, nil)
	require.NoError(t, err)
	require.Len(t, v.snap.tools, 80)
	assert.True(t, &v.snap.tools[0] == &av.snap.tools[0], "the join shares the first child's copies")
	assert.True(t, &v.snap.tools[40] == &bv.snap.tools[0], "and the second's, right after")
	assert.Equal(t, `Prefixed#1 "b"`, v.snap.contributor(45, ""))
	assert.Equal(t, "b_t5", v.snap.tools[45].Name)

	// Two children showing one name are still named, each.
	dup := NewCombined(NewFunction(tools...).Prefixed("p"), NewFunction(tools...).Prefixed("p"))
	_, err = BuildTools(context.Background(), "agent", dup)
	var nc *NameConflictError
	require.ErrorAs(t, err, &nc)
	require.Len(t, nc.Conflicts, 40)
	assert.Equal(t, []string{`Combined#0/Prefixed#0 "p"`, `Combined#0/Prefixed#1 "p"`}, nc.Conflicts[0].Contributors)
}

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

// The name table finds the first position of every name, nothing for a
// name absent, and the index built on it groups the duplicates as a map
// would.
func TestNameTableAgreesWithAMap(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 1000, 5000} {
		tools := make([]Tool, n)
		first := make(map[string]int32)
		dups := make(map[string][]int32)
		for i := range tools {
			name := fmt.Sprint("n", (i*7919)%(n/2+1)) // about half repeat
			tools[i] = Tool{Name: name}
			if j, ok := first[name]; ok {
				if dups[name] == nil {
					dups[name] = []int32{j}
				}
				dups[name] = append(dups[name], int32(i))
				continue
			}
			first[name] = int32(i)
		}
		ix := newSnapshot(tools).index()
		for name, want := range first {
			got, ok := ix.first.find(tools, name)
			require.True(t, ok, name)
			require.Equal(t, want, got, name)
		}
		for _, absent := range []string{"", "n", "m1", fmt.Sprint("n", n)} {
			_, ok := ix.first.find(tools, absent)
			assert.False(t, ok, "%q in %d tools", absent, n)
		}
		require.Len(t, ix.dups, len(dups))
		for _, group := range ix.dups {
			assert.Equal(t, dups[tools[group[0]].Name], group)
		}
	}
	var empty nameTable
	_, ok := empty.find(nil, "x")
	assert.False(t, ok)
}

// The policy facts of copies and joins, taken from the snapshots they
// come from, are those a scan of their own tools finds.
func TestPolicyFactsOfCopiesAndJoinsMatchAScan(t *testing.T) {
	t.Setenv("TOOLSET_TEST_PRESENT", "1")
	mk := func(name string, opts ...ToolOption) Tool {
		return NewTool(name, "", func(context.Context, struct{}) (int, error) { return 0, nil }, opts...)
	}
	plain := NewFunction(mk("a"), mk("b", WithMaxFailures(2)), mk("c", WithDeferred()))
	env := NewFunction(mk("d", WithRequiredEnv("TOOLSET_TEST_PRESENT")), mk("e"))
	tree := NewCombined(plain.Prefixed("p"), env.Renamed(map[string]string{"e": "f"}), plain.Prefixed("q"))
	standalone, replaced := mk("s", WithMaxFailures(1)), mk("s", WithDeferred())
	s, _, err := buildSnapshot(context.Background(), "a", []Toolset{standalone, tree, replaced, env.Prefixed("r")}, nil)
	require.NoError(t, err)
	got, want := s.policies(), newSnapshot(s.tools).policies()
	assert.Equal(t, want, got)
	assert.NotEmpty(t, got.env)
	assert.NotEmpty(t, got.deferred)
	assert.NotEmpty(t, got.budgets)
}
