package toolset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of testdata")

// durableAgent is an agent's tools as each process of a test makes them
// afresh: a tool that always fails, a deferred cached tool found by a
// search, and a tool that needs approval. The counters count handler runs.
type durableAgent struct {
	lookupRuns, weatherRuns, payRuns atomic.Int64
	paid                             []string
	entries                          []toolset.Toolset
}

type payArgs struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

func newDurableAgent() *durableAgent {
	a := &durableAgent{}
	lookup := toolset.NewTool("lookup", "Look up an order.", func(_ context.Context, in lookupArgs) (string, error) {
		a.lookupRuns.Add(1)
		return "", errors.New("the order service is down")
	}, toolset.WithMaxFailures(2))
	weather := toolset.NewTool("get_weather", "Get the weather of a city.", func(_ context.Context, in struct {
		City string `json:"city"`
	}) (map[string]any, error) {
		a.weatherRuns.Add(1)
		return map[string]any{"city": in.City, "temp": 7}, nil
	}, toolset.WithDeferred(), toolset.WithCache(toolset.CachePolicy{Scope: toolset.CacheRun, Persist: true, TTL: time.Hour}))
	pay := toolset.NewTool("pay", "Pay someone.", func(_ context.Context, in payArgs) (string, error) {
		a.payRuns.Add(1)
		a.paid = append(a.paid, in.To)
		return "paid " + in.To, nil
	}, toolset.WithApprovalRequired(toolset.Always))
	catalog := toolset.NewFunction(lookup, weather, pay)
	a.entries = []toolset.Toolset{catalog, toolset.NewToolSearch(catalog)}
	return a
}

func execute(t *testing.T, ctx context.Context, tools *toolset.ToolList, id, name, args string) (any, error) {
	t.Helper()
	return tools.Execute(ctx, toolset.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)})
}

// The saved state's format is stable: a run with every kind of
// bookkeeping saves to the bytes of testdata/runstate_v1.json, and that
// file restores every kind of it.
func TestRunStateFormat(t *testing.T) {
	golden := filepath.Join("testdata", "runstate_v1.json")
	t.Run("save", inBubble(func(t *testing.T) {
		store := toolset.NewMemoryRunStore()
		ctx := context.Background()
		a := newDurableAgent()
		run, err := toolset.ResumeRun(ctx, store, "req-42")
		require.NoError(t, err)
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "support", a.entries...)
		require.NoError(t, err)
		_, err = execute(t, turn, tools, "c0", "lookup", `{"id":1}`)
		require.Error(t, err)
		_, err = execute(t, turn, tools, "c1", "tool_search", `{"query":"weather"}`)
		require.NoError(t, err)
		for _, c := range []struct{ id, args string }{{"c2", `{"to":"bob","amount":500}`}, {"c3", `{"to":"eve","amount":9}`}, {"c4", `{"to":"ann","amount":1}`}} {
			_, err = execute(t, turn, tools, c.id, "pay", c.args)
			var need *toolset.ApprovalRequiredError
			require.ErrorAs(t, err, &need)
		}
		run.RecordApproval(toolset.ToolCall{ID: "c2", Name: "pay", Args: json.RawMessage(`{"amount":500,"to":"bob"}`)}, toolset.WithEditedArgs(json.RawMessage(`{"to":"bob","amount":50}`)))
		run.RecordDenial(toolset.ToolCall{ID: "c3", Name: "pay", Args: json.RawMessage(`{"to":"eve","amount":9}`)}, "unknown payee")

		time.Sleep(time.Minute)
		turn = run.Turn(ctx)
		tools, err = toolset.BuildTools(turn, "support", a.entries...)
		require.NoError(t, err)
		got, err := execute(t, turn, tools, "c5", "get_weather", `{"city":"Oslo"}`)
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"city": "Oslo", "temp": 7}, got)
		require.NoError(t, run.Suspend(ctx))

		data, version, err := store.Load(ctx, "req-42")
		require.NoError(t, err)
		assert.NotZero(t, version)
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, data, "", "  "))
		pretty.WriteByte('\n')
		if *updateGolden {
			require.NoError(t, os.WriteFile(golden, pretty.Bytes(), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		assert.Equal(t, string(want), pretty.String())
	}))
	t.Run("restore", inBubble(func(t *testing.T) {
		data, err := os.ReadFile(golden)
		require.NoError(t, err)
		store := toolset.NewMemoryRunStore()
		ctx := context.Background()
		_, err = store.Save(ctx, "req-42", data, 0, 0)
		require.NoError(t, err)
		time.Sleep(2 * time.Minute) // a later request, within the cache's TTL

		a := newDurableAgent() // a new process: new tools
		run, err := toolset.ResumeRun(ctx, store, "req-42")
		require.NoError(t, err)
		defer run.End()
		assert.Equal(t, 1, run.Step())
		pending := run.PendingApprovals()
		require.Len(t, pending, 1)
		assert.Equal(t, toolset.ToolCall{ID: "c4", Name: "pay", Args: json.RawMessage(`{"amount":1,"to":"ann"}`)}, pending[0].Call())
		assert.Equal(t, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), pending[0].AskedAt.UTC())

		turn := run.Turn(ctx)
		assert.Equal(t, 2, toolset.FromContext(turn).Step())
		tools, err := toolset.BuildTools(turn, "support", a.entries...)
		require.NoError(t, err)
		assert.Contains(t, tools.Names(), "get_weather", "the reveal is restored")
		got, err := execute(t, turn, tools, "c6", "get_weather", `{ "city": "Oslo" }`)
		require.NoError(t, err)
		assert.JSONEq(t, `{"city":"Oslo","temp":7}`, string(got.(json.RawMessage)), "the cached result is restored")
		assert.Zero(t, a.weatherRuns.Load())

		_, err = execute(t, turn, tools, "c7", "lookup", `{"id":1}`)
		require.Error(t, err)
		turn = run.Turn(ctx)
		tools, err = toolset.BuildTools(turn, "support", a.entries...)
		require.NoError(t, err)
		assert.NotContains(t, tools.Names(), "lookup", "its failure in the earlier process counts: the budget of 2 is spent")

		got, err = execute(t, turn, tools, "c2", "pay", `{"to":"bob","amount":500}`)
		require.NoError(t, err)
		assert.Equal(t, "paid bob", got)
		_, err = execute(t, turn, tools, "c3", "pay", `{"to":"eve","amount":9}`)
		var denied *toolset.ApprovalDeniedError
		require.ErrorAs(t, err, &denied)
		assert.Equal(t, "unknown payee", denied.Reason)
		assert.Equal(t, []string{"bob"}, a.paid)
	}))
}

// An approval binds the schema the call was asked with: when the tool's
// schema changed before the run resumed, the call is asked again, and the
// handler does not run.
func TestResumedApprovalOfAChangedSchemaIsAskedAgain(t *testing.T) {
	store := toolset.NewMemoryRunStore()
	ctx := context.Background()
	var runs atomic.Int64
	need := toolset.WithApprovalRequired(toolset.Always)
	v1 := toolset.NewTool("pay", "", func(_ context.Context, in payArgs) (string, error) {
		runs.Add(1)
		return "paid", nil
	}, need)
	call := toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":5}`)}

	run, err := toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", v1)
	require.NoError(t, err)
	_, err = tools.Execute(turn, call)
	var asked *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &asked)
	first := asked.SchemaHash
	run.RecordApproval(call)
	require.NoError(t, run.Suspend(ctx))

	// The new version also takes a memo: an approver of the old one never
	// saw it.
	v2 := toolset.NewTool("pay", "", func(_ context.Context, in struct {
		payArgs
		Memo string `json:"memo,omitempty"`
	}) (string, error) {
		runs.Add(1)
		return "paid", nil
	}, need)
	run, err = toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	defer run.End()
	turn = run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "a", v2)
	require.NoError(t, err)
	_, err = tools.Execute(turn, call)
	require.ErrorAs(t, err, &asked, "the schema changed: the call is asked again")
	assert.NotEqual(t, first, asked.SchemaHash)
	assert.Zero(t, runs.Load())
	require.Len(t, run.PendingApprovals(), 1)
	assert.Equal(t, asked.SchemaHash, run.PendingApprovals()[0].SchemaHash)

	run.RecordApproval(call)
	_, err = tools.Execute(turn, call)
	require.NoError(t, err, "approved for the new schema")
	assert.Equal(t, int64(1), runs.Load())
}

// A resumed run runs only the arguments that were approved: another call
// under the approved call's ID is asked for.
func TestResumedRunNeverRunsUnapprovedArgs(t *testing.T) {
	store := toolset.NewMemoryRunStore()
	ctx := context.Background()
	a := newDurableAgent()
	run, err := toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	approved := toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":5}`)}
	run.RecordApproval(approved)
	require.NoError(t, run.Suspend(ctx))

	run, err = toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", a.entries...)
	require.NoError(t, err)
	_, err = execute(t, turn, tools, "c1", "pay", `{"to":"mallory","amount":5000}`)
	var asked *toolset.ApprovalRequiredError
	require.ErrorAs(t, err, &asked)
	_, err = execute(t, turn, tools, "c1", "lookalike", `{"to":"bob","amount":5}`)
	require.Error(t, err)
	assert.Zero(t, a.payRuns.Load())
	got, err := tools.Execute(turn, approved)
	require.NoError(t, err)
	assert.Equal(t, "paid bob", got)
}

// Arguments edited by the approver are validated against the tool's
// schema before they run: edits that do not fit are refused with an
// ArgumentError, and the handler does not run.
func TestEditedApprovalArgsAreValidated(t *testing.T) {
	for _, durable := range []bool{false, true} {
		a := newDurableAgent()
		ctx := context.Background()
		var run *toolset.RunContext
		if durable {
			var err error
			run, err = toolset.ResumeRun(ctx, toolset.NewMemoryRunStore(), "r")
			require.NoError(t, err)
		} else {
			run = toolset.NewRun("r")
		}
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "a", a.entries...)
		require.NoError(t, err)
		call := toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":500}`)}
		_, err = tools.Execute(turn, call)
		require.Error(t, err)

		run.RecordApproval(call, toolset.WithEditedArgs(json.RawMessage(`{"amount":50}`))) // no payee: the decoder would take it, the schema does not
		_, err = tools.Execute(turn, call)
		var ae *toolset.ArgumentError
		require.ErrorAs(t, err, &ae, "durable=%v", durable)
		assert.Equal(t, "pay", ae.Tool)
		assert.Zero(t, a.payRuns.Load())

		_, err = tools.Execute(turn, call)
		var asked *toolset.ApprovalRequiredError
		require.ErrorAs(t, err, &asked, "the refused edit used the approval up")
		run.RecordApproval(asked.Call, toolset.WithEditedArgs(json.RawMessage(`{"to":"ann","amount":50}`)))
		got, err := tools.Execute(turn, call)
		require.NoError(t, err)
		assert.Equal(t, "paid ann", got, "the approver's arguments run")
		run.End()
	}
}

// Saved entries are bound to a tool by the name it was offered under and
// its schema's hash: a tool renamed between save and resume loses them,
// and another tool that now has the name, with another schema, does not
// get them.
func TestRestoredStateNeverNamesAnotherTool(t *testing.T) {
	ctx := context.Background()
	failing := func(name string, schema *jsonschema.Schema) toolset.Tool {
		return toolset.NewRawTool(name, "", schema, func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("down")
		}, toolset.WithMaxFailures(1))
	}
	store := toolset.NewMemoryRunStore()
	run, err := toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", failing("lookup", nil))
	require.NoError(t, err)
	_, err = execute(t, turn, tools, "c1", "lookup", `{}`)
	require.Error(t, err)
	require.NoError(t, run.Suspend(ctx))
	saved, _, err := store.Load(ctx, "r")
	require.NoError(t, err)

	other := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties()}
	other.Properties.Set("q", &jsonschema.Schema{Type: "string"})
	for name, tool := range map[string]toolset.Tool{
		"renamed":                  failing("lookup_v2", nil),
		"another tool of the name": failing("lookup", other),
	} {
		store := toolset.NewMemoryRunStore()
		_, err := store.Save(ctx, "r", saved, 0, 0)
		require.NoError(t, err)
		run, err := toolset.ResumeRun(ctx, store, "r")
		require.NoError(t, err)
		tools, err := toolset.BuildTools(run.Turn(ctx), "a", tool)
		require.NoError(t, err)
		assert.Equal(t, []string{tool.Name}, tools.Names(), "%s: the spent budget is not its", name)
		run.End()
	}
	store = toolset.NewMemoryRunStore()
	_, err = store.Save(ctx, "r", saved, 0, 0)
	require.NoError(t, err)
	run, err = toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	tools, err = toolset.BuildTools(run.Turn(ctx), "a", failing("lookup", nil))
	require.NoError(t, err)
	assert.Empty(t, tools.Names(), "the same tool gets its spent budget")
	run.End()
}

// Saved state that is not this run's, or not of a version this library
// reads, is refused.
func TestResumeRunRefusesForeignState(t *testing.T) {
	ctx := context.Background()
	for name, data := range map[string]string{
		"another run's":   `{"version":1,"id":"other","step":0}`,
		"a later version": `{"version":2,"id":"r","step":0}`,
		"not JSON":        `{"version":1,`,
		"a bad decision":  `{"version":1,"id":"r","step":0,"approvals":[{"call_id":"c","tool":"pay","args":{},"decision":"maybe"}]}`,
		"a bad failure":   `{"version":1,"id":"r","step":0,"failures":[{"tool":"t","schema":"","steps":0,"last_step":0}]}`,
		"too large":       `{"version":1,"id":"r","step":0,"x":"` + strings.Repeat("x", 16<<20) + `"}`,
	} {
		store := toolset.NewMemoryRunStore()
		_, err := store.Save(ctx, "r", []byte(data), 0, 0)
		require.NoError(t, err)
		run, err := toolset.ResumeRun(ctx, store, "r")
		require.Error(t, err, name)
		assert.Nil(t, run)
		assert.Contains(t, err.Error(), `toolset: run "r": saved state`, name)
		assert.Less(t, len(err.Error()), 400, name)
		fresh := toolset.NewRun("r")
		require.NoError(t, fresh.Err(), "%s: a refused resume leaves the ID free", name)
		fresh.End()
	}
}

// A run held by a process (resumed, not yet suspended or ended) cannot be
// resumed elsewhere until its lease runs out, so a crashed process does
// not keep it forever.
func TestHeldRunIsResumedOnlyAfterItsLease(t *testing.T) {
	synctestRun(t, func(t *testing.T) {
		ctx := context.Background()
		store := toolset.NewMemoryRunStore()
		run, err := toolset.ResumeRun(ctx, store, "r", toolset.WithRunLease(time.Minute))
		require.NoError(t, err)
		held, _, err := store.Load(ctx, "r")
		require.NoError(t, err)
		run.End()

		// Another process's store, holding the state the first process
		// saved before it crashed.
		elsewhere := toolset.NewMemoryRunStore()
		_, err = elsewhere.Save(ctx, "r", held, 0, 0)
		require.NoError(t, err)
		_, err = toolset.ResumeRun(ctx, elsewhere, "r")
		require.ErrorIs(t, err, toolset.ErrRunStateConflict)
		assert.Contains(t, err.Error(), "another process holds it until 2000-01-01T00:01:00Z")
		time.Sleep(time.Minute)
		run, err = toolset.ResumeRun(ctx, elsewhere, "r")
		require.NoError(t, err, "the lease ran out")
		run.End()
	})
}

// A save that finds the state changed by another process makes the run
// unusable here, with the conflict.
func TestRunOverwrittenElsewhereIsLost(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	run, err := toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	defer run.End()
	_, version, err := store.Load(ctx, "r")
	require.NoError(t, err)
	_, err = store.Save(ctx, "r", []byte(`{"version":1,"id":"r","step":9}`), version, 0)
	require.NoError(t, err)

	_, err = toolset.BuildTools(run.Turn(ctx), "a", echoTool("t"))
	require.ErrorIs(t, err, toolset.ErrRunStateConflict)
	require.ErrorIs(t, run.Err(), toolset.ErrRunStateConflict)
	_, err = toolset.BuildTools(run.Turn(ctx), "a", echoTool("t"))
	require.ErrorIs(t, err, toolset.ErrRunStateConflict)
	run.End()
	data, _, err := store.Load(ctx, "r")
	require.NoError(t, err)
	assert.JSONEq(t, `{"version":1,"id":"r","step":9}`, string(data), "End does not delete the state another process has")
}

// failingStore fails its saves once told to.
type failingStore struct {
	*toolset.MemoryRunStore
	fail atomic.Bool
}

var errStoreDown = errors.New("store down")

func (s *failingStore) Save(ctx context.Context, id string, data []byte, expect int64, ttl time.Duration) (int64, error) {
	if s.fail.Load() {
		return 0, errStoreDown
	}
	return s.MemoryRunStore.Save(ctx, id, data, expect, ttl)
}

// A store that fails stops the run with its error, and an approved call
// does not run until its approval is used up in the store.
func TestRunStoreErrorStopsTheRun(t *testing.T) {
	ctx := context.Background()
	store := &failingStore{MemoryRunStore: toolset.NewMemoryRunStore()}
	a := newDurableAgent()
	run, err := toolset.ResumeRun(ctx, store, "r")
	require.NoError(t, err)
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", a.entries...)
	require.NoError(t, err)
	call := toolset.ToolCall{ID: "c1", Name: "pay", Args: json.RawMessage(`{"to":"bob","amount":5}`)}
	_, err = tools.Execute(turn, call)
	require.Error(t, err)
	run.RecordApproval(call)
	require.NoError(t, run.Save(ctx))

	store.fail.Store(true)
	_, err = tools.Execute(turn, call)
	require.ErrorIs(t, err, errStoreDown)
	assert.Contains(t, err.Error(), `toolset: run "r": saving its state: store down`)
	_, forModel := toolset.ErrorText(err)
	assert.False(t, forModel, "a store error stops the run")
	assert.Zero(t, a.payRuns.Load(), "the approval was not used up in the store: the call did not run")
	_, err = toolset.BuildTools(run.Turn(ctx), "a", a.entries...)
	require.ErrorIs(t, err, errStoreDown)

	store.fail.Store(false)
	turn = run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "a", a.entries...)
	require.NoError(t, err, "the store is back")
	got, err := tools.Execute(turn, call)
	require.NoError(t, err, "the approval was kept")
	assert.Equal(t, "paid bob", got)
}

// The run's own TTL reaches the store: a suspended run that nobody resumes
// is gone once it expires.
func TestSuspendedRunExpires(t *testing.T) {
	synctestRun(t, func(t *testing.T) {
		ctx := context.Background()
		store := toolset.NewMemoryRunStore()
		run, err := toolset.ResumeRun(ctx, store, "r", toolset.WithStateTTL(time.Hour))
		require.NoError(t, err)
		run.RecordDenial(toolset.ToolCall{ID: "c", Name: "t"}, "no")
		require.NoError(t, run.Suspend(ctx))
		time.Sleep(59 * time.Minute)
		data, _, err := store.Load(ctx, "r")
		require.NoError(t, err)
		assert.Contains(t, string(data), `"decision":"denied"`)
		time.Sleep(time.Minute)
		data, _, err = store.Load(ctx, "r")
		require.NoError(t, err)
		assert.Nil(t, data)
	})
}

// A held run with marks and HTML-special characters saves to exactly the
// bytes of testdata/runstate_v1_held.json (compacted), the holder's
// random token aside: the encoding is the format, not just its meaning.
func TestRunStateBytes(t *testing.T) {
	golden := filepath.Join("testdata", "runstate_v1_held.json")
	inBubble(func(t *testing.T) {
		store := toolset.NewMemoryRunStore()
		ctx := context.Background()
		a := newDurableAgent()
		run, err := toolset.ResumeRun(ctx, store, "req-<&>")
		require.NoError(t, err)
		defer run.End()
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "support", a.entries...)
		require.NoError(t, err)
		_, err = execute(t, turn, tools, "c0", "lookup", `{"id":1}`)
		require.Error(t, err)
		_, err = execute(t, turn, tools, "c1", "tool_search", `{"query":"weather"}`)
		require.NoError(t, err)
		_, err = execute(t, turn, tools, "c<2>", "pay", `{"to":"b&b","amount":500}`)
		var need *toolset.ApprovalRequiredError
		require.ErrorAs(t, err, &need)
		run.RecordDenial(toolset.ToolCall{ID: "c3", Name: "pay", Args: json.RawMessage(`{"to":"eve","amount":9}`)}, "<unknown> & unpaid")
		require.NoError(t, run.Mark("skill:b&w"))
		require.NoError(t, run.Mark("skill:<a>"))
		turn = run.Turn(ctx)
		tools, err = toolset.BuildTools(turn, "support", a.entries...)
		require.NoError(t, err)
		_, err = execute(t, turn, tools, "c5", "get_weather", `{"city":"Ås & <Oslo>"}`)
		require.NoError(t, err)
		require.NoError(t, run.Save(ctx))

		data, _, err := store.Load(ctx, "req-<&>")
		require.NoError(t, err)
		var held struct {
			Holder struct {
				Token string `json:"token"`
			} `json:"holder"`
		}
		require.NoError(t, json.Unmarshal(data, &held))
		require.Len(t, held.Holder.Token, 32)
		data = bytes.Replace(data, []byte(held.Holder.Token), []byte(strings.Repeat("0", 32)), 1)
		if *updateGolden {
			var pretty bytes.Buffer
			require.NoError(t, json.Indent(&pretty, data, "", "  "))
			pretty.WriteByte('\n')
			require.NoError(t, os.WriteFile(golden, pretty.Bytes(), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, want))
		assert.Equal(t, compact.String(), string(data))
	})(t)
}

// BenchmarkSave saves a run with every kind of bookkeeping.
func BenchmarkSave(b *testing.B) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	a := newDurableAgent()
	run, err := toolset.ResumeRun(ctx, store, "bench-save")
	require.NoError(b, err)
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "support", a.entries...)
	require.NoError(b, err)
	call := func(id, name, args string) {
		_, _ = tools.Execute(turn, toolset.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)})
	}
	call("c0", "lookup", `{"id":1}`)
	call("c1", "tool_search", `{"query":"weather"}`)
	call("c2", "pay", `{"to":"bob","amount":500}`)
	run.RecordDenial(toolset.ToolCall{ID: "c3", Name: "pay", Args: json.RawMessage(`{"to":"eve","amount":9}`)}, "no")
	require.NoError(b, run.Mark("skill:pdf"))
	turn = run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "support", a.entries...)
	require.NoError(b, err)
	call("c5", "get_weather", `{"city":"Oslo"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := run.Save(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResume resumes a run from a state with every kind of
// bookkeeping.
func BenchmarkResume(b *testing.B) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("testdata", "runstate_v1.json"))
	require.NoError(b, err)
	store := toolset.NewMemoryRunStore()
	b.ReportAllocs()
	for b.Loop() {
		_, err := store.Save(ctx, "req-42", data, 0, 0)
		require.NoError(b, err)
		run, err := toolset.ResumeRun(ctx, store, "req-42")
		if err != nil {
			b.Fatal(err)
		}
		run.End()
	}
}
