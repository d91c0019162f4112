package toolsettest

import (
	"context"
	"encoding/json"
	"errors"
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
	// Err is the error the call returned, as the caller sees it.
	Err error
	// Run is the run context of the call.
	Run *toolset.RunContext
}

// Recorder is a [toolset.Toolset] that records every call of the tools of
// the toolset it wraps. Its tools look exactly like the wrapped ones to a
// model (name, description, schemas, metadata) and behave like them. It
// forwards the wrapped toolset's label, instructions and Close.
//
// Calls are recorded as they finish, so concurrent calls are recorded in
// the order they end. A call whose arguments do not match the tool's
// schema is refused before it reaches the tool and is not recorded.
//
// A Recorder is safe for concurrent use.
type Recorder struct {
	inner toolset.Toolset

	mu      sync.Mutex
	calls   []Call
	wrapped map[string][]wrapping // by tool name
}

// wrapping is a recording copy of a tool, made once per underlying tool,
// name and schema.
type wrapping struct {
	orig, rec toolset.Tool
}

// maxWrappings bounds the recording copies a Recorder keeps.
const maxWrappings = 4096

// Record returns a Recorder wrapping ts.
func Record(ts toolset.Toolset) *Recorder {
	return &Recorder{inner: ts, wrapped: map[string][]wrapping{}}
}

// GetTools implements [toolset.Toolset]: the wrapped toolset's tools, each
// recording its calls.
func (r *Recorder) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	if r.inner == nil {
		return nil, errors.New("toolsettest: Recorder wraps no toolset")
	}
	tools, err := r.inner.GetTools(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]toolset.Tool, len(tools))
	for i, t := range tools {
		out[i] = r.recording(t)
	}
	return out, nil
}

// recording returns the recording copy of t, made on first sight. The copy
// carries t's description, schemas and metadata, so edits a wrapped
// toolset makes per turn show through.
func (r *Recorder) recording(t toolset.Tool) toolset.Tool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.wrapped[t.Name] {
		if w.orig.Same(t) && w.orig.Parameters == t.Parameters {
			return withSurface(w.rec, t)
		}
	}
	orig := t
	rec := toolset.NewRawTool(t.Name, t.Description, t.Parameters, func(ctx context.Context, args json.RawMessage) (any, error) {
		return r.call(ctx, orig, args)
	})
	if len(r.wrapped) >= maxWrappings {
		clear(r.wrapped)
	}
	r.wrapped[t.Name] = append(r.wrapped[t.Name], wrapping{orig, rec})
	return withSurface(rec, t)
}

// withSurface returns rec with what the model and application see of t.
func withSurface(rec, t toolset.Tool) toolset.Tool {
	rec.Description = t.Description
	rec.Parameters = t.Parameters
	rec.Returns = t.Returns
	rec.Metadata = t.Metadata
	return rec
}

// call runs the original tool and records the call. The error returned is
// shaped so that, once the recording tool names it, the caller sees the
// same error as from the original tool.
func (r *Recorder) call(ctx context.Context, orig toolset.Tool, args json.RawMessage) (any, error) {
	res, err := orig.Call(ctx, args)
	r.mu.Lock()
	r.calls = append(r.calls, Call{Tool: orig.Name, Args: append(json.RawMessage(nil), args...), Result: res, Err: err, Run: toolset.FromContext(ctx)})
	r.mu.Unlock()
	switch e := err.(type) {
	case *toolset.ToolError:
		if e.Tool == orig.Name {
			return nil, e.Err // the recording tool wraps it again
		}
	case *toolset.PanicError:
		panic(e.Value) // recovered again by the recording tool, which names it
	}
	return res, err
}

// Label implements [toolset.Labeler], naming the wrapped toolset so that
// conflict errors read as they would without the Recorder.
func (r *Recorder) Label() string {
	if r.inner == nil {
		return "Recorder"
	}
	return toolset.LabelOf(r.inner)
}

// Instructions implements [toolset.InstructionsProvider], forwarding the
// wrapped toolset's instructions.
func (r *Recorder) Instructions(ctx context.Context) (string, error) {
	if ip, ok := r.inner.(toolset.InstructionsProvider); ok {
		return ip.Instructions(ctx)
	}
	return "", nil
}

// Close closes the wrapped toolset if it holds resources.
func (r *Recorder) Close() error {
	if c, ok := r.inner.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
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
