package toolset

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A ModelError is an error the model should see and can act on: bad
// arguments, an unknown tool name, a handler's explicit retry request. Every
// other error a call returns should stop the run.
//
// Errors of this package that the model should see implement it; so can an
// application's own errors.
type ModelError interface {
	error
	// ModelMessage returns the text to send to the model as the tool result.
	ModelMessage() string
}

// ModelMessage reports whether err, or an error it wraps, is a [ModelError],
// and returns the text the model should see. When it reports false, the
// error should stop the run.
func ModelMessage(err error) (string, bool) {
	var me ModelError
	if errors.As(err, &me) {
		return me.ModelMessage(), true
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
	return "toolset: " + e.ModelMessage()
}

// ModelMessage implements [ModelError].
func (e *ArgumentError) ModelMessage() string {
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
// set: a hallucinated name, or a tool that is hidden this turn.
type UnknownToolError struct {
	// Name is the name the model called.
	Name string
	// Available lists the names the model may call this turn, sorted.
	Available []string
}

// maxListedNames caps how many available names an UnknownToolError shows
// the model; the closest names are shown first.
const maxListedNames = 40

// Error implements error.
func (e *UnknownToolError) Error() string {
	return "toolset: " + e.ModelMessage()
}

// ModelMessage implements [ModelError].
func (e *UnknownToolError) ModelMessage() string {
	if len(e.Available) == 0 {
		return fmt.Sprintf("unknown tool %q: no tools are available in this turn", e.Name)
	}
	names := e.Available
	more := 0
	if len(names) > maxListedNames {
		names = closestNames(e.Name, names, maxListedNames)
		more = len(e.Available) - len(names)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "unknown tool %q; available tools: ", e.Name)
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	if more > 0 {
		fmt.Fprintf(&b, " (and %d more)", more)
	}
	return b.String()
}

// RetryError is returned by a handler, through [Retry] or [Retryf], to ask
// the model to try again. Its message is shown to the model.
type RetryError struct {
	// Message tells the model what to change.
	Message string
}

// Retry returns an error that asks the model to try the call again; message
// tells it what to change. The model sees message as the tool result.
func Retry(message string) error {
	return &RetryError{Message: message}
}

// Retryf is [Retry] with a format string.
func Retryf(format string, args ...any) error {
	return &RetryError{Message: fmt.Sprintf(format, args...)}
}

// Error implements error.
func (e *RetryError) Error() string { return "toolset: retry requested: " + e.Message }

// ModelMessage implements [ModelError].
func (e *RetryError) ModelMessage() string { return e.Message }

// ToolError wraps an error returned by a tool's handler with the name the
// model called. Whether the model sees it depends on the wrapped error: see
// [ModelMessage].
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
	return fmt.Sprintf("toolset: tool %q: %s", e.Tool, strings.TrimPrefix(e.Err.Error(), "toolset: "))
}

// Unwrap returns the handler's error.
func (e *ToolError) Unwrap() error { return e.Err }

// PanicError reports a handler that panicked. The process survives; the
// run should stop, since a panic is a bug rather than something the model
// can fix.
type PanicError struct {
	// Tool is the name the model called.
	Tool string
	// Value is the value the handler panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("toolset: tool %q panicked: %v", e.Tool, e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// closestNames returns up to n of names, the most similar to want first;
// names equally similar keep their order.
func closestNames(want string, names []string, n int) []string {
	type scored struct {
		name  string
		score int
	}
	s := make([]scored, len(names))
	for i, name := range names {
		s[i] = scored{name, editDistance(want, name)}
	}
	slices.SortStableFunc(s, func(a, b scored) int { return a.score - b.score })
	out := make([]string, 0, n)
	for _, c := range s[:min(n, len(s))] {
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
