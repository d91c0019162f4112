package toolsettest

import (
	"context"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// builder is the method set every pointer toolset type of the module has.
type builder interface {
	toolset.Toolset
	Prefixed(prefix string, opts ...toolset.PrefixOption) *toolset.Prefixed
	Renamed(names map[string]string) *toolset.Renamed
	Filtered(pred toolset.Predicate) *toolset.Filtered
	Prepared(fn toolset.PrepareFunc) *toolset.Prepared
	CombinedWith(others ...toolset.Toolset) *toolset.Combined
}

var (
	_ builder = (*Fake)(nil)
	_ builder = (*Recorder)(nil)
)

func TestRecorderBuilderKeepsRecording(t *testing.T) {
	rec := Record(NewFake("echo", Return("ok")))
	ctx := NewRun(t).Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "a", rec.Prefixed("x"))
	require.NoError(t, err)
	require.Equal(t, []string{"x_echo"}, tools.Names())
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "x_echo", Args: []byte(`{}`)})
	require.NoError(t, err)
	calls := rec.Calls()
	require.Len(t, calls, 1, "the prefixed copy is the recorder's tool, not the Wrapper's")
	assert.Equal(t, "x_echo", calls[0].Tool)
}
