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
	// Copies of one tool under many names, as a Prefixed makes: a turn
	// treats them as it would distinct tools, and making them compiles
	// one schema, not tens of thousands.
	one := NewRawTool("t", "", nil, func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	tools := make([]Tool, splitMin/2)
	for i := range tools {
		tools[i] = one
		tools[i].Name = fmt.Sprint("t", i)
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

// A Goexit in the first turn of a fresh Combined under GetTools unwinds
// past the end of its reservation of a block; the scratch given back to
// the pool keeps none, or every later turn that takes it would lay its
// copies in that block, and the pool would keep the block alive.
func TestGoexitInFreshCombinedLeavesNoReservationInThePool(t *testing.T) {
	tools := make([]Tool, 2*minBlock)
	for i := range tools {
		tools[i] = NewRawTool(fmt.Sprint("t", i), "", nil, func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	}
	quits := NewFunction(tools...).Prefixed("b").Filtered(func(context.Context, Tool) (bool, error) {
		runtime.Goexit()
		return true, nil
	})
	c := NewCombined(NewFunction(tools...).Prefixed("a"), quits)
	var hint, used int
	var block *toolBlock
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := getScratch()
		defer func() {
			sc.release()
			hint, block, used = sc.toolHint, sc.block, sc.used
		}()
		materialize(context.Background(), c, sc)
	}()
	<-done
	if hint != 0 || block != nil || used != 0 {
		t.Errorf("a released scratch keeps a reservation: hint %d, block %v, used %d", hint, block != nil, used)
	}
}
