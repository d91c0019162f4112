package toolset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// coldTools returns n tools named t0, t1, ..., every other one with
// audience "admin" in its metadata.
func coldTools(n int, opts ...func(i int) []ToolOption) []Tool {
	tools := make([]Tool, n)
	for i := range tools {
		audience := "all"
		if i%2 == 1 {
			audience = "admin"
		}
		o := []ToolOption{WithMetadata(map[string]string{"audience": audience})}
		for _, f := range opts {
			o = append(o, f(i)...)
		}
		tools[i] = nopTool(fmt.Sprint("t", i), o...)
	}
	return tools
}

// seen is what a predicate was shown in a turn, in order.
type seen struct {
	names []string
	meta  []string
}

// notAdmin hides the tools for admins, recording what it was shown.
func notAdmin(s *seen) Predicate {
	return func(_ context.Context, t Tool) (bool, error) {
		s.names = append(s.names, t.Name)
		s.meta = append(s.meta, t.Metadata["audience"])
		return t.Metadata["audience"] != "admin", nil
	}
}

// The first turn of a fresh Filtered over a Prefixed copies only the
// tools its predicate keeps, which are all that the set holds; the
// predicate is shown the tools, in order, that it is shown on later
// turns, and the turns show the same tools. The second turn makes the
// copies later turns reuse, with the names the first one wrote.
func TestColdFilteredPrefixedCopiesOnlyTheKeptTools(t *testing.T) {
	tools := coldTools(200)
	var s seen
	pred := notAdmin(&s)
	tree := NewCombined(NewFunction(tools[:100]...).Prefixed("a").Filtered(pred), NewFunction(tools[100:]...).Prefixed("b").Filtered(pred))
	var turns []*ToolList
	var shown []seen
	for range 3 {
		s = seen{}
		ts, err := BuildTools(context.Background(), "a", tree)
		require.NoError(t, err)
		turns, shown = append(turns, ts), append(shown, s)
	}
	first := turns[0]
	assert.Equal(t, 100, first.Len())
	assert.Len(t, first.snap.tools, 100, "the first turn copies only the tools it shows")
	assert.Nil(t, first.keep)
	assert.True(t, first.snap.perTurn)
	assert.Len(t, turns[1].snap.tools, 200, "the second turn copies them all, for the turns after it")
	assert.Same(t, turns[1].snap, turns[2].snap, "the third turn reuses them")
	for i := range turns {
		assert.Equal(t, first.Names(), turns[i].Names(), "turn %d", i)
		assert.Equal(t, shown[0], shown[i], "what the predicate is shown in turn %d", i)
	}
	assert.Len(t, shown[0].names, 200)
	assert.Equal(t, "a_t0", shown[0].names[0])
	assert.Equal(t, "b_t199", shown[0].names[199])
	assert.Equal(t, "admin", shown[0].meta[1])
	// The copies of the second turn take the names the first one wrote.
	one, _ := first.Lookup("b_t100")
	two, _ := turns[1].Lookup("b_t100")
	assert.True(t, one.Same(two))
	assert.Equal(t, unsafe.StringData(one.Name), unsafe.StringData(two.Name), "the names are written once")
}

// The first turn of a fresh Combined of Filtered Functions copies only
// the tools the predicates keep, and shows what later turns show; the
// second makes the join later turns reuse.
func TestColdFilteredFunctionCopiesOnlyTheKeptTools(t *testing.T) {
	tools := coldTools(200)
	var s seen
	pred := notAdmin(&s)
	tree := NewCombined(NewFunction(tools[:100]...).Filtered(pred), NewFunction(tools[100:]...).Filtered(pred))
	var turns []*ToolList
	var shown []seen
	for range 3 {
		s = seen{}
		ts, err := BuildTools(context.Background(), "a", tree)
		require.NoError(t, err)
		turns, shown = append(turns, ts), append(shown, s)
	}
	assert.Len(t, turns[0].snap.tools, 100, "the first turn copies only the tools it shows")
	assert.Len(t, turns[1].snap.tools, 200)
	assert.Same(t, turns[1].snap, turns[2].snap)
	for i := range turns {
		assert.Equal(t, turns[0].Names(), turns[i].Names(), "turn %d", i)
		assert.Equal(t, shown[0], shown[i], "what the predicate is shown in turn %d", i)
	}
	assert.Len(t, shown[0].names, 200)
	one, _ := turns[0].Lookup("t102")
	assert.True(t, one.Same(tools[102]))
	_, err := turns[0].Execute(context.Background(), ToolCall{Name: "t1"})
	assert.ErrorContains(t, err, `unknown tool "t1"`, "a hidden tool cannot be called")
}

// What a turn reports of its tools, from where they came, is the same on
// a first turn, which copies only the kept tools (of Filtered Prefixed
// toolsets and Filtered Functions), as on a steady one:
// conflicts and their contributors, missing environment variables (by
// the positions of the kept tools), suggestions for a name that lost its
// prefix, and a predicate's panic.
func TestColdFilteredPrefixedReportsAsASteadyTurn(t *testing.T) {
	type outcome struct{ build, call string }
	// turns builds three turns of fresh trees, calling "t2" in each.
	turns := func(tree func() Toolset) []outcome {
		ts := tree()
		var out []outcome
		for range 3 {
			list, err := BuildTools(context.Background(), "a", ts)
			o := outcome{build: fmt.Sprint(err)}
			if err == nil {
				_, err = list.Execute(context.Background(), ToolCall{Name: "t2"})
				o.call = fmt.Sprint(err)
			}
			out = append(out, o)
		}
		return out
	}
	var s seen
	plain := coldTools(10)
	needy := coldTools(10, func(i int) []ToolOption {
		if i%3 == 0 {
			return []ToolOption{WithRequiredEnv(fmt.Sprintf("TOOLSET_COLD_MISSING_%d", i))}
		}
		return nil
	})
	cases := map[string]func() Toolset{
		"conflict": func() Toolset {
			f := NewFunction(plain...)
			return NewCombined(f.Prefixed("a").Filtered(notAdmin(&s)), NewFunction(plain[:4]...).Prefixed("a").Filtered(notAdmin(&s)))
		},
		"env": func() Toolset {
			return NewCombined(NewFunction(plain...).Prefixed("a").Filtered(notAdmin(&s)), NewFunction(needy...).Prefixed("b").Filtered(notAdmin(&s)))
		},
		"unknown": func() Toolset {
			return NewCombined(NewFunction(plain...).Prefixed("a").Filtered(notAdmin(&s)), NewFunction(plain...).Prefixed("b").Filtered(notAdmin(&s)))
		},
		"alone": func() Toolset { return NewFunction(plain...).Prefixed("a").Filtered(notAdmin(&s)) },
		"function conflict": func() Toolset {
			return NewCombined(NewFunction(plain...).Filtered(notAdmin(&s)), NewFunction(plain[:4]...).Filtered(notAdmin(&s)))
		},
		"function env": func() Toolset {
			return NewCombined(NewFunction(needy...).Filtered(notAdmin(&s)), NewFunction(plain...).Prefixed("a").Filtered(notAdmin(&s)))
		},
	}
	for name, tree := range cases {
		got := turns(tree)
		assert.Equal(t, got[2], got[0], name)
		assert.Equal(t, got[2], got[1], name)
		assert.NotEqual(t, outcome{build: "<nil>", call: "<nil>"}, got[0], name)
		t.Logf("%s: %+v", name, got[0])
	}
	env := turns(cases["env"])[0].build
	for _, want := range []string{"TOOLSET_COLD_MISSING_0", "TOOLSET_COLD_MISSING_6"} {
		assert.Contains(t, env, want)
	}
	for _, hidden := range []string{"TOOLSET_COLD_MISSING_3", "TOOLSET_COLD_MISSING_9"} {
		assert.NotContains(t, env, hidden, "a hidden tool needs nothing")
	}
	assert.Contains(t, turns(cases["unknown"])[0].call, "did you mean a_t2 or b_t2?", "the name before its prefix is suggested")

	// A predicate that panics fails the first turn as it fails a later
	// one, naming the prefixed tool.
	panics := true
	boom := func(_ context.Context, t Tool) (bool, error) {
		if panics && t.Name == "a_t3" {
			panic("boom")
		}
		return true, nil
	}
	tree := NewCombined(NewFunction(plain...).Prefixed("a").Filtered(boom))
	_, coldErr := BuildTools(context.Background(), "a", tree)
	var pe *PanicError
	require.True(t, errors.As(coldErr, &pe), "%v", coldErr)
	assert.Contains(t, coldErr.Error(), "a_t3")
	panics = false
	for range 3 {
		ts, err := BuildTools(context.Background(), "a", tree)
		require.NoError(t, err)
		assert.Equal(t, 10, ts.Len())
	}
	panics = true
	_, steadyErr := BuildTools(context.Background(), "a", tree)
	assert.Equal(t, coldErr.Error(), steadyErr.Error())
}

// A predicate that keeps the tools it is shown, and their names, keeps
// them unchanged: the names it is shown on a first turn are never
// written again.
func TestColdFilteredPrefixedNamesAreImmutable(t *testing.T) {
	var kept []string
	keepAll := func(_ context.Context, t Tool) (bool, error) {
		kept = append(kept, t.Name)
		return strings.HasSuffix(t.Name, "1"), nil
	}
	tools := coldTools(30)
	tree := NewCombined(NewFunction(tools...).Prefixed("p").Filtered(keepAll), NewFunction(tools...).Prefixed("q").Filtered(keepAll))
	for range 4 {
		_, err := BuildTools(context.Background(), "a", tree)
		require.NoError(t, err)
	}
	require.Len(t, kept, 4*60)
	for i, name := range kept {
		p := "p"
		if i%60 >= 30 {
			p = "q"
		}
		assert.Equal(t, fmt.Sprintf("%s_t%d", p, i%30), name)
	}
}

// Explain after a first turn explains what the first turn showed.
func TestColdFilteredPrefixedExplained(t *testing.T) {
	tools := coldTools(6)
	var s seen
	tree := NewCombined(NewFunction(tools...).Prefixed("a").Filtered(notAdmin(&s)))
	ts, err := BuildTools(context.Background(), "a", tree)
	require.NoError(t, err)
	x, err := Explain(context.Background(), "a", tree)
	require.NoError(t, err)
	var shown []string
	for _, e := range x.Tools {
		if e.Visible {
			shown = append(shown, e.Name)
		}
	}
	assert.Equal(t, ts.Names(), shown)
}

// Filtered Prefixed toolsets over Filtered Prefixed toolsets show, on
// every turn, what a steady turn shows, and the predicates are shown the
// same tools each turn.
func TestColdFilteredPrefixedNested(t *testing.T) {
	tools := coldTools(40)
	var inner, outer seen
	odd := func(_ context.Context, t Tool) (bool, error) {
		outer.names = append(outer.names, t.Name)
		return len(t.Name)%2 == 1, nil
	}
	tree := NewCombined(
		NewFunction(tools...).Prefixed("in").Filtered(notAdmin(&inner)).Prefixed("out").Filtered(odd),
		NewFunction(tools[:3]...).Filtered(notAdmin(&inner)).Prefixed("x").Filtered(odd),
	)
	var names [][]string
	var shown []seen
	for range 4 {
		inner, outer = seen{}, seen{}
		ts, err := BuildTools(context.Background(), "a", tree)
		require.NoError(t, err)
		names = append(names, ts.Names())
		shown = append(shown, seen{names: append(inner.names, outer.names...)})
	}
	require.NotEmpty(t, names[0])
	for i := range names {
		assert.Equal(t, names[3], names[i], "turn %d", i)
		assert.Equal(t, shown[3], shown[i], "turn %d", i)
	}
	assert.Contains(t, names[0], "out_in_t4")
}
