package toolset

import (
	"context"
	"errors"
	"fmt"
)

// Function is a static list of tools, usually made with [NewTool]. Its
// tools are listed in the order given.
type Function struct {
	snap         *snapshot
	err          error
	perTurn      bool // some tool has an enabled or prepare function
	label        string
	instructions string
}

// NewFunction returns a toolset of the given tools. Two tools with the same
// name, or a tool that cannot be used (see [Tool.Err]), make GetTools fail:
// a duplicate is never silently dropped.
func NewFunction(tools ...Tool) *Function {
	own := make([]Tool, len(tools))
	names := 0
	for i, t := range tools {
		t.prepared = false
		own[i] = t
		names += len(t.Name)
	}
	f := &Function{snap: &snapshot{tools: own, names: names}}
	f.snap.policies() // now, not in the first turn
	var errs []error
	// The first position of each name, in a table the GC never scans:
	// cheaper to fill than a map, and dropped at once.
	seen := newNameTable(len(own))
	for i := range own {
		t := &own[i]
		f.perTurn = f.perTurn || t.core.hasTurnPolicy()
		if err := t.Err(); err != nil {
			errs = append(errs, fmt.Errorf("tools[%d]: %w", i, err))
		}
		if j, dup := seen.insert(own, int32(i)); dup {
			errs = append(errs, fmt.Errorf("tools[%d] and tools[%d] are both named %q", j, i, t.Name))
		}
	}
	if len(errs) > 0 {
		f.err = fmt.Errorf("toolset: Function: %w", errors.Join(errs...))
	}
	return f
}

// WithLabel returns a copy of f that names itself label in error messages.
// On a nil f it returns nil, which GetTools reports.
func (f *Function) WithLabel(label string) *Function {
	if f == nil {
		return nil
	}
	c := *f
	c.label = label
	return &c
}

// WithInstructions returns a copy of f that contributes text to the system
// prompt (see [InstructionsProvider]). On a nil f it returns nil, which
// GetTools reports.
func (f *Function) WithInstructions(text string) *Function {
	if f == nil {
		return nil
	}
	c := *f
	c.instructions = text
	return &c
}

// GetTools implements [Toolset].
func (f *Function) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, f) }

// Label implements [Labeler].
func (f *Function) Label() string {
	if f == nil {
		return ""
	}
	return f.label
}

// Instructions implements [InstructionsProvider].
func (f *Function) Instructions(context.Context) (string, error) {
	if f == nil {
		return "", errNilFunction
	}
	return f.instructions, nil
}

func (f *Function) view(ctx context.Context, sc *scratch) (view, error) {
	if f == nil {
		return view{}, errNilFunction
	}
	if f.err != nil {
		return view{}, f.err
	}
	sc.explaining().fresh(len(f.snap.tools))
	if f.perTurn {
		return leafView(ctx, view{snap: f.snap}, sc)
	}
	return view{snap: f.snap}, nil
}

// Prefixed returns f with every tool name prefixed; see [NewPrefixed].
func (f *Function) Prefixed(prefix string, opts ...PrefixOption) *Prefixed {
	return NewPrefixed(f, prefix, opts...)
}

// Renamed returns f with some tools renamed; see [NewRenamed].
func (f *Function) Renamed(names map[string]string) *Renamed { return NewRenamed(f, names) }

// Filtered returns f showing only the tools pred accepts each turn; see [NewFiltered].
func (f *Function) Filtered(pred Predicate) *Filtered { return NewFiltered(f, pred) }

// Prepared returns f with its tool list edited each turn by fn; see [NewPrepared].
func (f *Function) Prepared(fn PrepareFunc) *Prepared { return NewPrepared(f, fn) }

// CombinedWith returns a toolset of f followed by others; see [NewCombined].
func (f *Function) CombinedWith(others ...Toolset) *Combined { return combineWith(f, others) }

// Guarded returns f with each tool offered again with the options guard
// returns for it; see [NewGuarded].
func (f *Function) Guarded(guard func(Tool) []ToolOption) *Guarded { return NewGuarded(f, guard) }
