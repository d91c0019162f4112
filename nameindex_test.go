package toolset

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// The index groups the positions of a repeated name in order, and lists
// the names providers reject.
func TestIndexGroupsDuplicatesAndInvalidNames(t *testing.T) {
	s := newSnapshot([]Tool{{Name: "a"}, {Name: "b"}, {Name: "a"}, {Name: "bad name"}, {Name: "a"}, {Name: "b"}})
	ix := s.index()
	assert.Equal(t, [][]int32{{0, 2, 4}, {1, 5}}, ix.dups)
	assert.Equal(t, []int32{3}, ix.invalid)
	assert.Same(t, ix, s.index(), "built once")
	pos, ok := ix.first.find(s.tools, "b")
	assert.True(t, ok)
	assert.Equal(t, int32(1), pos)
}

// The turn's policies are the tools with enabled or prepare functions
// not yet applied this turn.
func TestTurnPoliciesListsToolsNotYetPrepared(t *testing.T) {
	yes := func(context.Context, Tool) (bool, error) { return true, nil }
	enabled := nopTool("e", WithEnabled(yes))
	done := nopTool("d", WithEnabled(yes))
	done.prepared = true
	s := newSnapshot([]Tool{nopTool("plain"), enabled, done})
	assert.Equal(t, []int32{1}, s.turnPolicies())
	assert.Empty(t, newSnapshot([]Tool{nopTool("plain")}).turnPolicies())
}
