package toolsettest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
)

// Fake is a tool with scripted results, for testing the code around tools:
// the n-th call gets the n-th result of its script. It counts its calls and
// keeps their arguments. Set its fields, then call [Fake.Tool]; changes
// after the first Tool call have no effect.
//
//	weather := &toolsettest.Fake{
//		Name:    "get_weather",
//		Results: []toolsettest.Result{toolsettest.Return("22°C"), toolsettest.Fail(toolset.NewModelError("unknown city"))},
//	}
//
// A Fake is safe for concurrent use.
type Fake struct {
	// Name is the tool's name.
	Name string
	// Description is the tool's description.
	Description string
	// Parameters is the parameter schema; nil accepts any object.
	Parameters *jsonschema.Schema
	// Results is the script: what each call returns, in order.
	Results []Result
	// Repeat makes calls past the end of the script return its last
	// result. Without it they fail with a [*ScriptError].
	Repeat bool

	once sync.Once
	tool toolset.Tool

	mu   sync.Mutex
	args []json.RawMessage
}

// Result is one scripted result of a [Fake].
type Result struct {
	// Value is returned when Err is nil.
	Value any
	// Err is returned, if set.
	Err error
}

// Return scripts a call that returns v.
func Return(v any) Result { return Result{Value: v} }

// Fail scripts a call that fails with err: use [toolset.NewModelError] or another
// model-visible error for an error the model should see, any other error
// for one that stops the run.
func Fail(err error) Result { return Result{Err: err} }

// NewFake returns a Fake named name with the given script.
func NewFake(name string, results ...Result) *Fake {
	return &Fake{Name: name, Description: "A fake " + name + " tool.", Results: results}
}

// ScriptError reports a call of a [Fake] past the end of its script.
type ScriptError struct {
	// Tool is the fake's name.
	Tool string
	// Call is the number of the call, from 1.
	Call int
	// Scripted is how many results the script has.
	Scripted int
}

// Error implements error.
func (e *ScriptError) Error() string {
	return fmt.Sprintf("toolsettest: fake tool %q has no result for call %d (%d scripted); add results or set Repeat", e.Tool, e.Call, e.Scripted)
}

// Tool returns the fake as a tool. Every call returns the same underlying
// tool.
func (f *Fake) Tool() toolset.Tool {
	f.once.Do(func() {
		params := f.Parameters
		if params == nil {
			params = anyObject()
		}
		f.tool = toolset.NewRawTool(f.Name, f.Description, params, f.call)
	})
	return f.tool
}

// GetTools implements [toolset.Toolset]: a Fake is a toolset of its tool.
func (f *Fake) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	return f.Tool().GetTools(ctx)
}

func (f *Fake) call(_ context.Context, args json.RawMessage) (any, error) {
	f.mu.Lock()
	f.args = append(f.args, append(json.RawMessage(nil), args...))
	n := len(f.args)
	f.mu.Unlock()
	i := n - 1
	if i >= len(f.Results) {
		if !f.Repeat || len(f.Results) == 0 {
			return nil, &ScriptError{Tool: f.Name, Call: n, Scripted: len(f.Results)}
		}
		i = len(f.Results) - 1
	}
	r := f.Results[i]
	if r.Err != nil {
		return nil, r.Err
	}
	return r.Value, nil
}

// Calls returns how many times the tool was called with valid arguments.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.args)
}

// Args returns the arguments of each call, in order.
func (f *Fake) Args() []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]json.RawMessage(nil), f.args...)
}
