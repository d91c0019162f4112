package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
	"github.com/stretchr/testify/require"
)

// isolationFixture is a shared tree of toolsets whose every layer decides
// by the run's role: filters keep a role-dependent subset, a Prepared
// narrows the schema and rewrites the description for one role, and a
// Dynamic puts part of the tree on a goroutine of its own.
type isolationFixture struct {
	root     toolset.Toolset
	universe []string           // every name the tree can show
	prepared map[string]bool    // the names under the Prepared layer
	narrow   *jsonschema.Schema // the schema the Prepared gives the "narrow" role
}

// shows reports whether the filters keep name for role.
func shows(role, name string) bool {
	h := fnv.New32a()
	h.Write([]byte(role))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return h.Sum32()%3 != 0
}

func byRole(ctx context.Context, t toolset.Tool) (bool, error) {
	return shows(Role.Get(ctx), t.Name), nil
}

func newIsolationFixture(t testing.TB, children, perChild int) *isolationFixture {
	t.Helper()
	f := &isolationFixture{prepared: map[string]bool{}}
	wide := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties()}
	wide.Properties.Set("x", &jsonschema.Schema{Type: "integer"})
	f.narrow = &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties()}
	f.narrow.Properties.Set("x", &jsonschema.Schema{Type: "integer", Maximum: json.Number("1")})
	tools := make([]toolset.Tool, perChild)
	for i := range tools {
		tools[i] = toolset.NewRawTool(fmt.Sprint("t", i), "plain", wide, func(context.Context, json.RawMessage) (any, error) {
			return "ok", nil
		})
	}
	kids := make([]toolset.Toolset, 0, children+2)
	for c := range children {
		prefix := fmt.Sprint("p", c)
		kids = append(kids, toolset.NewFunction(tools...).Prefixed(prefix).Filtered(byRole))
		for _, tool := range tools {
			f.universe = append(f.universe, prefix+"_"+tool.Name)
		}
	}
	prep := toolset.NewFunction(tools...).Prefixed("q").Filtered(byRole).Prepared(func(ctx context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
		role := Role.Get(ctx)
		for i := range tools {
			tools[i].Description = "for " + role
			if role == "narrow" {
				tools[i].Parameters = f.narrow
			}
		}
		return tools, nil
	})
	kids = append(kids, prep)
	for _, tool := range tools {
		f.universe = append(f.universe, "q_"+tool.Name)
		f.prepared["q_"+tool.Name] = true
	}
	dyn := toolset.NewDynamic(func(context.Context) (toolset.Toolset, error) {
		return toolset.NewFunction(tools...).Prefixed("d").Filtered(byRole), nil
	})
	kids = append(kids, dyn)
	for _, tool := range tools {
		f.universe = append(f.universe, "d_"+tool.Name)
	}
	f.root = toolset.NewCombined(kids...)
	return f
}

// check verifies that list shows what its own run's role decided, and
// that its lookups and calls agree.
func (f *isolationFixture) check(ctx context.Context, role string, list *toolset.ToolList, calls bool) error {
	var want []string
	for _, name := range f.universe {
		if shows(role, name) {
			want = append(want, name)
		}
	}
	got := list.Names()
	if len(got) != len(want) {
		return fmt.Errorf("role %s: %d tools, want %d", role, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("role %s: tool %d is %s, want %s", role, i, got[i], want[i])
		}
	}
	for _, name := range f.universe {
		tool, ok := list.Lookup(name)
		if ok != shows(role, name) {
			return fmt.Errorf("role %s: Lookup(%s) = %v", role, name, ok)
		}
		if !ok || !f.prepared[name] {
			continue
		}
		if tool.Description != "for "+role {
			return fmt.Errorf("role %s: %s described %q", role, name, tool.Description)
		}
		if (tool.Parameters == f.narrow) != (role == "narrow") {
			return fmt.Errorf("role %s: %s has the other run's schema", role, name)
		}
		if !calls {
			continue
		}
		_, err := list.Execute(ctx, toolset.ToolCall{Name: name, Args: json.RawMessage(`{"x":5}`)})
		var ae *toolset.ArgumentError
		if refused := errors.As(err, &ae); refused != (role == "narrow") {
			return fmt.Errorf("role %s: calling %s with x=5: %v", role, name, err)
		}
	}
	return nil
}

// Many concurrent turns of runs of different roles over one shared tree:
// each turn's list shows, looks up and calls what its own run's
// predicates and prepare function decided, and still does after many
// later turns of other runs, whose scratch memory and memoised copies it
// shares.
func TestConcurrentTurnsOfOtherRunsDoNotLeakIntoATurn(t *testing.T) {
	f := newIsolationFixture(t, 12, 40)
	roles := []string{"admin", "guest", "narrow", "ops"}
	type kept struct {
		ctx  context.Context
		role string
		list *toolset.ToolList
	}
	var mu sync.Mutex
	var lists []kept
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			role := roles[w%len(roles)]
			ctx := withRole(t, role)
			for turn := range 15 {
				if turn > 0 {
					ctx = nextTurn(ctx)
				}
				list, err := toolset.BuildTools(ctx, "a", f.root)
				if err == nil {
					err = f.check(ctx, role, list, turn%5 == 0)
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				lists = append(lists, kept{ctx, role, list})
				mu.Unlock()
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, k := range lists {
		require.NoError(t, f.check(k.ctx, k.role, k.list, false), "a list re-checked after later turns")
	}
}

// The same over a tree large enough that its turns are split across
// goroutines, each with scratch memory of its own.
func TestConcurrentSplitTurnsOfOtherRunsDoNotLeakIntoATurn(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	f := newIsolationFixture(t, 8, 4200) // 10 x 4200 tools: more than splitMin
	roles := []string{"admin", "narrow", "guest"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	type kept struct {
		role string
		list *toolset.ToolList
	}
	var mu sync.Mutex
	var lists []kept
	for w := range 3 {
		wg.Go(func() {
			role := roles[w]
			ctx := withRole(t, role)
			for turn := range 3 {
				if turn > 0 {
					ctx = nextTurn(ctx)
				}
				list, err := toolset.BuildTools(ctx, "a", f.root)
				if err == nil {
					err = f.check(ctx, role, list, false)
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				lists = append(lists, kept{role, list})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, k := range lists {
		require.NoError(t, f.check(context.Background(), k.role, k.list, false))
	}
}

// A prepare function may return a slice of its own that it fills anew
// each turn. The Prepared recognises an unchanged result by comparing it
// with the results it keeps; were those the function's slice itself, a
// later run's result would always compare equal to them, and the layers
// above would serve that run the copies they made for an earlier run:
// another run's descriptions and schemas.
func TestPreparedResultBufferReusedDoesNotLeakAnotherRunsTools(t *testing.T) {
	tools := echoTools("a", "b")
	var buf []toolset.Tool
	ts := toolset.NewFunction(tools...).Prepared(func(ctx context.Context, tools []toolset.Tool) ([]toolset.Tool, error) {
		buf = buf[:0]
		for _, tool := range tools {
			tool.Description = "for " + Role.Get(ctx)
			buf = append(buf, tool)
		}
		return buf, nil
	}).Prefixed("p")
	admin := withRole(t, "admin")
	first, err := toolset.BuildTools(admin, "a", ts)
	require.NoError(t, err)
	guest, err := toolset.BuildTools(withRole(t, "guest"), "a", ts)
	require.NoError(t, err)
	for _, tool := range guest.Tools() {
		require.Equal(t, "for guest", tool.Description, "the guest's turn shows %s as the admin's run prepared it", tool.Name)
	}
	for _, tool := range first.Tools() {
		require.Equal(t, "for admin", tool.Description, "the admin's list changed after the guest's turn")
	}
	again, err := toolset.BuildTools(nextTurn(admin), "a", ts)
	require.NoError(t, err)
	for _, tool := range again.Tools() {
		require.Equal(t, "for admin", tool.Description)
	}
}
