package toolset_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// panickingLog is a slog.Handler that panics on every record.
type panickingLog struct{}

func (panickingLog) Enabled(context.Context, slog.Level) bool  { return true }
func (panickingLog) Handle(context.Context, slog.Record) error { panic("log handler exploded") }
func (h panickingLog) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h panickingLog) WithGroup(string) slog.Handler           { return h }

func withPanickingLog(t *testing.T) {
	prev := slog.Default()
	slog.SetDefault(slog.New(panickingLog{}))
	t.Cleanup(func() { slog.SetDefault(prev) })
}

func TestPanickingLogHandlerDoesNotEscape(t *testing.T) {
	withPanickingLog(t)
	ctx := newRun(t, "r")

	// A Goexit in a handler is logged on the goroutine that ends; the
	// handler that panics while it is logged must not end the process.
	done := make(chan struct{})
	quits := toolset.NewTool("t", "", func(context.Context, struct{}) (string, error) {
		runtime.Goexit()
		return "", nil
	})
	go func() {
		defer close(done)
		_, _ = quits.Execute(ctx, toolset.ToolCall{Args: nil})
	}()
	<-done

	// A toolset whose Label panics is logged where its label is only
	// wanted for a message.
	hidden := panicky{getTools: true, label: true}
	var err error
	require.NotPanics(t, func() {
		_, err = toolset.BuildTools(ctx, "a", toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) { return hidden, nil }))
	})
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "GetTools", pe.Callback)
	assert.Equal(t, "panicky", pe.Toolset)
	require.NotPanics(t, func() { assert.Equal(t, "panicky", toolset.LabelOf(hidden)) })

	// A predicate's error is logged, and the tool hidden.
	failing := func(context.Context, toolset.Tool) (bool, error) { return false, errors.New("no") }
	for _, ts := range []toolset.Toolset{
		toolset.NewFunction(echoTool("a"), echoTool("b")).Filtered(failing),
		toolset.NewFunction(echoTool("a"), toolset.NewTool("b", "", okHandler, toolset.WithEnabled(failing))),
	} {
		var tools *toolset.ToolList
		require.NotPanics(t, func() { tools, err = toolset.BuildTools(nextTurn(ctx), "a", ts) })
		require.NoError(t, err)
		assert.NotContains(t, tools.Names(), "b")
	}
}
