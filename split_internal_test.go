package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
)

// A predicate that calls runtime.Goexit on the caller's goroutine while a
// large turn is split across goroutines ends that goroutine, but not
// before the other goroutines of the turn are done: until then they write
// their masks into scratch memory of the turn, which the goroutine's
// unwinding gives back to the pool, where another turn, of another run,
// would take it and share their masks.
func TestGoexitDuringSplitTurnWaitsForItsGoroutines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	tools := make([]Tool, splitMin/2)
	for i := range tools {
		tools[i] = NewRawTool(fmt.Sprint("t", i), "", nil, func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	}
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		first := NewFunction(tools...).Prefixed("a").Filtered(func(context.Context, Tool) (bool, error) {
			runtime.Goexit()
			return true, nil
		})
		blocked := false
		second := NewFunction(tools...).Prefixed("b").Filtered(func(context.Context, Tool) (bool, error) {
			if !blocked {
				blocked = true
				<-release // the worker is still busy with its share
			}
			return true, nil
		})
		c := NewCombined(first, second)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.GetTools(context.Background())
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Error("the goroutine of a split turn ended, and gave back the turn's scratch memory, while another goroutine of the turn still used it")
		default:
		}
		if !blocked {
			t.Error("the turn was not split")
		}
		close(release)
		<-done
	})
}
