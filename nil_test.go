package toolset_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTypedNilToolsetIsAnError hands every toolset type of the package, as
// a nil pointer, to everything that takes a toolset, and calls its methods:
// each says which nil it met, none panics.
func TestTypedNilToolsetIsAnError(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		ts   toolset.Toolset
	}{
		{"Function", (*toolset.Function)(nil)},
		{"Filtered", (*toolset.Filtered)(nil)},
		{"Prefixed", (*toolset.Prefixed)(nil)},
		{"Renamed", (*toolset.Renamed)(nil)},
		{"Prepared", (*toolset.Prepared)(nil)},
		{"Dynamic", (*toolset.Dynamic)(nil)},
		{"Combined", (*toolset.Combined)(nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := "nil *" + c.name
			_, err := toolset.BuildTools(ctx, "a", echoTool("x"), c.ts)
			require.EqualError(t, err, `toolset: agent "a": `+c.name+`#1: a `+want)

			_, err = toolset.NewCombined(c.ts).GetTools(ctx)
			require.EqualError(t, err, "toolset: Combined: "+c.name+"#0: a "+want)

			_, err = c.ts.GetTools(ctx)
			require.EqualError(t, err, "toolset: "+want)

			_, err = toolset.NewPrefixed(c.ts, "p").GetTools(ctx)
			require.EqualError(t, err, "toolset: "+want)

			assert.Equal(t, c.name, toolset.LabelOf(c.ts))
			if l, ok := c.ts.(toolset.Labeler); ok {
				assert.Equal(t, "", l.Label())
			}
			if ip, ok := c.ts.(toolset.InstructionsProvider); ok {
				_, err = ip.Instructions(ctx)
				require.EqualError(t, err, "toolset: "+want)
			}
			_, err = toolset.Instructions(ctx, c.ts)
			require.ErrorContains(t, err, want)
			if cl, ok := c.ts.(interface{ Close() error }); ok {
				require.EqualError(t, cl.Close(), "toolset: "+want)
			}
			// Wrapped, the nil is forwarded to, not panicked on.
			outer := toolset.NewPrefixed(c.ts, "p")
			if _, ok := c.ts.(toolset.InstructionsProvider); ok {
				_, err = outer.Instructions(ctx)
				require.EqualError(t, err, "toolset: "+want)
			}
			if _, ok := c.ts.(interface{ Close() error }); ok {
				require.EqualError(t, outer.Close(), "toolset: "+want)
			}
			_, err = toolset.BuildTools(ctx, "a", outer)
			require.ErrorContains(t, err, want)
			require.NotContains(t, err.Error(), "panic")
		})
	}
}

// TestTypedNilBuilders calls the builder methods on nil receivers: they
// build toolsets whose GetTools reports the nil.
func TestTypedNilBuilders(t *testing.T) {
	ctx := context.Background()
	var f *toolset.Function
	var flt *toolset.Filtered
	var c *toolset.Combined
	keep := func(context.Context, toolset.Tool) (bool, error) { return true, nil }
	same := func(_ context.Context, ts []toolset.Tool) ([]toolset.Tool, error) { return ts, nil }
	for _, ts := range []toolset.Toolset{
		f.WithLabel("l"), f.WithInstructions("i"), f.Prefixed("p"), f.Renamed(nil),
		flt.Filtered(keep), flt.Prepared(same), flt.CombinedWith(), c.CombinedWith(f),
		toolset.NewPrefixed(flt, "x"), toolset.NewRenamed(flt, nil), toolset.NewFiltered(flt, keep), toolset.NewPrepared(flt, same),
	} {
		_, err := toolset.BuildTools(ctx, "a", ts)
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), "nil *Function") || strings.Contains(err.Error(), "nil *Filtered") ||
			strings.Contains(err.Error(), "nil *Combined"), err.Error())
		assert.NotContains(t, err.Error(), "panic")
	}
}
