package adktoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/adktoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scripted is an ADK model that answers each model call with the next
// step of its script, and records what each call offered and was sent.
type scripted struct {
	mu      sync.Mutex
	steps   []func(req *model.LLMRequest) *genai.Content
	offered [][]string
	system  []string // the system instruction of each call
}

func (m *scripted) Name() string { return "scripted" }

func (m *scripted) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.mu.Lock()
		i := len(m.offered)
		m.offered = append(m.offered, declared(req))
		var sys []string
		if req.Config != nil && req.Config.SystemInstruction != nil {
			for _, p := range req.Config.SystemInstruction.Parts {
				sys = append(sys, p.Text)
			}
		}
		m.system = append(m.system, strings.Join(sys, "\n"))
		m.mu.Unlock()
		if i >= len(m.steps) {
			yield(nil, fmt.Errorf("scripted model: no step %d", i))
			return
		}
		yield(&model.LLMResponse{Content: m.steps[i](req)}, nil)
	}
}

// calls returns the model's turn making the given calls.
func calls(fcs ...*genai.FunctionCall) *genai.Content {
	c := &genai.Content{Role: genai.RoleModel}
	for _, fc := range fcs {
		c.Parts = append(c.Parts, &genai.Part{FunctionCall: fc})
	}
	return c
}

func call(id, name string, args map[string]any) *genai.FunctionCall {
	return &genai.FunctionCall{ID: id, Name: name, Args: args}
}

func answer(text string) *genai.Content { return genai.NewContentFromText(text, genai.RoleModel) }

// declared returns the names of the functions req declares, sorted.
func declared(req *model.LLMRequest) []string {
	var names []string
	if req.Config != nil {
		for _, t := range req.Config.Tools {
			for _, d := range t.FunctionDeclarations {
				names = append(names, d.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// responses returns the function responses req sends the model, by call ID.
func responses(req *model.LLMRequest) map[string]map[string]any {
	out := make(map[string]map[string]any)
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				out[p.FunctionResponse.ID] = p.FunctionResponse.Response
			}
		}
	}
	return out
}

var Role = toolset.NewKey[string]("role")

type orderArgs struct {
	ID int `json:"id" jsonschema:"order ID"`
}

// fixture is an agent whose tools are the library's, behind the bridge,
// and a runner over an in-memory session service.
type fixture struct {
	model  *scripted
	tools  *adktoolset.Toolset
	runner *runner.Runner
	svc    session.Service
}

func newFixture(t *testing.T, entries []toolset.Toolset, steps ...func(req *model.LLMRequest) *genai.Content) *fixture {
	t.Helper()
	f := &fixture{model: &scripted{steps: steps}, svc: session.InMemoryService()}
	f.tools = adktoolset.New("lib", entries, adktoolset.WithStateKeys("role"))
	t.Cleanup(func() { _ = f.tools.Close() })
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: f.model, Toolsets: []tool.Toolset{f.tools}})
	require.NoError(t, err)
	f.runner, err = runner.New(runner.Config{AppName: "app", Agent: a, SessionService: f.svc})
	require.NoError(t, err)
	return f
}

func (f *fixture) session(t *testing.T, id string, state map[string]any) {
	t.Helper()
	_, err := f.svc.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: id, State: state})
	require.NoError(t, err)
}

// run sends msg in session sid and returns the events.
func (f *fixture) run(t *testing.T, sid string, msg *genai.Content) []*session.Event {
	t.Helper()
	evs, err := f.runErr(t, sid, msg)
	require.NoError(t, err)
	return evs
}

// runErr sends msg in session sid and returns the events and the first
// error the runner yields.
func (f *fixture) runErr(t *testing.T, sid string, msg *genai.Content) ([]*session.Event, error) {
	t.Helper()
	var evs []*session.Event
	for ev, err := range f.runner.Run(t.Context(), "u", sid, msg, agent.RunConfig{}) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func userText(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleUser) }

func TestRunnerRevealsAcrossStepsAndFiltersByRole(t *testing.T) {
	var lookups, fetches atomic.Int32
	lookup := toolset.NewTool("lookup", "Look an order up.", func(_ context.Context, in orderArgs) (string, error) {
		lookups.Add(1)
		return fmt.Sprintf("order %d: shipped", in.ID), nil
	})
	refund := toolset.NewTool("refund", "Refund an order.", func(_ context.Context, in orderArgs) (string, error) {
		return "refunded", nil
	})
	staff := toolset.NewFunction(refund).Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) {
		return Role.Get(ctx) == "staff", nil
	})
	archive := toolset.NewFunction(toolset.NewTool("archive_fetch", "Fetch an archived order from the archive.",
		func(_ context.Context, in orderArgs) (map[string]any, error) {
			fetches.Add(1)
			return map[string]any{"id": in.ID, "archived": true}, nil
		}, toolset.WithDeferred()))
	entries := []toolset.Toolset{toolset.NewFunction(lookup), staff, archive, toolset.NewToolSearch(archive)}

	for _, tc := range []struct {
		role string
		want []string
	}{
		{"staff", []string{"lookup", "refund", "tool_search"}},
		{"guest", []string{"lookup", "tool_search"}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			lookups.Store(0)
			fetches.Store(0)
			var step1, step2 map[string]map[string]any
			f := newFixture(t, entries,
				func(*model.LLMRequest) *genai.Content {
					return calls(call("c1", "lookup", map[string]any{"id": 7}),
						call("c2", "tool_search", map[string]any{"query": "archive"}))
				},
				func(req *model.LLMRequest) *genai.Content {
					step1 = responses(req)
					return calls(call("c3", "archive_fetch", map[string]any{"id": 3}))
				},
				func(req *model.LLMRequest) *genai.Content {
					step2 = responses(req)
					return answer("done")
				})
			f.session(t, "s-"+tc.role, map[string]any{"role": tc.role})
			evs := f.run(t, "s-"+tc.role, userText("where are my orders?"))

			require.Len(t, f.model.offered, 3)
			assert.Equal(t, tc.want, f.model.offered[0], "step 0: no deferred tool, refund for staff only")
			assert.Equal(t, sortedWith(tc.want, "archive_fetch"), f.model.offered[1], "step 1 offers the tool step 0 revealed")
			assert.Equal(t, map[string]any{"result": "order 7: shipped"}, step1["c1"])
			assert.Contains(t, fmt.Sprint(step1["c2"]), "archive_fetch")
			assert.Equal(t, map[string]any{"id": float64(3), "archived": true}, step2["c3"])
			assert.Equal(t, int32(1), lookups.Load())
			assert.Equal(t, int32(1), fetches.Load())

			inv := evs[len(evs)-1].InvocationID
			run := f.tools.Run(inv)
			require.NotNil(t, run, "the invocation's run is live")
			assert.Equal(t, "lib/"+inv, run.ID())
			assert.Equal(t, 2, run.Step(), "one turn per model step")
			assert.Equal(t, tc.role, run.Value("role"))
			assert.NoError(t, f.tools.Err(inv))
			f.tools.End(inv)
			assert.Nil(t, f.tools.Run(inv))
		})
	}
}

func sortedWith(names []string, more ...string) []string {
	out := append(slices.Clone(names), more...)
	slices.Sort(out)
	return out
}

// confirmationRequest returns the ID of the adk_request_confirmation call
// in evs and the original call it asks about.
func confirmationRequest(t *testing.T, evs []*session.Event) (string, *genai.FunctionCall) {
	t.Helper()
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil && p.FunctionCall.Name == toolconfirmation.FunctionCallName {
				orig, err := toolconfirmation.OriginalCallFrom(p.FunctionCall)
				require.NoError(t, err)
				return p.FunctionCall.ID, orig
			}
		}
	}
	t.Fatal("no confirmation was requested")
	return "", nil
}

func confirm(id string, ok bool) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: id, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": ok},
	}}}}
}

func TestRunnerApprovalThroughConfirmation(t *testing.T) {
	for _, approved := range []bool{true, false} {
		t.Run(fmt.Sprint("approved=", approved), func(t *testing.T) {
			var wipes atomic.Int32
			wipe := toolset.NewTool("wipe", "Wipe an order.", func(_ context.Context, in orderArgs) (string, error) {
				wipes.Add(1)
				return fmt.Sprintf("order %d wiped", in.ID), nil
			}, toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return true, nil }))
			var after map[string]map[string]any
			f := newFixture(t, []toolset.Toolset{wipe},
				func(*model.LLMRequest) *genai.Content {
					return calls(call("w1", "wipe", map[string]any{"id": 9}))
				},
				func(req *model.LLMRequest) *genai.Content {
					after = responses(req)
					return answer("done")
				})
			f.session(t, "s", nil)

			evs := f.run(t, "s", userText("wipe order 9"))
			id, orig := confirmationRequest(t, evs)
			assert.Equal(t, "w1", orig.ID)
			assert.Equal(t, "wipe", orig.Name)
			assert.Zero(t, wipes.Load(), "nothing runs before the decision")
			assert.Len(t, f.model.offered, 1, "the invocation pauses")
			inv := evs[0].InvocationID
			pending := f.tools.Run(inv).PendingApprovals()
			require.Len(t, pending, 1)
			assert.Equal(t, "w1", pending[0].Call().ID)

			evs = f.run(t, "s", confirm(id, approved))
			assert.Equal(t, inv, evs[len(evs)-1].InvocationID, "ADK resumes the same invocation, so the same run")
			require.Len(t, f.model.offered, 2)
			if approved {
				assert.Equal(t, int32(1), wipes.Load())
				assert.Equal(t, map[string]any{"result": "order 9 wiped"}, after["w1"])
			} else {
				assert.Zero(t, wipes.Load())
				assert.Contains(t, fmt.Sprint(after["w1"]["error"]), adktoolset.DeniedReason)
			}
			assert.Empty(t, f.tools.Run(inv).PendingApprovals())
		})
	}
}

func TestRunnerModelErrorsAndStoppingErrors(t *testing.T) {
	var flakyCalls atomic.Int32
	flaky := toolset.NewTool("flaky", "Sometimes fails.", func(context.Context, struct{}) (string, error) {
		if flakyCalls.Add(1) == 1 {
			return "", toolset.NewModelError("busy, try again")
		}
		return "ok", nil
	})
	boom := errors.New("database is down")
	broken := toolset.NewTool("broken", "Always fails.", func(context.Context, struct{}) (string, error) {
		return "", boom
	})
	var step1 map[string]map[string]any
	f := newFixture(t, []toolset.Toolset{toolset.NewFunction(flaky, broken)},
		func(*model.LLMRequest) *genai.Content {
			return calls(call("f1", "flaky", nil), call("bad", "lookup", map[string]any{}), call("a1", "flaky", map[string]any{"x": 1}))
		},
		func(req *model.LLMRequest) *genai.Content {
			step1 = responses(req)
			return calls(call("b1", "broken", map[string]any{}))
		},
		func(*model.LLMRequest) *genai.Content { return answer("should not be reached") })
	f.session(t, "s", nil)
	evs, runErr := f.runErr(t, "s", userText("go"))
	var se *adktoolset.StopError
	require.ErrorAs(t, runErr, &se, "the invocation fails with the stopping error")
	assert.Equal(t, "b1", se.Call.ID)
	require.ErrorIs(t, runErr, boom)

	assert.Equal(t, "busy, try again", step1["f1"]["error"], "a model error is the tool's error")
	assert.Contains(t, step1["bad"]["error"], "lookup", "a tool ADK does not know")
	assert.Contains(t, fmt.Sprint(step1["a1"]["error"]), "x", "arguments are validated against the schema")
	assert.Len(t, f.model.offered, 2, "an error that is not for the model stops the run")
	inv := evs[0].InvocationID
	err := f.tools.Err(inv)
	require.ErrorIs(t, err, boom)
	assert.Same(t, se, err, "Err returns the error the runner yielded")
	var te *toolset.ToolError
	assert.ErrorAs(t, err, &te)
	var last map[string]any
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.ID == "b1" {
				last = p.FunctionResponse.Response
			}
		}
	}
	assert.Equal(t, adktoolset.ErrStopped.Error(), last["error"])
	assert.False(t, strings.Contains(fmt.Sprint(last), "database"), "the stopping error is not sent to the model")
}

func TestRunnerHostileConfiguration(t *testing.T) {
	lookup := toolset.NewTool("lookup", "Look an order up.", func(_ context.Context, in orderArgs) (string, error) {
		return "ok", nil
	})
	newRunner := func(t *testing.T, ts *adktoolset.Toolset, m *scripted, extra ...tool.Tool) *runner.Runner {
		t.Helper()
		t.Cleanup(func() { _ = ts.Close() })
		a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: extra, Toolsets: []tool.Toolset{ts}})
		require.NoError(t, err)
		r, err := runner.NewInMemory("app", a)
		require.NoError(t, err)
		return r
	}
	drain := func(r *runner.Runner, sid string) ([]*session.Event, error) {
		var evs []*session.Event
		for ev, err := range r.Run(t.Context(), "u", sid, userText("hi"), agent.RunConfig{}) {
			if err != nil {
				return evs, err
			}
			evs = append(evs, ev)
		}
		return evs, nil
	}

	t.Run("run options panic", func(t *testing.T) {
		ts := adktoolset.New("lib", []toolset.Toolset{lookup}, adktoolset.WithRunOptions(func(agent.ReadonlyContext) []toolset.RunOption {
			panic("hostile")
		}))
		_, err := drain(newRunner(t, ts, &scripted{}), "s")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "panicked")
	})

	t.Run("name conflict", func(t *testing.T) {
		other := toolset.NewTool("lookup", "Another lookup.", func(context.Context, struct{}) (string, error) { return "", nil })
		ts := adktoolset.New("lib", []toolset.Toolset{toolset.NewFunction(lookup), toolset.NewFunction(other)})
		m := &scripted{}
		_, err := drain(newRunner(t, ts, m), "s")
		var nc *toolset.NameConflictError
		require.ErrorAs(t, err, &nc)
		assert.Empty(t, m.offered, "the model is not called")
	})

	t.Run("a name an ADK tool has", func(t *testing.T) {
		ts := adktoolset.New("lib", []toolset.Toolset{lookup})
		own, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "ADK's own."},
			func(agent.Context, orderArgs) (map[string]any, error) { return nil, nil })
		require.NoError(t, err)
		m := &scripted{}
		_, err = drain(newRunner(t, ts, m, own), "s")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "lookup")
		assert.Empty(t, m.offered)
	})

	t.Run("bounded live runs", func(t *testing.T) {
		ts := adktoolset.New("lib", []toolset.Toolset{lookup}, adktoolset.WithMaxRuns(1))
		m := &scripted{steps: []func(*model.LLMRequest) *genai.Content{
			func(*model.LLMRequest) *genai.Content { return answer("one") },
			func(*model.LLMRequest) *genai.Content { return answer("two") },
		}}
		r := newRunner(t, ts, m)
		evs1, err := drain(r, "s1")
		require.NoError(t, err)
		inv1 := evs1[0].InvocationID
		run1 := ts.Run(inv1)
		require.NotNil(t, run1)
		evs2, err := drain(r, "s2")
		require.NoError(t, err)
		assert.Nil(t, ts.Run(inv1), "the least recently used run is ended")
		assert.ErrorIs(t, run1.Err(), toolset.ErrRunEnded)
		assert.NotNil(t, ts.Run(evs2[0].InvocationID))
	})
}

// A tool revealed before the pause is still revealed when the answer
// resumes the invocation: the run is the same.
func TestRunnerRevealSurvivesConfirmation(t *testing.T) {
	var wipes atomic.Int32
	archive := toolset.NewFunction(toolset.NewTool("archive_wipe", "Wipe an archived order from the archive.",
		func(_ context.Context, in orderArgs) (string, error) {
			wipes.Add(1)
			return "wiped", nil
		}, toolset.WithDeferred(), toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return true, nil })))
	tier := toolset.NewKey[int]("tier")
	var sawTier atomic.Int64
	probe := toolset.NewTool("probe", "Report the tier.", func(ctx context.Context, _ struct{}) (int, error) {
		sawTier.Store(int64(tier.Get(ctx)))
		return tier.Get(ctx), nil
	})
	m := &scripted{steps: []func(*model.LLMRequest) *genai.Content{
		func(*model.LLMRequest) *genai.Content {
			return calls(call("s1", "tool_search", map[string]any{"query": "archive wipe"}), call("p1", "probe", nil))
		},
		func(*model.LLMRequest) *genai.Content {
			return calls(call("w1", "archive_wipe", map[string]any{"id": 4}))
		},
		func(*model.LLMRequest) *genai.Content { return answer("done") },
	}}
	ts := adktoolset.New("lib", []toolset.Toolset{archive, toolset.NewToolSearch(archive), probe},
		adktoolset.WithRunOptions(func(ctx agent.ReadonlyContext) []toolset.RunOption {
			v, err := ctx.ReadonlyState().Get("tier")
			if err != nil {
				return nil
			}
			n, _ := v.(int)
			return []toolset.RunOption{toolset.WithValue(tier, n)}
		}))
	t.Cleanup(func() { _ = ts.Close() })
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Toolsets: []tool.Toolset{ts}})
	require.NoError(t, err)
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: svc})
	require.NoError(t, err)
	f := &fixture{model: m, tools: ts, runner: r, svc: svc}
	f.session(t, "s", map[string]any{"tier": 3})

	evs := f.run(t, "s", userText("wipe archived order 4"))
	assert.Equal(t, int64(3), sawTier.Load(), "a typed value from the session state")
	id, orig := confirmationRequest(t, evs)
	assert.Equal(t, "w1", orig.ID)
	assert.Zero(t, wipes.Load())

	evs = f.run(t, "s", confirm(id, true))
	assert.Equal(t, int32(1), wipes.Load(), "the revealed tool runs once approved")
	require.Len(t, m.offered, 3)
	assert.Contains(t, m.offered[2], "archive_wipe", "still revealed after the resume")
	assert.Equal(t, 2, ts.Run(evs[len(evs)-1].InvocationID).Step(),
		"three turns: two model steps before the pause, then the resume's, in which the approved call runs and the model answers")
}

func TestRunnerInstructionsPerTurn(t *testing.T) {
	refund := toolset.NewTool("refund", "Refund an order.", func(context.Context, orderArgs) (string, error) { return "refunded", nil })
	staff := toolset.NewFunction(refund).WithInstructions("Refunds need an order ID.").
		Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) { return Role.Get(ctx) == "staff", nil })
	for role, want := range map[string]bool{"staff": true, "guest": false} {
		t.Run(role, func(t *testing.T) {
			f := newFixture(t, []toolset.Toolset{staff}, func(*model.LLMRequest) *genai.Content { return answer("ok") })
			f.session(t, "s", map[string]any{"role": role})
			f.run(t, "s", userText("hi"))
			require.Len(t, f.model.system, 1)
			assert.Equal(t, want, strings.Contains(f.model.system[0], "Refunds need an order ID."),
				"a filtered toolset's instructions reach the model in the turns it shows a tool: %q", f.model.system[0])
		})
	}
}

func TestRunnerResultThatCannotBeEncodedStopsTheRun(t *testing.T) {
	bad := toolset.NewTool("bad", "Returns a channel.", func(context.Context, struct{}) (chan int, error) { return make(chan int), nil })
	f := newFixture(t, []toolset.Toolset{bad},
		func(*model.LLMRequest) *genai.Content { return calls(call("x1", "bad", nil)) },
		func(*model.LLMRequest) *genai.Content { return answer("should not be reached") })
	f.session(t, "s", nil)
	_, err := f.runErr(t, "s", userText("go"))
	var se *adktoolset.StopError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "x1", se.Call.ID)
	assert.Len(t, f.model.offered, 1)
}
