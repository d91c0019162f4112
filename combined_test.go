package toolset_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// slowToolset yields its tools after a delay, or fails; it records whether
// it saw its context cancelled. The tests that use it run in a synctest
// bubble, so its delays pass in fake time.
type slowToolset struct {
	tools     []toolset.Tool
	delay     time.Duration
	err       error
	cancelled *atomic.Bool
	stubborn  bool // ignores cancellation
}

func (s slowToolset) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	if s.stubborn {
		time.Sleep(s.delay)
		return nil, s.err
	}
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		if s.cancelled != nil {
			s.cancelled.Store(true)
		}
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	return append([]toolset.Tool(nil), s.tools...), nil
}

func TestCombinedOrderUnderConcurrency(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testCombinedOrderUnderConcurrency)
}

func testCombinedOrderUnderConcurrency(t *testing.T) {
	var children []toolset.Toolset
	var want []string
	for i := range 12 {
		name := fmt.Sprintf("t%d", i)
		want = append(want, name)
		children = append(children, slowToolset{tools: echoTools(name), delay: time.Duration(rand.IntN(3000)) * time.Microsecond})
	}
	combined := toolset.NewCombined(children...)
	for range 20 {
		assert.Equal(t, want, names(t, context.Background(), combined))
	}
}

func TestCombinedRunsChildrenConcurrently(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testCombinedRunsChildrenConcurrently)
}

func testCombinedRunsChildrenConcurrently(t *testing.T) {
	var children []toolset.Toolset
	for i := range 8 {
		children = append(children, slowToolset{tools: echoTools(fmt.Sprint("t", i)), delay: 100 * time.Millisecond})
	}
	start := time.Now()
	_, err := toolset.NewCombined(children...).GetTools(context.Background())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 700*time.Millisecond, "eight 100 ms children run side by side")
}

func TestCombinedFailureCancelsSiblings(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testCombinedFailureCancelsSiblings)
}

func testCombinedFailureCancelsSiblings(t *testing.T) {
	var cancelled atomic.Bool
	combined := toolset.NewCombined(
		slowToolset{tools: echoTools("slow"), delay: 10 * time.Second, cancelled: &cancelled},
		slowToolset{delay: time.Millisecond, err: errors.New("server down")},
	)
	start := time.Now()
	_, err := combined.GetTools(context.Background())
	require.EqualError(t, err, "slowToolset#1: server down")
	assert.True(t, cancelled.Load(), "the slow sibling saw its context cancelled")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestCombinedJoinsErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testCombinedJoinsErrors)
}

func testCombinedJoinsErrors(t *testing.T) {
	first, second := errors.New("first down"), errors.New("second down")
	combined := toolset.NewCombined(
		slowToolset{delay: 20 * time.Millisecond, err: first, stubborn: true},
		toolset.NewFunction(echoTool("ok")),
		slowToolset{delay: 20 * time.Millisecond, err: second, stubborn: true},
		listToolset{err: errors.New("third down")},
		slowToolset{delay: 10 * time.Second},
	)
	_, err := combined.GetTools(context.Background())
	require.ErrorIs(t, err, first)
	require.ErrorIs(t, err, second)
	assert.Contains(t, err.Error(), "slowToolset#0: first down")
	assert.Contains(t, err.Error(), "slowToolset#2: second down")
	assert.Contains(t, err.Error(), "listToolset#3: third down")
	assert.NotContains(t, err.Error(), "toolsets[4]", "a sibling cancelled by the failure is not an error of its own")

	_, err = toolset.NewCombined(nil, toolset.NewFunction()).GetTools(context.Background())
	require.EqualError(t, err, "toolset: Combined: Toolset#0: a nil Toolset")
}

func TestCombinedParentCancellation(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testCombinedParentCancellation)
}

func testCombinedParentCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := toolset.NewCombined(
		slowToolset{delay: 10 * time.Second},
		slowToolset{delay: 10 * time.Second},
	).GetTools(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestCombinedConflicts(t *testing.T) {
	ctx := context.Background()
	a := toolset.NewFunction(echoTools("search", "read")...)
	b := toolset.NewFunction(echoTools("search", "write")...).WithLabel("web")
	_, err := toolset.NewCombined(a, b).GetTools(ctx)
	var nce *toolset.NameConflictError
	require.ErrorAs(t, err, &nce)
	assert.Equal(t, []toolset.NameConflict{{Name: "search", Contributors: []string{"Function#0", `Function#1 "web"`}}}, nce.Conflicts)
	assert.Equal(t, "toolset: Combined has tool name conflicts:\n"+
		"  - \"search\" contributed by: Function#0, Function#1 \"web\"\n"+
		"hint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)", err.Error())

	assert.Equal(t, []string{"a_search", "a_read", "search", "write"}, names(t, ctx, a.Prefixed("a").CombinedWith(b)))

	t.Run("nested path", func(t *testing.T) {
		_, err := toolset.NewCombined(toolset.NewFunction(echoTool("x")), toolset.NewCombined(a, toolset.NewFunction(echoTool("read")).Prefixed("p"), b).Prefixed("q"), toolset.NewFunction(echoTool("q_read"))).GetTools(ctx)
		require.ErrorAs(t, err, &nce)
		assert.Equal(t, []toolset.NameConflict{
			{Name: "q_search", Contributors: []string{`Prefixed#1 "q"/Combined/Function#0`, `Prefixed#1 "q"/Combined/Function#2 "web"`}},
			{Name: "q_read", Contributors: []string{`Prefixed#1 "q"/Combined/Function#0`, "Function#2"}},
		}, nce.Conflicts)
	})

	t.Run("only while both are visible", func(t *testing.T) {
		onlyAdmins := toolset.NewFunction(toolset.NewTool("search", "", func(context.Context, struct{}) (int, error) { return 0, nil },
			toolset.WithMetadata(map[string]string{"audience": "admin"}))).Filtered(adminsOnly)
		both := toolset.NewCombined(onlyAdmins, toolset.NewFunction(echoTool("search")))
		assert.Equal(t, []string{"search"}, names(t, withRole(t, "guest"), both))
		_, err := both.GetTools(withRole(t, "admin"))
		require.ErrorAs(t, err, &nce)
	})
}

// closer records the order in which toolsets are closed.
type closer struct {
	listToolset
	name  string
	err   error
	order *[]string
	mu    *sync.Mutex
}

func (c closer) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.order = append(*c.order, c.name)
	return c.err
}

func TestCombinedClose(t *testing.T) {
	var order []string
	var mu sync.Mutex
	mk := func(name string, err error) closer { return closer{name: name, err: err, order: &order, mu: &mu} }
	errB, errD := errors.New("b failed"), errors.New("d failed")
	combined := toolset.NewCombined(
		mk("a", nil),
		toolset.NewPrefixed(mk("b", errB), "p"),
		toolset.NewFunction(),
		toolset.Wrapper{Wrapped: mk("c", nil)},
		mk("d", errD).Filtered(adminsOnlyTS),
	)
	err := combined.Close()
	assert.Equal(t, []string{"d", "c", "b", "a"}, order, "reverse order, past failures")
	require.ErrorIs(t, err, errB)
	require.ErrorIs(t, err, errD)
	assert.Equal(t, err, combined.Close(), "closing again returns the same result")
	assert.Len(t, order, 4, "closing again closes nothing")
}

var adminsOnlyTS = toolset.Predicate(adminsOnly)

func (c closer) Filtered(p toolset.Predicate) *toolset.Filtered { return toolset.NewFiltered(c, p) }

func TestBuildToolsConcurrentTurns(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, testBuildToolsConcurrentTurns)
}

func testBuildToolsConcurrentTurns(t *testing.T) {
	users := toolset.NewFunction(
		echoTool("get_user"),
		toolset.NewTool("delete_user", "", func(context.Context, struct{}) (string, error) { return "deleted", nil },
			toolset.WithMetadata(map[string]string{"audience": "admin"})),
	).Filtered(adminsOnly).Prefixed("users").CombinedWith(slowToolset{tools: echoTools("remote"), delay: time.Millisecond})
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			role := []string{"admin", "guest"}[i%2]
			ctx := withRole(t, role)
			tools, err := toolset.BuildTools(ctx, "a", users, echoTool("standalone"))
			if !assert.NoError(t, err) {
				return
			}
			want := []string{"users_get_user", "remote", "standalone"}
			if role == "admin" {
				want = []string{"users_get_user", "users_delete_user", "remote", "standalone"}
			}
			assert.Equal(t, want, tools.Names())
			_, err = tools.Execute(ctx, toolset.ToolCall{Name: "users_delete_user", Args: nil})
			if role == "admin" {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
	wg.Wait()
}
