package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Values a callback may panic with, or return, whose own methods misbehave:
// the library formats and inspects them, and must survive that too.

// nastyValue's String panics with another nastyValue, so printing it
// panics while fmt prints the first panic: fmt gives up and panics on. The
// third one prints, so that the runtime can report a panic that escapes.
type nastyValue struct{ depth int }

func (v nastyValue) String() string {
	if v.depth >= 2 {
		return "escaped"
	}
	panic(nastyValue{v.depth + 1})
}

// nastyError is an error whose every method panics.
type nastyError struct{}

func (nastyError) Error() string     { panic("error method exploded") }
func (nastyError) ModelText() string { panic("error method exploded") }
func (nastyError) Unwrap() error     { panic("error method exploded") }
func (nastyError) Is(error) bool     { panic("error method exploded") }
func (nastyError) As(any) bool       { panic("error method exploded") }

// requireSafeError fails unless err is non-nil and can be formatted.
func requireSafeError(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.NotPanics(t, func() { _ = err.Error() })
	require.NotPanics(t, func() { _ = fmt.Sprint(err) })
}

func TestPanicValueWhoseStringPanicsDoesNotEscape(t *testing.T) {
	defer goleak.VerifyNone(t)
	pred := func(context.Context, toolset.Tool) (bool, error) { panic(nastyValue{}) }
	ts := toolset.NewFunction(echoTool("a")).Filtered(pred)
	var err error
	require.NotPanics(t, func() { _, err = toolset.BuildTools(newRun(t, "r"), "a", ts) })
	requireSafeError(t, err)
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "filter predicate", pe.Callback)
	assert.Contains(t, err.Error(), "toolset_test.nastyValue")

	// On the goroutines of BuildTools, too.
	other := toolset.NewFunction(echoTool("z")).Filtered(func(context.Context, toolset.Tool) (bool, error) { return true, nil })
	require.NotPanics(t, func() { _, err = toolset.BuildTools(newRun(t, "r"), "a", other, ts) })
	requireSafeError(t, err)

	// And in the call path, whose error the caller formats.
	tool := toolset.NewTool("t", "", func(context.Context, struct{}) (string, error) { panic(nastyValue{}) })
	require.NotPanics(t, func() { _, err = tool.Execute(newRun(t, "r"), toolset.ToolCall{Args: nil}) })
	requireSafeError(t, err)
}

func TestPanicWithNilValueIsAPanicNotAGoexit(t *testing.T) {
	tool := toolset.NewTool("t", "", func(context.Context, struct{}) (string, error) { panic(nil) })
	_, err := tool.Execute(newRun(t, "r"), toolset.ToolCall{Args: nil})
	var pe *toolset.PanicError
	require.ErrorAs(t, err, &pe)
	var pn *runtime.PanicNilError
	assert.ErrorAs(t, err, &pn)
	assert.NotErrorIs(t, err, toolset.ErrGoexit)

	pred := func(context.Context, toolset.Tool) (bool, error) { panic(nil) }
	_, err = toolset.BuildTools(newRun(t, "r"), "a", toolset.NewFunction(echoTool("a")).Filtered(pred))
	assert.ErrorAs(t, err, &pn)
}

func TestHandlerErrorWhoseMethodsPanicFailsTheCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	mw := func(next toolset.Handler) toolset.Handler { return next }
	for _, opts := range [][]toolset.ToolOption{
		nil,
		{toolset.WithMaxFailures(2)},
		{toolset.WithTimeout(1<<40, toolset.TimeoutTellModel)},
		{toolset.WithMiddleware(mw), toolset.WithCache(toolset.CachePolicy{})},
	} {
		tool := toolset.NewTool("t", "", func(context.Context, struct{}) (string, error) { return "", nastyError{} }, opts...)
		ctx := newRun(t, "r")
		tools, err := toolset.BuildTools(ctx, "a", tool)
		require.NoError(t, err)
		require.NotPanics(t, func() { _, err = tools.Execute(ctx, toolset.ToolCall{Name: "t", Args: nil}) })
		requireSafeError(t, err)
		var pe *toolset.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "t", pe.Tool)
		assert.Equal(t, "handler error", pe.Callback)
		require.NotPanics(t, func() { _, _ = toolset.ErrorText(err) })
	}
}

func TestCallbackErrorWhoseMethodsPanicFailsTheTurnOrCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	run := testRun(t, "r")
	ctx := toolset.NewContext(context.Background(), run)
	failing := func(string) toolset.Toolset {
		return toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) { return listToolset{err: nastyError{}}, nil })
	}
	prepared := toolset.NewFunction(echoTool("p")).Prepared(func(context.Context, []toolset.Tool) ([]toolset.Tool, error) {
		return nil, nastyError{}
	})
	for name, entries := range map[string][]toolset.Toolset{
		"one GetTools":         {failing("x")},
		"concurrent GetTools":  {failing("x"), failing("y")},
		"Prepared function":    {prepared},
		"concurrent Prepared":  {prepared, failing("y")},
		"Dynamic function":     {toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) { return nil, nastyError{} })},
		"user toolset in list": {listToolset{err: nastyError{}}},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { _, err = toolset.BuildTools(run.Turn(ctx), "a", entries...) })
			requireSafeError(t, err)
			require.NotPanics(t, func() { _, err = toolset.NewCombined(entries...).GetTools(ctx) })
			requireSafeError(t, err)
		})
	}

	for name, opt := range map[string]toolset.ToolOption{
		"approval predicate": toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) {
			return false, nastyError{}
		}),
		"cache key": toolset.WithCache(toolset.CachePolicy{Key: func(context.Context, json.RawMessage) (string, error) {
			return "", nastyError{}
		}}),
	} {
		t.Run(name, func(t *testing.T) {
			tools, err := toolset.BuildTools(run.Turn(ctx), "a", toolset.NewTool("t", "", okHandler, opt, toolset.WithMaxFailures(1)))
			require.NoError(t, err)
			require.NotPanics(t, func() { _, err = tools.Execute(ctx, toolset.ToolCall{ID: "1", Name: "t"}) })
			requireSafeError(t, err)
		})
	}
}

func TestMiddlewarePanickingWhileWrappingMakesTheToolUnusable(t *testing.T) {
	bad := func(toolset.Handler) toolset.Handler { panic("wrapping exploded") }
	var tool toolset.Tool
	require.NotPanics(t, func() { tool = toolset.NewTool("t", "", okHandler, toolset.WithMiddleware(bad)) })
	var pe *toolset.PanicError
	require.ErrorAs(t, tool.Err(), &pe)
	assert.Equal(t, "middleware", pe.Callback)
	assert.Equal(t, "t", pe.Tool)
	_, err := toolset.BuildTools(newRun(t, "r"), "a", tool)
	require.ErrorAs(t, err, &pe)
	_, err = tool.Execute(newRun(t, "r"), toolset.ToolCall{Args: nil})
	require.ErrorAs(t, err, &pe)
}

type failingJSON struct{}

func (failingJSON) MarshalJSON() ([]byte, error) { return nil, errors.New("cannot encode") }

func TestContentWhoseStructuredResultCannotBeEncodedIsAnError(t *testing.T) {
	// The structured result is all the model would see: dropping it
	// silently would tell the model the call returned nothing.
	for _, c := range []*toolset.Content{
		{Structured: failingJSON{}},
		{Structured: make(chan int)},
		{Parts: []toolset.Part{{MIMEType: "image/png", Data: []byte{1}}}, Structured: failingJSON{}},
	} {
		_, err := toolset.ResultText(c)
		assert.ErrorContains(t, err, "encoding the structured result")
	}
	// With text, the structured result is not rendered.
	text, err := toolset.ResultText(&toolset.Content{Parts: []toolset.Part{{Text: "hi"}}, Structured: failingJSON{}})
	require.NoError(t, err)
	assert.Equal(t, "hi", text)
	text, err = toolset.ResultText((*toolset.Content)(nil))
	require.NoError(t, err)
	assert.Equal(t, "null", text)
}
