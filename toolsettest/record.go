package toolsettest

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"sync"

	"github.com/gotoolset/toolset"
	"github.com/invopop/jsonschema"
)

// Call is one recorded tool call.
type Call struct {
	// Tool is the name the tool was called by.
	Tool string
	// Args are the arguments, as the tool received them.
	Args json.RawMessage
	// Result is what the tool returned; nil when Err is set.
	Result any
	// Err is the error the tool's code returned; the caller sees it named
	// with the tool (a [*toolset.ToolError], or an [*toolset.ArgumentError]
	// for arguments that do not fit the Go type). A panic is recorded as a
	// [*toolset.PanicError].
	Err error
	// Run is the run context of the call.
	Run *toolset.RunContext
}

// Recorder is a [toolset.Toolset] that records every call of the tools of
// the toolset it wraps. It is a [toolset.Wrapper] with a recording
// middleware: its tools are the wrapped tools themselves (same names,
// schemas and state; [toolset.Tool.Same] holds), and it forwards the
// wrapped toolset's label, instructions and Close.
//
// Calls are recorded as they finish, so concurrent calls are recorded in
// the order they end. Calls refused before the middleware runs (unknown
// names, invalid arguments, approvals, rate limits) and cache hits are not
// recorded: the recorder sees what reaches the tool's code.
//
// A Recorder is safe for concurrent use.
type Recorder struct {
	toolset.Wrapper

	mu    sync.Mutex
	calls []Call
}

// Record returns a Recorder wrapping ts.
func Record(ts toolset.Toolset) *Recorder {
	r := &Recorder{}
	r.Wrapper = toolset.Wrapper{Wrapped: ts, Middleware: []toolset.Middleware{r.record}}
	return r
}

// GetTools implements [toolset.Toolset]: the wrapped toolset's tools, each
// recording its calls.
func (r *Recorder) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	if r.Wrapped == nil {
		return nil, errors.New("toolsettest: Recorder wraps no toolset")
	}
	return r.Wrapper.GetTools(ctx)
}

// record is the recording middleware.
func (r *Recorder) record(next toolset.Handler) toolset.Handler {
	return func(ctx context.Context, c toolset.ToolCall) (res any, err error) {
		panicked := true
		defer func() {
			call := Call{Tool: c.Name, Args: append(json.RawMessage(nil), c.Args...), Result: res, Err: err, Run: toolset.FromContext(ctx)}
			var value any
			if panicked {
				value = recover()
				call.Err = panicOf(c.Name, value)
			}
			if call.Err != nil {
				call.Result = nil
			}
			r.mu.Lock()
			r.calls = append(r.calls, call)
			r.mu.Unlock()
			if panicked && value != nil {
				panic(value) // the call path recovers it again and names the tool
			}
			// A nil value is runtime.Goexit, which goes on by itself.
		}()
		res, err = next(ctx, c)
		panicked = false
		return res, err
	}
}

// panicOf describes what a recording middleware recovered: the call path's
// own *toolset.PanicError for a panicking handler, a new one for a panic of
// a later middleware, or one of a runtime.Goexit (value nil).
func panicOf(tool string, value any) *toolset.PanicError {
	if pe, ok := value.(*toolset.PanicError); ok {
		c := *pe
		return &c
	}
	callback := "middleware"
	if value == nil {
		value, callback = toolset.ErrGoexit, "handler"
	}
	return &toolset.PanicError{Tool: tool, Callback: callback, Value: value, Stack: debug.Stack()}
}

// Label implements [toolset.Labeler], naming the wrapped toolset so that
// conflict errors read as they would without the Recorder.
func (r *Recorder) Label() string {
	if r.Wrapped == nil {
		return "Recorder"
	}
	return toolset.LabelOf(r.Wrapped)
}

// Calls returns the calls recorded so far, in the order they finished.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// CallsTo returns the recorded calls of the tool named name.
func (r *Recorder) CallsTo(name string) []Call {
	var out []Call
	for _, c := range r.Calls() {
		if c.Tool == name {
			out = append(out, c)
		}
	}
	return out
}

// Reset forgets the calls recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.calls = nil
	r.mu.Unlock()
}

// anyObject is the parameter schema of a fake without one: any object.
func anyObject() *jsonschema.Schema { return &jsonschema.Schema{Type: "object"} }
