package toolset_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestGoexitingHandlerIsNotCachedAsSuccess(t *testing.T) {
	defer goleak.VerifyNone(t)
	var calls atomic.Int32
	tool := toolset.NewTool("t", "", func(context.Context, struct{}) (string, error) {
		if calls.Add(1) == 1 {
			runtime.Goexit()
		}
		return "fresh", nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", tool)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { // as a provider adapter runs a call
		defer close(done)
		_, _ = tools.Execute(ctx, toolset.ToolCall{Name: "t", Args: nil})
	}()
	<-done
	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "t", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "fresh", res, "a call that never returned left no result in the cache")
	assert.Equal(t, int32(2), calls.Load())
}

func TestGoexitingHandlerFailsTheCallsWaitingForIt(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	started := make(chan struct{})
	var calls atomic.Int32
	tool := toolset.NewTool("t", "", func(context.Context, struct{}) (string, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-release
			runtime.Goexit()
		}
		return "fresh", nil
	}, toolset.WithCache(toolset.CachePolicy{}))
	ctx := newRun(t, "r")
	go func() { _, _ = tool.Execute(ctx, toolset.ToolCall{Args: nil}) }()
	<-started
	type outcome struct {
		res any
		err error
	}
	waiter := make(chan outcome)
	go func() {
		res, err := tool.Execute(ctx, toolset.ToolCall{Args: nil})
		waiter <- outcome{res, err}
	}()
	// Let the second call find the first in flight, then end the first.
	for tool.CacheStats().Misses < 2 {
		runtime.Gosched()
	}
	close(release)
	o := <-waiter
	if o.err == nil {
		assert.Equal(t, "fresh", o.res, "a waiter never gets the nil of a call that did not return")
	} else {
		assert.ErrorIs(t, o.err, toolset.ErrGoexit)
	}
}

func TestGoexitInTurnCallbackCancelsItsSiblings(t *testing.T) {
	defer goleak.VerifyNone(t)
	quits := toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) {
		runtime.Goexit()
		return nil, nil
	})
	// A sibling that ends only when the turn is cancelled, as a remote
	// listing that waits on the network does.
	waits := toolset.NewDynamic(func(ctx context.Context) (toolset.Toolset, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	synctest.Test(t, func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, err := toolset.BuildTools(newRun(t, "r"), "a", waits, quits)
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, toolset.ErrGoexit)
			assert.NotErrorIs(t, err, context.Canceled, "the sibling only stopped because of the Goexit")
		default:
			t.Fatal("BuildTools waits for a sibling that a Goexit did not cancel")
		}
	})
}
