package toolset

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/gotoolset/toolset/internal/textcut"
)

// A ModelError is an error the model should see and can act on: bad
// arguments, an unknown tool name, a handler's explicit retry request. Every
// other error a call returns should stop the run.
//
// Errors of this package that the model should see implement it; so can an
// application's own errors.
type ModelError interface {
	error
	// ModelText returns the text to send to the model as the tool result.
	ModelText() string
}

// ErrorText reports whether err, or an error it wraps, is a [ModelError],
// and returns the text the model should see. When it reports false, the
// error should stop the run; so it does when a method of err (its
// ErrorText, Unwrap or As) panics.
func ErrorText(err error) (msg string, forModel bool) {
	defer func() {
		if recover() != nil {
			msg, forModel = "", false
		}
	}()
	var me ModelError
	if errors.As(err, &me) {
		return me.ModelText(), true
	}
	return "", false
}

// ArgumentError reports tool-call arguments that do not match the tool's
// parameter schema. The model sees every problem at once, so it can fix them
// in one retry.
type ArgumentError struct {
	// Tool is the name the model called.
	Tool string
	// Problems lists every problem found, in a deterministic order.
	Problems []ArgumentProblem
}

// ArgumentProblem is one problem with a tool call's arguments.
type ArgumentProblem struct {
	// Field is the path of the offending value, such as "city" or
	// "stops[2].name"; it is empty when the problem concerns the arguments as
	// a whole (for example, invalid JSON).
	Field string
	// Message says what was expected and what was found.
	Message string
}

// Error implements error.
func (e *ArgumentError) Error() string {
	return "toolset: " + e.ModelText()
}

// ModelText implements [ModelError].
func (e *ArgumentError) ModelText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for tool %q:", e.Tool)
	for _, p := range e.Problems {
		b.WriteString("\n- ")
		if p.Field != "" {
			fmt.Fprintf(&b, "%q: ", p.Field)
		}
		b.WriteString(p.Message)
	}
	b.WriteString("\nFix the arguments and call the tool again.")
	return b.String()
}

// UnknownToolError reports a call to a name that is not in this turn's tool
// set: a hallucinated name, or a tool that is hidden this turn. Its message
// suggests the names the model likely meant, and lists those it may call.
type UnknownToolError struct {
	// Name is the name the model called.
	Name string
	// Suggestions lists the names of this turn's set that the model likely
	// meant, best first, at most 5: first the tools that had Name before a
	// prefix or a rename made them what the set shows ("read_file" for
	// "fs_read_file"), then names a few edits away from it. A tool hidden
	// this turn, a deferred tool this run has not revealed and a tool
	// whose failure budget is spent are never suggested.
	Suggestions []string
	// Available lists names the model may call this turn: every one of
	// them, sorted, when there are at most 40; otherwise the 40 closest to
	// Name, closest first. A tool whose failure budget is spent is not
	// among them.
	Available []string
	// More is how many names the model may call this turn besides those
	// in Available.
	More int
}

// maxListedNames caps how many available names an UnknownToolError shows
// the model; the closest names are shown first.
const maxListedNames = 40

// Error implements error.
func (e *UnknownToolError) Error() string {
	return "toolset: " + e.ModelText()
}

// ModelText implements [ModelError].
func (e *UnknownToolError) ModelText() string {
	name := boundName(e.Name)
	if len(e.Available) == 0 {
		return fmt.Sprintf("unknown tool %q: no tools are available in this turn", name)
	}
	names := e.Available
	more := e.More
	if len(names) > maxListedNames {
		more += len(names) - maxListedNames
		names = names[:maxListedNames]
	}
	size := len(name) + 64
	for _, n := range names {
		size += min(len(n), maxShownName) + 2
	}
	for _, n := range e.Suggestions[:min(len(e.Suggestions), maxSuggestions)] {
		size += min(len(n), maxShownName) + 4
	}
	var b strings.Builder
	b.Grow(size)
	fmt.Fprintf(&b, "unknown tool %q; ", name)
	if s := e.Suggestions; len(s) > 0 {
		b.WriteString("did you mean ")
		listNames(&b, s[:min(len(s), maxSuggestions)])
		b.WriteString("? ")
	}
	b.WriteString("available tools: ")
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(boundName(n))
	}
	if more > 0 {
		fmt.Fprintf(&b, " (and %d more)", more)
	}
	return b.String()
}

// MessageError is returned by a handler, through [NewModelError] or [ModelErrorf], to ask
// the model to try again. Its message is shown to the model.
type MessageError struct {
	// Message tells the model what to change.
	Message string
}

// NewModelError returns an error that asks the model to try the call again; message
// tells it what to change. The model sees message as the tool result.
func NewModelError(message string) error {
	return &MessageError{Message: message}
}

// ModelErrorf is [NewModelError] with a format string.
func ModelErrorf(format string, args ...any) error {
	return &MessageError{Message: fmt.Sprintf(format, args...)}
}

// Error implements error.
func (e *MessageError) Error() string { return "toolset: retry requested: " + e.Message }

// ModelText implements [ModelError].
func (e *MessageError) ModelText() string { return e.Message }

// ToolError wraps an error returned by a tool's handler with the name the
// model called. Whether the model sees it depends on the wrapped error: see
// [ErrorText].
type ToolError struct {
	// Tool is the name the model called.
	Tool string
	// Err is the handler's error.
	Err error
}

// Error implements error.
func (e *ToolError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("toolset: tool %q failed", e.Tool)
	}
	return fmt.Sprintf("toolset: tool %q: %s", e.Tool, strings.TrimPrefix(errorText(e.Err), "toolset: "))
}

// Unwrap returns the handler's error.
func (e *ToolError) Unwrap() error { return e.Err }

// PanicError reports user code that panicked: a tool's handler or
// middleware, or a callback such as a filter predicate, an approval
// predicate or a cache key function. The process survives; the run should
// stop, since a panic is a bug rather than something the model can fix.
// User code that calls [runtime.Goexit] on a goroutine this module runs it
// on (those of BuildTools and [Combined], a provider adapter's calls) is
// reported the same way, with [ErrGoexit] as the value.
type PanicError struct {
	// Tool is the name of the tool concerned: the name the model called, or
	// the tool a predicate or prepare function was evaluating. It is empty
	// for a callback of a whole toolset.
	Tool string
	// Toolset is the label of the toolset whose callback panicked (see
	// [LabelOf]), when the callback belongs to one.
	Toolset string
	// Callback names the kind of code that panicked: "handler" (or ""),
	// "handler error" (a method of the error the handler or middleware
	// returned, such as its Unwrap or As), "middleware", "filter predicate", "enabled predicate", "prepare
	// function", "Prepared function", "Dynamic function", "GetTools",
	// "Instructions", "Label", "Close", "approval predicate", "cache key",
	// "cache ShouldCache", "result encoding", "agent Name", "agent
	// Description", "approver" (a provider adapter's), or "callback" when
	// the kind is not known (a Goexit on a goroutine of BuildTools).
	Callback string
	// Value is the value the code panicked with.
	Value any
	// Stack is the goroutine's stack at the panic, for logs.
	Stack []byte

	relayed bool // made by the call path, on its way up through the middleware
}

// ErrGoexit is the [PanicError.Value] of user code that called
// [runtime.Goexit] (as testing.T.FailNow does) where a result was due.
var ErrGoexit = errors.New("runtime.Goexit called")

// maxPanicText bounds how much of a panic value an error message shows.
const maxPanicText = 200

// Error implements error. The message is short: the panic value is cut
// to a bounded length and the stack is left out.
func (e *PanicError) Error() string {
	var b strings.Builder
	b.WriteString("toolset: ")
	switch {
	case e.Tool != "" && e.Toolset != "":
		fmt.Fprintf(&b, "tool %q of %s", boundName(e.Tool), e.Toolset)
	case e.Tool != "":
		fmt.Fprintf(&b, "tool %q", boundName(e.Tool))
	case e.Toolset != "":
		b.WriteString(e.Toolset)
	}
	switch cb := e.Callback; {
	case e.Tool == "" && e.Toolset == "" && cb == "":
		b.WriteString("handler")
	case e.Tool == "" && e.Toolset == "":
		b.WriteString(cb)
	case cb != "" && cb != "handler":
		fmt.Fprintf(&b, ": %s", cb)
	}
	if e.Value == ErrGoexit {
		b.WriteString(" called runtime.Goexit")
		return b.String()
	}
	b.WriteString(" panicked: ")
	b.WriteString(bound(safeText(e.Value), maxPanicText))
	return b.String()
}

// safeText prints v as fmt.Sprint does. fmt survives a String or Error
// method that panics, but not a second panic while it prints the first
// one's value; then safeText names v's type instead.
func safeText(v any) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("(a %T whose printing panicked)", v)
		}
	}()
	return fmt.Sprint(v)
}

// errorText returns the message of err, an error of code outside this
// package, surviving an Error method that panics.
func errorText(err error) string { return safeText(err) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// newPanicError describes a recovered panic value p of a callback.
func newPanicError(callback, tool, toolset string, p any) *PanicError {
	if p == nil {
		p = ErrGoexit
	}
	return &PanicError{Tool: tool, Toolset: toolset, Callback: callback, Value: p, Stack: debug.Stack()}
}

// maxShownName bounds how much of a name from the model an error shows,
// and how much of it "did you mean" scoring reads.
const maxShownName = 128

// boundName cuts a name from the model to maxShownName bytes.
func boundName(name string) string { return bound(name, maxShownName) }

// bound cuts s to at most n bytes, at a rune boundary, marking a cut with
// an ellipsis.
func bound(s string, n int) string { return textcut.Clip(s, n) }

// distance computes the Levenshtein distance, in bytes, from a pattern of
// at most 64 bytes to other strings, with Myers' bit-parallel algorithm
// (as formulated by Hyyrö): one step per byte of the other string.
type distance struct {
	m   int
	peq [256]uint64 // for each byte, the positions of the pattern holding it
}

func newDistance(pattern string) *distance {
	d := new(distance)
	d.reset(pattern)
	return d
}

// reset makes pattern, of at most 64 bytes, the pattern of d.
func (d *distance) reset(pattern string) {
	d.peq = [256]uint64{}
	d.m = len(pattern)
	for i := 0; i < len(pattern); i++ {
		d.peq[pattern[i]] |= 1 << i
	}
}

// to returns the distance from the pattern to s.
func (d *distance) to(s string) int {
	if d.m == 0 {
		return len(s)
	}
	last := uint64(1) << (d.m - 1)
	pv, mv := ^uint64(0), uint64(0)
	score := d.m
	for i := 0; i < len(s); i++ {
		eq := d.peq[s[i]]
		xv := eq | mv
		xh := (((eq & pv) + pv) ^ pv) | eq
		ph := mv | ^(xh | pv)
		mh := pv & xh
		switch {
		case ph&last != 0:
			score++
		case mh&last != 0:
			score--
		}
		ph = ph<<1 | 1
		mh <<= 1
		pv = mh | ^(xv | ph)
		mv = ph & xv
	}
	return score
}
