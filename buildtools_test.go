package toolset_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildToolsStandaloneReplacement(t *testing.T) {
	ctx := context.Background()
	first := echoTool("lookup")
	second := toolset.NewTool("lookup", "The newer lookup.", func(context.Context, struct{}) (string, error) { return "second", nil })
	tools, err := toolset.BuildTools(ctx, "a", echoTool("a"), first, toolset.NewFunction(echoTool("b")), second, echoTool("c"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "lookup", "b", "c"}, tools.Names(), "the later tool takes the earlier one's position")
	got, err := tools.Execute(ctx, toolset.ToolCall{Name: "lookup", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "second", got)
	tool, ok := tools.Lookup("lookup")
	require.True(t, ok)
	assert.Equal(t, "The newer lookup.", tool.Description)

	ptr := echoTool("p")
	tools, err = toolset.BuildTools(ctx, "a", &ptr, echoTool("p"))
	require.NoError(t, err)
	assert.Equal(t, []string{"p"}, tools.Names())
}

func TestBuildToolsEntryErrors(t *testing.T) {
	ctx := context.Background()
	_, err := toolset.BuildTools(ctx, "Ops", toolset.NewFunction(), nil, toolset.NewFunction().Prefixed(""))
	require.EqualError(t, err, `toolset: agent "Ops": Toolset#1: a nil Toolset`)
	_, err = toolset.BuildTools(ctx, "Ops", toolset.NewFunction(), toolset.NewFunction().Prefixed(""))
	require.Error(t, err)
	assert.EqualError(t, err, `toolset: agent "Ops": Prefixed#1: empty prefix`)
}

// pkgToolset is a toolset of another package: it labels itself "pkg:fx"
// and its errors name it as that package does.
type pkgToolset struct{ err error }

func (p pkgToolset) GetTools(context.Context) ([]toolset.Tool, error) { return nil, p.err }

func (pkgToolset) Label() string { return "pkg:fx" }

// TestEntryErrorSaysEachThingOnce checks that the errors of a failing
// entry name the agent, the entry and this package once each.
func TestEntryErrorSaysEachThingOnce(t *testing.T) {
	ctx := context.Background()
	fx := pkgToolset{err: errors.New(`pkg: toolset "fx": invalid configuration`)}
	cases := []struct {
		name    string
		entries []toolset.Toolset
		want    string
	}{
		{"an error that names its toolset", []toolset.Toolset{echoTool("x"), fx},
			`toolset: agent "a": pkgToolset#1 "pkg:fx": invalid configuration`},
		{"inside a Combined", []toolset.Toolset{toolset.NewCombined(fx)},
			`toolset: agent "a": Combined#0/pkgToolset#0 "pkg:fx": invalid configuration`},
		{"an error that does not", []toolset.Toolset{pkgToolset{err: errors.New("server down")}},
			`toolset: agent "a": pkgToolset#0 "pkg:fx": server down`},
		{"an error of this package", []toolset.Toolset{toolset.NewFunction().Prefixed("")},
			`toolset: agent "a": Prefixed#0: empty prefix`},
		{"a Label that panics", []toolset.Toolset{panicky{label: true}},
			`toolset: agent "a": panicky#0: Label panicked: Label exploded`},
		{"a Label that panics, in a Combined", []toolset.Toolset{toolset.NewCombined(panicky{label: true})},
			`toolset: agent "a": Combined#0/panicky#0: Label panicked: Label exploded`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := toolset.BuildTools(ctx, "a", c.entries...)
			require.EqualError(t, err, c.want)
		})
	}
}

// TestEntryErrorOneFailureALine checks that each failure of a turn is a
// line that begins with its whole path, nested Combineds included, and
// that a toolset's error cannot add a line that reads as the failure of
// another toolset: its later lines are indented under its own.
func TestEntryErrorOneFailureALine(t *testing.T) {
	ctx := context.Background()
	a := pkgToolset{err: errors.New("a down")}
	b := pkgToolset{err: errors.New("b down")}
	_, err := toolset.BuildTools(ctx, "a", toolset.NewCombined(toolset.NewFunction(echoTool("x")), toolset.NewCombined(a, b)), echoTool("y"))
	assert.EqualError(t, err, `toolset: agent "a": Combined#0/Combined#1/pkgToolset#0 "pkg:fx": a down`+"\n"+
		`Combined#0/Combined#1/pkgToolset#1 "pkg:fx": b down`)
	_, err = toolset.BuildTools(ctx, "a", toolset.NewCombined(toolset.NewCombined(a, b).Prefixed("p")))
	assert.EqualError(t, err, `toolset: agent "a": Combined#0/Prefixed#0 "p"/pkgToolset#0 "pkg:fx": a down`+"\n"+
		`Combined#0/Prefixed#0 "p"/pkgToolset#1 "pkg:fx": b down`)

	forged := pkgToolset{err: errors.New("boom\nFunction#1 \"billing\": unauthorized\rFunction#2: x")}
	_, err = toolset.BuildTools(ctx, "a", toolset.NewCombined(forged, toolset.NewFunction(echoTool("x"))), b)
	assert.EqualError(t, err, `toolset: agent "a": Combined#0/pkgToolset#0 "pkg:fx": boom`+"\n"+
		`  Function#1 "billing": unauthorized`+"\n"+
		`  Function#2: x`+"\n"+
		`pkgToolset#1 "pkg:fx": b down`)
	_, err = toolset.BuildTools(ctx, "a", toolset.NewCombined(toolset.NewCombined(forged, b)))
	assert.EqualError(t, err, `toolset: agent "a": Combined#0/Combined#0/pkgToolset#0 "pkg:fx": boom`+"\n"+
		`  Function#1 "billing": unauthorized`+"\n"+
		`  Function#2: x`+"\n"+
		`Combined#0/Combined#0/pkgToolset#1 "pkg:fx": b down`)
}

func TestBuildToolsUnderCancelledContextFails(t *testing.T) {
	ctx, cancel := context.WithCancel(newRun(t, "r"))
	cancel()
	// Functions only: no goroutine would notice the cancellation.
	tools, err := toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTools("a", "b")...), echoTool("c"))
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, tools)

	ctx, cancel = context.WithDeadline(newRun(t, "r"), time.Now().Add(-time.Second))
	defer cancel()
	_, err = toolset.BuildTools(ctx, "a", toolset.NewFunction(echoTool("a")))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestBuildToolsCancelledDuringTheTurnFails(t *testing.T) {
	ctx, cancel := context.WithCancel(newRun(t, "r"))
	defer cancel()
	// A predicate that does not look at its context, while the turn's
	// context ends under it.
	ts := toolset.NewFunction(echoTools("a", "b")...).Filtered(func(context.Context, toolset.Tool) (bool, error) {
		cancel()
		return true, nil
	})
	_, err := toolset.BuildTools(ctx, "a", ts)
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}
