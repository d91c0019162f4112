package toolset

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pathUser is a toolset of the caller's, with a label when it has one.
type pathUser struct{ label string }

func (pathUser) GetTools(context.Context) ([]Tool, error) { return []Tool{nopTool("x")}, nil }

func (u pathUser) Label() string { return u.label }

// An element names a toolset's type, its position when it has one, and
// what tells it apart, quoted and bounded.
func TestElementSpellsTypePositionAndWhat(t *testing.T) {
	f := NewFunction(nopTool("x"))
	cases := []struct {
		ts   Toolset
		idx  int
		want string
	}{
		{f, 0, "Function#0"},
		{f.WithLabel("web"), 1, `Function#1 "web"`},
		{f.Prefixed("db"), -1, `Prefixed "db"`},
		{f.Filtered(func(context.Context, Tool) (bool, error) { return true, nil }), 2, "Filtered#2"},
		{nopTool("search"), 3, `Tool#3 "search"`},
		{NewCombined(f), -1, "Combined"},
		{Wrapper{Wrapped: f}, 0, "Wrapper#0"},
		{pathUser{}, 0, "pathUser#0"},
		{pathUser{label: "pathUser"}, 0, "pathUser#0"},
		{pathUser{label: "mcp:fs"}, 1, `pathUser#1 "mcp:fs"`},
		{pathUser{label: "a\nb"}, 0, `pathUser#0 "a\nb"`},
	}
	for _, c := range cases {
		got, err := element(c.ts, c.idx)
		require.NoError(t, err)
		assert.Equal(t, c.want, got)
	}
	long, err := element(pathUser{label: strings.Repeat("l", 1000)}, 0)
	require.NoError(t, err)
	assert.Less(t, len(long), 200, "a label is bounded")
}

// A conflict's contributors are spelt as Explain spells the tools'
// paths: the same where the path has no layer under a Combined left out,
// and the same elements in the same order where it has.
func TestContributorsAreExplainPaths(t *testing.T) {
	ctx := context.Background()
	a := NewFunction(nopTool("q"), nopTool("r"))
	b := NewFunction(nopTool("q")).WithLabel("web")
	yes := func(context.Context, Tool) (bool, error) { return true, nil }
	entries := []Toolset{
		NewCombined(a, b),
		NewCombined(a, b.Prefixed("b")).Prefixed("p"),
		NewFunction(nopTool("p_b_q")).Filtered(yes),
		nopTool("r"),
	}
	_, err := BuildTools(ctx, "agent", entries...)
	var nce *NameConflictError
	require.ErrorAs(t, err, &nce)
	x, err := Explain(ctx, "agent", entries...)
	require.NoError(t, err)
	for _, c := range nce.Conflicts {
		var paths []string
		for _, e := range x.Find(c.Name) {
			if e.Name == c.Name {
				paths = append(paths, e.Path)
			}
		}
		require.Len(t, paths, len(c.Contributors), c.Name)
		for i, who := range c.Contributors {
			assert.True(t, subsequence(strings.Split(who, pathSep), strings.Split(paths[i], pathSep)), "%s: %s in %s", c.Name, who, paths[i])
		}
	}
	assert.Equal(t, []NameConflict{
		{Name: "q", Contributors: []string{"Combined#0/Function#0", `Combined#0/Function#1 "web"`}},
		{Name: "p_b_q", Contributors: []string{`Prefixed#1 "p"/Combined/Prefixed#1 "b"`, "Filtered#2"}},
		{Name: "r", Contributors: []string{"Combined#0/Function#0", `Tool#3 "r"`}},
	}, nce.Conflicts)
}

func subsequence(sub, of []string) bool {
	for _, s := range sub {
		for len(of) > 0 && of[0] != s {
			of = of[1:]
		}
		if len(of) == 0 {
			return false
		}
		of = of[1:]
	}
	return true
}

// The error of a failing toolset names it by its path, and a packaged
// toolset's error, which names itself, by its name once.
func TestEntryErrorNamesThePathOnce(t *testing.T) {
	inner := &entryError{index: 1, label: "web", elem: pathElem{typ: "Function", what: "web"}, err: testErr("toolset: web: down")}
	assert.Equal(t, `Function#1 "web": down`, inner.Error())
	outer := &entryError{index: 0, label: "Combined", elem: pathElem{typ: "Combined", join: true}, err: inner}
	assert.Equal(t, `Combined#0/Function#1 "web": down`, outer.Error())
	pkg := &entryError{index: 2, label: "pkg:fx", elem: pathElem{typ: "Toolset", what: "pkg:fx"}, err: testErr(`pkg: toolset "fx": broken`)}
	assert.Equal(t, `Toolset#2 "pkg:fx": broken`, pkg.Error())
	assert.ErrorIs(t, outer, inner.err)
}

type testErr string

func (e testErr) Error() string { return string(e) }
