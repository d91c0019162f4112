package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunAccessors(t *testing.T) {
	type deps struct{ DSN string }
	n := toolset.NewKey[int]("n")
	run := testRun(t, "r1", toolset.WithValue(Role, "admin"), toolset.WithValue(n, 3), toolset.WithDeps(deps{DSN: "postgres://"}))
	assert.Equal(t, "r1", run.ID())
	assert.Empty(t, run.ParentID())
	assert.Equal(t, -1, run.Step(), "no turn begun yet")
	assert.Equal(t, "admin", run.Value("role"))
	assert.Equal(t, 3, run.Value("n"))
	assert.Nil(t, run.Value("missing"))
	assert.Equal(t, deps{DSN: "postgres://"}, run.Deps())
	require.NoError(t, run.Err())

	ctx := run.Turn(context.Background())
	run.Turn(ctx)
	turn := toolset.FromContext(ctx)
	assert.Equal(t, 0, turn.Step(), "the first turn is step 0")
	assert.Equal(t, 1, run.Step(), "the run's own value reads the latest turn begun")
	assert.Equal(t, "r1", turn.ID())
	d, ok := toolset.DepsAs[deps](ctx)
	require.True(t, ok)
	assert.Equal(t, "postgres://", d.DSN)
	_, ok = toolset.DepsAs[string](ctx)
	assert.False(t, ok)

	// No run: nil, and every method says so.
	var none *toolset.RunContext
	assert.Nil(t, toolset.FromContext(context.Background()))
	assert.Empty(t, none.ID())
	assert.Empty(t, none.ParentID())
	assert.Equal(t, -1, none.Step())
	assert.Nil(t, none.Value("role"))
	assert.Nil(t, none.Deps())
	assert.NoError(t, none.Err())
	none.End()
	none.RecordApproval(toolset.ToolCall{ID: "c"})
	assert.Nil(t, toolset.FromContext(toolset.NewContext(ctx, nil)), "a nil run hides the outer one")
}

func TestRunWithEmptyIDGetsAUniqueOne(t *testing.T) {
	a, b := testRun(t, ""), testRun(t, "")
	assert.Regexp(t, `^run-[0-9a-f]{16}$`, a.ID())
	assert.NotEqual(t, a.ID(), b.ID())
	require.NoError(t, a.Err())
	require.NoError(t, b.Err())
}

// Misuse: BuildTools under a context that carries the run but no turn.
func TestBuildToolsWithoutATurnIsRefused(t *testing.T) {
	run := testRun(t, "r")
	_, err := toolset.BuildTools(toolset.NewContext(context.Background(), run), "a", echoTool("x"))
	var te *toolset.TurnError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, toolset.TurnError{RunID: "r", Step: -1, Reason: te.Reason}, *te)
	assert.EqualError(t, err, `toolset: run "r": the context carries the run but no turn: derive each turn's context with RunContext.Turn`)
}

// Misuse: one turn's context reused for every BuildTools of the loop, and a
// stale turn's context.
func TestBuildToolsTwiceInOneTurnIsRefused(t *testing.T) {
	run := testRun(t, "r")
	ctx := run.Turn(context.Background())
	for range 1 {
		_, err := toolset.BuildTools(ctx, "a", echoTool("x"))
		require.NoError(t, err)
	}
	_, err := toolset.BuildTools(ctx, "a", echoTool("x"))
	var te *toolset.TurnError
	require.ErrorAs(t, err, &te)
	assert.EqualError(t, err, `toolset: turn 0 of run "r" already built its tools: call Turn for the next turn`)

	next := run.Turn(context.Background())
	_, err = toolset.BuildTools(toolset.NewContext(context.Background(), toolset.FromContext(next)), "a", echoTool("x"))
	require.NoError(t, err, "a turn's RunContext attached elsewhere is that turn")

	stale := run.Turn(context.Background())
	run.Turn(context.Background())
	_, err = toolset.BuildTools(stale, "a", echoTool("x"))
	require.ErrorAs(t, err, &te)
	assert.EqualError(t, err, `toolset: turn 2 of run "r" is stale: turn 3 has begun; build under the context of the latest turn`)

	// A build that fails does not use up its turn.
	fresh := run.Turn(context.Background())
	_, err = toolset.BuildTools(fresh, "a", listToolset{err: errors.New("backend down")})
	require.ErrorContains(t, err, "backend down")
	_, err = toolset.BuildTools(fresh, "a", echoTool("x"))
	require.NoError(t, err, "tried again after a failure")
}

// Concurrent BuildTools under one turn: exactly one builds.
func TestConcurrentBuildsOfOneTurn(t *testing.T) {
	ctx := newRun(t, "r")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = toolset.BuildTools(ctx, "a", echoTool("x")) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		var te *toolset.TurnError
		if err == nil {
			ok++
		} else {
			require.ErrorAs(t, err, &te)
		}
	}
	assert.Equal(t, 1, ok)
}

// Misuse: work under a run after its End.
func TestEndedRunIsRefused(t *testing.T) {
	var runs int
	tool := toolset.NewTool("t", "", func(context.Context, struct{}) (string, error) { runs++; return "ok", nil })
	run := toolset.NewRun("done")
	ctx := run.Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "a", tool)
	require.NoError(t, err)
	run.End()
	run.End() // idempotent
	require.ErrorIs(t, run.Err(), toolset.ErrRunEnded)
	require.ErrorIs(t, toolset.FromContext(ctx).Err(), toolset.ErrRunEnded, "every value of the run")

	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "t"})
	require.ErrorIs(t, err, toolset.ErrRunEnded)
	assert.EqualError(t, err, `toolset: tool "t" not called in run "done": the run has ended: make a new run with NewRun`)
	_, err = tool.Execute(ctx, toolset.ToolCall{})
	require.ErrorIs(t, err, toolset.ErrRunEnded, "a direct call too")
	_, err = toolset.BuildTools(run.Turn(context.Background()), "a", tool)
	require.ErrorIs(t, err, toolset.ErrRunEnded)
	assert.EqualError(t, err, `toolset: agent "a": tools not built in run "done": the run has ended: make a new run with NewRun`)
	assert.Zero(t, runs)
	_, forModel := toolset.ErrorText(err)
	assert.False(t, forModel)
}

// Two runs of different IDs at once, and a run made again with the ID of
// one that ended, are fine.
func TestRunIDsAreFreeAgainAfterEnd(t *testing.T) {
	a, b := toolset.NewRun("a"), toolset.NewRun("b")
	require.NoError(t, a.Err())
	require.NoError(t, b.Err())
	a.End()
	again := toolset.NewRun("a")
	require.NoError(t, again.Err())
	b.End()
	again.End()
}

// A run made again with a live run's ID is unusable, however it is used.
func TestRunConflictIsUnusable(t *testing.T) {
	live := testRun(t, "live")
	dup := toolset.NewRun("live")
	defer dup.End()
	var conflict *toolset.RunConflictError
	require.ErrorAs(t, dup.Err(), &conflict)
	assert.Equal(t, "live", dup.ID())
	_, err := toolset.BuildTools(dup.Turn(context.Background()), "a", echoTool("x"))
	require.ErrorAs(t, err, &conflict)
	_, err = echoTool("x").Execute(toolset.NewContext(context.Background(), dup), toolset.ToolCall{})
	require.ErrorAs(t, err, &conflict)
	child := dup.NewChild("")
	require.ErrorAs(t, child.Err(), &conflict, "a child of an unusable run is unusable")
	child.End()
	dup.End()
	require.NoError(t, live.Err(), "ending the unusable run leaves the live one be")
	require.Error(t, toolset.NewRun("live").Err())
}

// A run dropped without End does not keep its ID: once collected, it is
// free again, and a warning says what happened.
func TestRunDroppedWithoutEndIsCollected(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	func() {
		run := toolset.NewRun("forgotten")
		ctx := run.Turn(context.Background())
		_, err := toolset.BuildTools(ctx, "a", echoTool("x"))
		require.NoError(t, err)
	}()
	logged := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(buf.String(), `toolset: run \"forgotten\" was garbage-collected without End`)
	}
	for i := 0; i < 100 && !logged(); i++ {
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on a goroutine of their own
	}
	require.True(t, logged(), "the warning is logged")
	again := toolset.NewRun("forgotten")
	require.NoError(t, again.Err(), "the ID is free again")
	again.End()
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A child run inherits values, deps and the stable-list setting, and has
// its own steps and ID.
func TestNewChild(t *testing.T) {
	type deps struct{ N int }
	parent := testRun(t, "p", toolset.WithValue(Role, "admin"), toolset.WithDeps(deps{1}), toolset.WithStableToolList())
	parent.Turn(context.Background())
	child := parent.NewChild("", toolset.WithValue(Tenant, "acme"))
	defer child.End()
	assert.Equal(t, "p/1", child.ID())
	assert.Equal(t, "p", child.ParentID())
	assert.Equal(t, -1, child.Step(), "its own steps")
	ctx := child.Turn(context.Background())
	assert.Equal(t, "admin", Role.Get(ctx))
	assert.Equal(t, "acme", Tenant.Get(ctx))
	d, _ := toolset.DepsAs[deps](ctx)
	assert.Equal(t, 1, d.N)
	assert.Nil(t, parent.Value("tenant"), "the parent is unchanged")
	second := parent.NewChild("")
	defer second.End()
	assert.Equal(t, "p/2", second.ID())
	override := parent.NewChild("named", toolset.WithValue(Role, "viewer"), toolset.WithDeps(nil))
	defer override.End()
	assert.Equal(t, "viewer", override.Value("role"))
	assert.Nil(t, override.Deps())
}

// The natural loop keeps a search's reveals across its turns.
func TestRevealsKeptAcrossTurns(t *testing.T) {
	lazy := toolset.NewFunction(toolset.NewTool("archive_lookup", "Look up in the archive.", okHandler, toolset.WithDeferred()))
	search := toolset.NewToolSearch(lazy)
	run := testRun(t, "r")
	var names [][]string
	for step := range 3 {
		ctx := run.Turn(context.Background())
		tools, err := toolset.BuildTools(ctx, "a", lazy, search)
		require.NoError(t, err)
		names = append(names, tools.Names())
		if step == 0 {
			_, err = tools.Execute(ctx, toolset.ToolCall{Name: "tool_search", Args: json.RawMessage(`{"query":"archive"}`)})
			require.NoError(t, err)
		}
	}
	assert.Equal(t, [][]string{{"tool_search"}, {"archive_lookup", "tool_search"}, {"archive_lookup", "tool_search"}}, names)
	run.End()
	again := newRun(t, "r")
	tools, err := toolset.BuildTools(again, "a", lazy, search)
	require.NoError(t, err)
	assert.Equal(t, []string{"tool_search"}, tools.Names(), "a new run of the ID starts without the reveals")
}

// The natural loop keeps an approval across turns: asked in one turn,
// decided, and run in the next.
func TestApprovalsKeptAcrossTurns(t *testing.T) {
	var paid int
	pay := toolset.NewTool("pay", "", func(context.Context, struct{}) (string, error) { paid++; return "paid", nil },
		toolset.WithApprovalRequired(toolset.Always))
	run := testRun(t, "r")
	call := toolset.ToolCall{ID: "call_1", Name: "pay", Args: json.RawMessage(`{}`)}

	ctx := run.Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "a", pay)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, call)
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	run.RecordApproval(need.Call) // a human said yes, while the run paused

	ctx = run.Turn(context.Background())
	tools, err = toolset.BuildTools(ctx, "a", pay)
	require.NoError(t, err)
	got, err := tools.Execute(ctx, call)
	require.NoError(t, err)
	assert.Equal(t, "paid", got)
	assert.Equal(t, 1, paid)
}

// subAgent is a real agent with a loop of its own: each Run builds its own
// tools for two turns, as its RunContext tells it, and reports what it saw.
type subAgent struct {
	tools []toolset.Toolset
	mu    sync.Mutex
	saw   []string
	runs  []*toolset.RunContext
}

func (a *subAgent) Name() string        { return "helper" }
func (a *subAgent) Description() string { return "Helps." }
func (a *subAgent) Run(ctx context.Context, prompt string) (string, error) {
	run := toolset.FromContext(ctx)
	a.mu.Lock()
	a.runs = append(a.runs, run)
	a.mu.Unlock()
	var out []string
	for range 2 {
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "helper", a.tools...)
		if err != nil {
			return "", err
		}
		rc := toolset.FromContext(turn)
		out = append(out, fmt.Sprintf("%s step %d role %s parent %s tools %v", rc.ID(), rc.Step(), Role.Get(turn), rc.ParentID(), tools.Names()))
		for _, name := range tools.Names() {
			_, err := tools.Execute(turn, toolset.ToolCall{ID: prompt + "-" + name, Name: name, Args: json.RawMessage(`{"query":"archive"}`)})
			if _, forModel := toolset.ErrorText(err); err != nil && !forModel {
				return "", err
			}
		}
	}
	a.mu.Lock()
	a.saw = append(a.saw, out...)
	a.mu.Unlock()
	return strings.Join(out, "; "), nil
}

// The sub-agent contract: NewAgentTool runs its agent under a child run of
// the caller's, which inherits values, has its own steps, failure budgets
// and reveals, knows its parent, and ends when the agent returns.
func TestAgentToolRunsAChildRun(t *testing.T) {
	flaky := toolset.NewTool("flaky", "", func(_ context.Context, in ToolSearchQuery) (string, error) {
		return "", toolset.NewModelError("no")
	}, toolset.WithMaxFailures(1))
	lazy := toolset.NewFunction(toolset.NewTool("archive_lookup", "Look up in the archive.", func(context.Context, ToolSearchQuery) (string, error) {
		return "found", nil
	}, toolset.WithDeferred()))
	agent := &subAgent{tools: []toolset.Toolset{flaky, lazy, toolset.NewToolSearch(lazy)}}
	delegate := toolset.NewAgentTool(agent)

	parent := testRun(t, "parent", toolset.WithValue(Role, "admin"))
	ctx := parent.Turn(context.Background())
	tools, err := toolset.BuildTools(ctx, "lead", delegate, flaky)
	require.NoError(t, err)
	for _, id := range []string{"c1", "c2"} {
		_, err := tools.Execute(ctx, toolset.ToolCall{ID: id, Name: "helper", Args: json.RawMessage(`{"prompt":"` + id + `"}`)})
		require.NoError(t, err)
	}
	_, err = tools.Execute(ctx, toolset.ToolCall{Name: "helper", Args: json.RawMessage(`{"prompt":"x"}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"parent/helper/c1 step 0 role admin parent parent tools [flaky tool_search]",
		"parent/helper/c1 step 1 role admin parent parent tools [archive_lookup tool_search]",
		"parent/helper/c2 step 0 role admin parent parent tools [flaky tool_search]",
		"parent/helper/c2 step 1 role admin parent parent tools [archive_lookup tool_search]",
		"parent/helper/#1 step 0 role admin parent parent tools [flaky tool_search]",
		"parent/helper/#1 step 1 role admin parent parent tools [archive_lookup tool_search]",
	}, agent.saw, "each call a child run: its own steps, budgets and reveals, the parent's values")
	for _, r := range agent.runs {
		require.ErrorIs(t, r.Err(), toolset.ErrRunEnded, "ended when Run returns")
	}

	// The parent's budget and reveals are its own.
	next := parent.Turn(context.Background())
	tools, err = toolset.BuildTools(next, "lead", delegate, flaky)
	require.NoError(t, err)
	assert.Equal(t, []string{"helper", "flaky"}, tools.Names(), "the children's failures are not the parent's")

	// Without a calling run, the agent gets a fresh run of its own.
	agent.saw = nil
	_, err = delegate.Execute(context.Background(), toolset.ToolCall{Args: json.RawMessage(`{"prompt":"solo"}`)})
	require.NoError(t, err)
	require.Len(t, agent.saw, 2)
	assert.Regexp(t, `^run-[0-9a-f]{16} step 0 role  parent  tools`, agent.saw[0])
	require.ErrorIs(t, agent.runs[len(agent.runs)-1].Err(), toolset.ErrRunEnded)
}

// ToolSearchQuery is the arguments of the sub-agent's tools.
type ToolSearchQuery struct {
	Query string `json:"query"`
}

// A call a sub-agent's tool needs approved stops the parent's run with the
// child's error, which names the child run.
func TestAgentToolApprovalStopsTheParent(t *testing.T) {
	wipe := toolset.NewTool("wipe", "", func(context.Context, ToolSearchQuery) (string, error) { return "wiped", nil },
		toolset.WithApprovalRequired(toolset.Always))
	delegate := toolset.NewAgentTool(&subAgent{tools: []toolset.Toolset{wipe}})
	ctx := newRun(t, "parent")
	tools, err := toolset.BuildTools(ctx, "lead", delegate)
	require.NoError(t, err)
	_, err = tools.Execute(ctx, toolset.ToolCall{ID: "c1", Name: "helper", Args: json.RawMessage(`{"prompt":"p"}`)})
	var need *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &need)
	assert.Equal(t, "parent/helper/c1", need.RunID)
	assert.Equal(t, "wipe", need.Call.Name)
	assert.Contains(t, err.Error(), `run "parent/helper/c1"`)
	_, forModel := toolset.ErrorText(err)
	assert.False(t, forModel, "it stops the parent's run")
}

// Misuse: a RunContext literal, the habit of the old API, is refused.
func TestRunContextLiteralIsRefused(t *testing.T) {
	lit := &toolset.RunContext{}
	require.ErrorContains(t, lit.Err(), "the RunContext was not made by NewRun")
	_, err := toolset.BuildTools(toolset.NewContext(context.Background(), lit), "a", echoTool("x"))
	require.ErrorContains(t, err, "the RunContext was not made by NewRun")
	_, err = toolset.BuildTools(lit.Turn(context.Background()), "a", echoTool("x"))
	require.ErrorContains(t, err, "the RunContext was not made by NewRun")
	_, err = echoTool("x").Execute(toolset.NewContext(context.Background(), lit), toolset.ToolCall{})
	require.ErrorContains(t, err, "the RunContext was not made by NewRun")
	assert.Empty(t, lit.ID())
	lit.End()
	assert.Equal(t, context.Background(), (*toolset.RunContext)(nil).Turn(context.Background()), "no run, no turn")
}
