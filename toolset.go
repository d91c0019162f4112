package toolset

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
)

// Toolset is the one interface every source of tools implements.
//
// GetTools is called every turn. It returns the tools the model may see this
// turn, in a deterministic order (declaration order): a stable list keeps a
// provider's prompt cache warm. Implementations must be safe for concurrent
// use by many runs at once, and keep per-run state in the [RunContext], never
// in the toolset value. The caller owns the returned slice.
type Toolset interface {
	GetTools(ctx context.Context) ([]Tool, error)
}

// Labeler is implemented by toolsets that name themselves in error messages,
// such as "mcp:github" for an MCP server. [Prefixed], [Renamed],
// [Filtered], [Prepared] and [Wrapper] forward their inner toolset's label;
// a [Combined] has none of its own, and a [Dynamic] forwards none (its
// toolset changes from turn to turn).
//
// A label of the form "pkg:name" lets a toolset's own errors name it once:
// an error of an entry of [BuildTools] or a [Combined] that begins
// `pkg: toolset "name": ` is shown on its path, `Toolset#0 "pkg:name": ...`,
// rather than under the label and again in its own words.
type Labeler interface {
	// Label returns the toolset's label, or "" to fall back to its type name.
	Label() string
}

// InstructionsProvider is implemented by toolsets that contribute text to
// the system prompt, such as guidance on when to use their tools. The
// wrappers of this package forward it: [Filtered] and [Prepared] only in
// turns where they show at least one tool, [Dynamic] for the toolset it
// picks this turn. [Combined] concatenates the instructions of its
// children.
type InstructionsProvider interface {
	// Instructions returns the text for this turn, or "" for none.
	Instructions(ctx context.Context) (string, error)
}

// LabelOf returns the label that names ts in error messages: its [Labeler]
// label when it has one, otherwise the name of its type ("Prefixed",
// "Function", or the name of your own type). When Label panics, LabelOf
// logs the panic with [slog.Default] and returns the type name; BuildTools
// and [NewCombined] fail with a [*PanicError] instead.
func LabelOf(ts Toolset) string {
	s, err := labelOf(ts)
	if err != nil {
		logError(context.Background(), "toolset: Label panicked; using the type name", slog.String("toolset", s), slog.Any("error", err))
	}
	return s
}

// logError logs msg at error level with [slog.Default]. A log handler
// that panics loses the record, not the caller: logError runs where a
// panic would escape (in a deferred recover, on a goroutine that Goexit
// is ending).
func logError(ctx context.Context, msg string, attrs ...any) {
	defer func() { _ = recover() }()
	slog.Default().ErrorContext(ctx, msg, attrs...)
}

// labelOf is LabelOf reporting a panic of Label as a *PanicError, along
// with the type name to use instead.
func labelOf(ts Toolset) (label string, err error) {
	l, ok := ts.(Labeler)
	if !ok {
		return typeName(ts), nil
	}
	defer func() {
		if p := recover(); p != nil {
			label = typeName(ts)
			err = newPanicError("Label", "", label, p)
		}
	}()
	if s := l.Label(); s != "" {
		return s, nil
	}
	return typeName(ts), nil
}

// typeName returns the bare name of v's type: no package, no pointer, no
// type arguments.
func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return "nil"
	}
	for t.Kind() == reflect.Pointer && t.Name() == "" {
		t = t.Elem()
	}
	name := t.Name()
	if name == "" {
		return t.String()
	}
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	return name
}

// labelOrEmpty returns ts's own label, or "" when it has none.
func labelOrEmpty(ts Toolset) string {
	if l, ok := ts.(Labeler); ok {
		return l.Label()
	}
	return ""
}

// Instructions returns the system-prompt text that the toolsets contribute
// for this turn: the non-empty instructions of each, in order, separated by a
// blank line. Toolsets that do not implement [InstructionsProvider]
// contribute nothing. Errors of all toolsets are joined; a panic is one, as
// a [*PanicError].
func Instructions(ctx context.Context, toolsets ...Toolset) (string, error) {
	var parts []string
	var errs []error
	for i, ts := range toolsets {
		if _, ok := ts.(InstructionsProvider); !ok {
			continue
		}
		s, err := forwardInstructions(ctx, ts)
		if err != nil {
			label := LabelOf(ts)
			errs = append(errs, &entryError{index: i, label: label, elem: elemOf(ts, label), err: err})
			continue
		}
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n"), errors.Join(errs...)
}

// instructionsIfShown forwards inner's instructions if ts, which hides
// some of inner's tools, shows any this turn.
func instructionsIfShown(ctx context.Context, ts, inner Toolset) (string, error) {
	if _, ok := inner.(InstructionsProvider); !ok {
		return "", nil
	}
	tools, err := ts.GetTools(ctx)
	if err != nil || len(tools) == 0 {
		return "", err
	}
	return forwardInstructions(ctx, inner)
}

// forwardInstructions returns the instructions of inner, or "" when it has
// none. A panic becomes a *PanicError.
func forwardInstructions(ctx context.Context, inner Toolset) (text string, err error) {
	ip, ok := inner.(InstructionsProvider)
	if !ok {
		return "", nil
	}
	defer func() {
		if p := recover(); p != nil {
			text, err = "", newPanicError("Instructions", "", LabelOf(inner), p)
		}
	}()
	return ip.Instructions(ctx)
}

// forwardClose closes inner if it holds resources. A panic becomes a
// *PanicError.
func forwardClose(inner Toolset) (err error) {
	c, ok := inner.(interface{ Close() error })
	if !ok {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError("Close", "", LabelOf(inner), p)
		}
	}()
	return c.Close()
}
