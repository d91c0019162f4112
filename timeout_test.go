package toolset_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testTimeout)
}

func testTimeout(t *testing.T) {
	var sawDeadline atomic.Bool
	sleepy := func(opts ...toolset.ToolOption) toolset.Tool {
		return toolset.NewTool("sleepy", "", func(ctx context.Context, in lookupArgs) (string, error) {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < time.Second {
				sawDeadline.Store(true)
			}
			select {
			case <-time.After(time.Duration(in.ID) * time.Millisecond):
				return "done", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}, opts...)
	}
	tools := clones(t, context.Background(), sleepy(toolset.WithTimeout(50*time.Millisecond, toolset.TimeoutTellModel)))
	start := time.Now()
	_, err := call(t, context.Background(), tools, "p_sleepy", `{"id":5000}`)
	var te *toolset.TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Less(t, time.Since(start), 2*time.Second, "the handler's context was cancelled at the deadline")
	assert.True(t, sawDeadline.Load())
	msg, visible := toolset.ErrorText(err)
	require.True(t, visible)
	assert.Equal(t, `tool "p_sleepy" timed out after 50ms; try again with a smaller request, or another approach`, msg)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	got, err := call(t, context.Background(), tools, "renamed", `{"id":1}`)
	require.NoError(t, err)
	assert.Equal(t, "done", got)

	abort := clones(t, context.Background(), sleepy(toolset.WithTimeout(30*time.Millisecond, toolset.TimeoutAbortRun)))
	_, err = call(t, context.Background(), abort, "renamed", `{"id":5000}`)
	var ae *toolset.AbortError
	require.ErrorAs(t, err, &ae)
	assert.EqualError(t, err, `toolset: tool "renamed" timed out after 30ms; the run stops`)
	_, visible = toolset.ErrorText(err)
	assert.False(t, visible)

	// A handler that answers the deadline with a message for the model
	// keeps it.
	polite := toolset.NewTool("polite", "", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", toolset.NewModelError("ask for fewer rows")
	}, toolset.WithTimeout(10*time.Millisecond, toolset.TimeoutAbortRun))
	_, err = polite.Execute(context.Background(), toolset.ToolCall{Args: nil})
	msg, visible = toolset.ErrorText(err)
	require.True(t, visible, "%v", err)
	assert.Contains(t, msg, "ask for fewer rows")

	// The caller's own cancellation is not the tool's timeout.
	started := make(chan struct{})
	patient := toolset.NewTool("patient", "", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	}, toolset.WithTimeout(time.Minute, toolset.TimeoutTellModel))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err = patient.Execute(ctx, toolset.ToolCall{Args: nil})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.As(err, &te))
}

func TestTimeoutContextBehavesLikeWithDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testTimeoutContextBehavesLikeWithDeadline)
}

func testTimeoutContextBehavesLikeWithDeadline(t *testing.T) {
	var inner context.Context
	tool := toolset.NewTool("t", "", func(ctx context.Context, _ struct{}) (string, error) {
		// A child context and a context.AfterFunc hang off the handler's context.
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() { close(fired) })
		defer stop()
		inner = child
		<-child.Done()
		<-fired
		return "", child.Err()
	}, toolset.WithTimeout(30*time.Millisecond, toolset.TimeoutTellModel))
	_, err := tool.Execute(context.Background(), toolset.ToolCall{Args: nil})
	var te *toolset.TimeoutError
	require.ErrorAs(t, err, &te)
	require.ErrorIs(t, inner.Err(), context.DeadlineExceeded)

	quick := toolset.NewTool("q", "", func(ctx context.Context, _ struct{}) (string, error) {
		inner = ctx
		return "ok", ctx.Err()
	}, toolset.WithTimeout(time.Minute, toolset.TimeoutTellModel))
	_, err = quick.Execute(context.Background(), toolset.ToolCall{Args: nil})
	require.NoError(t, err)
	require.ErrorIs(t, inner.Err(), context.Canceled, "the context is cancelled once the call returns")
	<-inner.Done()
}
