package einotoolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/einotoolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scripted is an Eino chat model that answers each call with the next
// step of its script, and records the tools each call was offered and
// the tool messages it was sent.
type scripted struct {
	mu      *sync.Mutex
	steps   []func() *schema.Message
	offered *[][]string
	seen    *[]map[string]string // tool call ID to content, per call
	tools   []*schema.ToolInfo
}

func newScripted(steps ...func() *schema.Message) *scripted {
	return &scripted{mu: new(sync.Mutex), steps: steps, offered: new([][]string), seen: new([]map[string]string)}
}

func (m *scripted) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for _, t := range m.tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	i := len(*m.offered)
	*m.offered = append(*m.offered, names)
	got := make(map[string]string)
	for _, msg := range in {
		if msg.Role == schema.Tool {
			got[msg.ToolCallID] = msg.Content
		}
	}
	*m.seen = append(*m.seen, got)
	if i >= len(m.steps) {
		return nil, fmt.Errorf("scripted model: no step %d", i)
	}
	return m.steps[i](), nil
}

func (m *scripted) Stream(context.Context, []*schema.Message, ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return nil, errors.New("scripted model: no streaming")
}

func (m *scripted) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	c := *m
	c.tools = tools
	return &c, nil
}

func calls(tcs ...schema.ToolCall) func() *schema.Message {
	return func() *schema.Message { return schema.AssistantMessage("", tcs) }
}

func call(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}

func answer(text string) func() *schema.Message {
	return func() *schema.Message { return schema.AssistantMessage(text, nil) }
}

// memStore is a checkpoint store in memory.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Get(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[id]
	return b, ok, nil
}

func (s *memStore) Set(_ context.Context, id string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string][]byte)
	}
	s.m[id] = b
	return nil
}

// agentGraph compiles the loop of an agent: the model step, with the
// turn's tools, then the tools node while the model calls tools.
func agentGraph(t *testing.T, m model.ToolCallingChatModel, ts *einotoolset.Toolset) compose.Runnable[[]*schema.Message, *schema.Message] {
	t.Helper()
	g := compose.NewGraph[[]*schema.Message, *schema.Message]()
	require.NoError(t, g.AddLambdaNode("model", compose.InvokableLambda(func(ctx context.Context, in []*schema.Message) (*schema.Message, error) {
		step, err := ts.Step(ctx)
		if err != nil {
			return nil, err
		}
		bound, err := m.WithTools(step.Infos)
		if err != nil {
			return nil, err
		}
		return bound.Generate(ctx, in)
	})))
	require.NoError(t, g.AddLambdaNode("tools", compose.InvokableLambda(ts.RunTools)))
	require.NoError(t, g.AddEdge(compose.START, "model"))
	require.NoError(t, g.AddBranch("model", compose.NewGraphBranch(func(_ context.Context, msg *schema.Message) (string, error) {
		if len(msg.ToolCalls) > 0 {
			return "tools", nil
		}
		return compose.END, nil
	}, map[string]bool{"tools": true, compose.END: true})))
	require.NoError(t, g.AddEdge("tools", "model"))
	r, err := g.Compile(t.Context(), compose.WithCheckPointStore(&memStore{}))
	require.NoError(t, err)
	return r
}

var Role = toolset.NewKey[string]("role")

type orderArgs struct {
	ID int `json:"id" jsonschema:"order ID"`
}

func TestGraphRevealsAcrossStepsAndFiltersByRole(t *testing.T) {
	var fetches atomic.Int32
	lookup := toolset.NewTool("lookup", "Look an order up.", func(_ context.Context, in orderArgs) (string, error) {
		return fmt.Sprintf("order %d: shipped", in.ID), nil
	})
	refund := toolset.NewTool("refund", "Refund an order.", func(context.Context, orderArgs) (string, error) { return "refunded", nil })
	staff := toolset.NewFunction(refund).Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) {
		return Role.Get(ctx) == "staff", nil
	})
	archive := toolset.NewFunction(toolset.NewTool("archive_fetch", "Fetch an archived order from the archive.",
		func(_ context.Context, in orderArgs) (map[string]any, error) {
			fetches.Add(1)
			return map[string]any{"id": in.ID, "archived": true}, nil
		}, toolset.WithDeferred()))
	flaky := toolset.NewTool("flaky", "Busy at first.", func(context.Context, struct{}) (string, error) {
		return "", toolset.NewModelError("busy, try again")
	})
	ts := einotoolset.New("assistant", toolset.NewFunction(lookup, flaky), staff, archive, toolset.NewToolSearch(archive))

	for _, tc := range []struct {
		role string
		want []string
	}{
		{"staff", []string{"flaky", "lookup", "refund", "tool_search"}},
		{"guest", []string{"flaky", "lookup", "tool_search"}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			fetches.Store(0)
			m := newScripted(
				calls(call("c1", "lookup", `{"id":7}`), call("c2", "tool_search", `{"query":"archive"}`),
					call("c3", "flaky", `{}`), call("c4", "lookup", `{"id":"seven"}`), call("c5", "archiv_fetch", `{"id":3}`)),
				calls(call("c6", "archive_fetch", `{"id":3}`)),
				answer("done"))
			run := toolset.NewRun("eino-"+tc.role, toolset.WithValue(Role, tc.role))
			defer run.End()
			ctx := toolset.NewContext(t.Context(), run)
			defer ts.Forget(ctx)

			out, err := agentGraph(t, m, ts).Invoke(ctx, []*schema.Message{schema.UserMessage("where are my orders?")})
			require.NoError(t, err)
			assert.Equal(t, "done", out.Content)

			require.Len(t, *m.offered, 3)
			assert.Equal(t, tc.want, (*m.offered)[0], "step 0: no deferred tool, refund for staff only")
			want1 := append(slices.Clone(tc.want), "archive_fetch")
			slices.Sort(want1)
			assert.Equal(t, want1, (*m.offered)[1], "step 1 offers the tool step 0 revealed")
			step1 := (*m.seen)[1]
			assert.Equal(t, "order 7: shipped", step1["c1"])
			assert.Contains(t, step1["c2"], "archive_fetch")
			assert.Equal(t, "busy, try again", step1["c3"], "a model error is the call's result")
			assert.Contains(t, step1["c4"], "id", "arguments are validated against the schema")
			assert.Contains(t, step1["c5"], `unknown tool "archiv_fetch"`, "an unknown name gets the list's error")
			assert.NotContains(t, step1["c5"], "archive_fetch", "which never names a tool not revealed yet")
			assert.JSONEq(t, `{"id":3,"archived":true}`, (*m.seen)[2]["c6"])
			assert.Equal(t, int32(1), fetches.Load())
			assert.Equal(t, 2, run.Step(), "one turn per model step")
		})
	}
}

func TestGraphApprovalThroughInterrupt(t *testing.T) {
	for _, approved := range []bool{true, false} {
		t.Run(fmt.Sprint("approved=", approved), func(t *testing.T) {
			var wipes atomic.Int32
			wipe := toolset.NewTool("wipe", "Wipe an order.", func(_ context.Context, in orderArgs) (string, error) {
				wipes.Add(1)
				return fmt.Sprintf("order %d wiped", in.ID), nil
			}, toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return true, nil }))
			ts := einotoolset.New("assistant", wipe)
			m := newScripted(calls(call("w1", "wipe", `{"id":9}`)), answer("done"))
			g := agentGraph(t, m, ts)
			run := toolset.NewRun("")
			defer run.End()
			ctx := toolset.NewContext(t.Context(), run)
			defer ts.Forget(ctx)

			_, err := g.Invoke(ctx, []*schema.Message{schema.UserMessage("wipe order 9")}, compose.WithCheckPointID("cp"))
			info, ok := compose.ExtractInterruptInfo(err)
			require.True(t, ok, "the graph is interrupted: %v", err)
			require.Len(t, info.InterruptContexts, 1)
			ic := info.InterruptContexts[0]
			ai, ok := ic.Info.(*einotoolset.ApprovalInfo)
			require.True(t, ok, "%T", ic.Info)
			assert.Equal(t, "w1", ai.Call.ID)
			assert.Equal(t, run.ID(), ai.RunID)
			assert.Zero(t, wipes.Load(), "nothing runs before the decision")
			require.Len(t, run.PendingApprovals(), 1)

			resume := compose.ResumeWithData(ctx, ic.ID, &einotoolset.Decision{Approved: approved})
			out, err := g.Invoke(resume, []*schema.Message{schema.UserMessage("wipe order 9")}, compose.WithCheckPointID("cp"))
			require.NoError(t, err)
			assert.Equal(t, "done", out.Content)
			require.Len(t, *m.offered, 2)
			got := (*m.seen)[1]["w1"]
			if approved {
				assert.Equal(t, int32(1), wipes.Load())
				assert.Equal(t, "order 9 wiped", got)
			} else {
				assert.Zero(t, wipes.Load())
				assert.Contains(t, got, einotoolset.DeniedReason)
			}
			assert.Empty(t, run.PendingApprovals())
		})
	}
}

func TestGraphStoppingErrorAndNoRun(t *testing.T) {
	boom := errors.New("database is down")
	broken := toolset.NewTool("broken", "Always fails.", func(context.Context, struct{}) (string, error) { return "", boom })
	ts := einotoolset.New("assistant", broken)
	m := newScripted(calls(call("b1", "broken", `{}`)), answer("should not be reached"))
	g := agentGraph(t, m, ts)

	run := toolset.NewRun("")
	defer run.End()
	ctx := toolset.NewContext(t.Context(), run)
	defer ts.Forget(ctx)
	_, err := g.Invoke(ctx, []*schema.Message{schema.UserMessage("go")})
	require.ErrorIs(t, err, boom, "an error that is not for the model stops the graph")
	var te *toolset.ToolError
	assert.ErrorAs(t, err, &te)
	assert.Len(t, *m.offered, 1)

	_, err = g.Invoke(t.Context(), []*schema.Message{schema.UserMessage("go")})
	assert.ErrorIs(t, err, einotoolset.ErrNoRun)
}

func TestToolsHostileInput(t *testing.T) {
	var wipes atomic.Int32
	wipe := toolset.NewTool("wipe", "Wipe an order.", func(_ context.Context, in orderArgs) (string, error) {
		wipes.Add(1)
		return "wiped", nil
	}, toolset.WithApprovalRequired(func(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return true, nil }))
	lookup := toolset.NewTool("lookup", "Look an order up.", func(_ context.Context, in orderArgs) (string, error) { return "ok", nil })
	ts := einotoolset.New("assistant", toolset.NewFunction(lookup, wipe))
	huge := strings.Repeat("x", 1<<16)
	m := newScripted(
		calls(call("a1", "lookup", `not json`), call("a2", "lookup", `{"id":`+huge+`}`), call("a3", huge, `{}`), call("w1", "wipe", `{"id":1}`)),
		answer("done"))
	g := agentGraph(t, m, ts)
	run := toolset.NewRun("")
	defer run.End()
	ctx := toolset.NewContext(t.Context(), run)
	defer ts.Forget(ctx)

	_, err := g.Invoke(ctx, []*schema.Message{schema.UserMessage("go")}, compose.WithCheckPointID("cp"))
	info, ok := compose.ExtractInterruptInfo(err)
	require.True(t, ok, "%v", err)
	require.Len(t, info.InterruptContexts, 1)
	// Resume data of another type than *Decision is no approval.
	_, err = g.Invoke(compose.ResumeWithData(ctx, info.InterruptContexts[0].ID, "yes please"), nil, compose.WithCheckPointID("cp"))
	require.NoError(t, err)
	seen := (*m.seen)[1]
	assert.Contains(t, seen["a1"], "JSON", "arguments that are not JSON are the model's to fix")
	assert.Less(t, len(seen["a2"]), 4096, "an argument error stays bounded")
	assert.Less(t, len(seen["a3"]), 4096, "an unknown-tool error stays bounded")
	assert.Contains(t, seen["w1"], einotoolset.DeniedReason)
	assert.Zero(t, wipes.Load())
}

func TestToolsConvertsSchemas(t *testing.T) {
	lookup := toolset.NewTool("lookup", "Look an order up.", func(_ context.Context, in orderArgs) (string, error) { return "ok", nil })
	list, err := toolset.BuildTools(t.Context(), "a", lookup)
	require.NoError(t, err)
	tools, err := einotoolset.Tools(list)
	require.NoError(t, err)
	infos, err := einotoolset.ToolInfos(t.Context(), tools)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	assert.Equal(t, "lookup", infos[0].Name)
	js, err := infos[0].ParamsOneOf.ToJSONSchema()
	require.NoError(t, err)
	got, err := json.Marshal(js)
	require.NoError(t, err)
	want, err := lookup.ParametersJSON()
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "the schema reaches Eino as it is")

	// A turn's tools called under no run: calls of no run work for the tools of no run.
	out, err := tools[0].(interface {
		InvokableRun(context.Context, string, ...tool.Option) (string, error)
	}).InvokableRun(t.Context(), `{"id":1}`)
	require.NoError(t, err)
	assert.Equal(t, "ok", out)
}

func TestStepInstructions(t *testing.T) {
	refund := toolset.NewTool("refund", "Refund an order.", func(context.Context, orderArgs) (string, error) { return "refunded", nil })
	staff := toolset.NewFunction(refund).WithInstructions("Refunds need an order ID.").
		Filtered(func(ctx context.Context, _ toolset.Tool) (bool, error) { return Role.Get(ctx) == "staff", nil })
	ts := einotoolset.New("assistant", staff)
	for role, want := range map[string]string{"staff": "Refunds need an order ID.", "guest": ""} {
		run := toolset.NewRun("", toolset.WithValue(Role, role))
		ctx := toolset.NewContext(t.Context(), run)
		st, err := ts.Step(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, st.Instructions, role)
		assert.Same(t, st, ts.Current(ctx))
		ts.Forget(ctx)
		assert.Nil(t, ts.Current(ctx))
		run.End()
	}
	_, err := ts.Step(t.Context())
	assert.ErrorIs(t, err, einotoolset.ErrNoRun)
}
