package toolset

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
)

// Combined merges several toolsets into one, in declaration order. Each
// turn, the children made of this package's in-memory toolsets (a
// [Function] or tools under Prefixed, Renamed, Filtered, Prepared,
// Combined and Wrapper layers) are materialised on the caller's goroutine,
// one after the other, since they wait on nothing; the others (a
// [Dynamic], a remote toolset, any toolset type of the caller's) are
// materialised concurrently, each on a goroutine of its own when it has
// siblings. A failing child cancels its siblings and the errors of all
// failing children are joined. Two
// children that show the model the same name in one turn make GetTools fail
// with a [*NameConflictError] naming the path of each contributor.
// Make one with [NewCombined] or a .CombinedWith builder.
type Combined struct {
	children []Toolset
	labels   []string
	elems    []pathElem
	inlines  []bool
	inline   bool
	size     int         // the tools its children are known to hold, or 0
	built    atomic.Bool // a turn has made the copies later turns reuse
	err      error

	closeOnce sync.Once
	closeErr  error
}

// combinedErrors is the error of a Combined made with children that cannot
// take their place (nil, or a Label that fails): each is named on its
// path, under the Combined's when the Combined is an entry of a turn.
type combinedErrors struct{ err error }

func (c combinedErrors) Error() string { return "toolset: Combined: " + errorText(c.err) }

func (c combinedErrors) Unwrap() error { return c.err }

// NewCombined returns a toolset of the given toolsets, in order. A nil
// toolset makes GetTools fail.
func NewCombined(toolsets ...Toolset) *Combined {
	c := &Combined{
		children: append([]Toolset(nil), toolsets...),
		labels:   make([]string, len(toolsets)),
		elems:    make([]pathElem, len(toolsets)),
		inlines:  make([]bool, len(toolsets)),
		inline:   true,
	}
	var errs []error
	for i, ts := range toolsets {
		if what := nilToolset(ts); what != "" {
			errs = append(errs, badEntry(ts, i, what, nil))
			continue
		}
		label, err := labelOf(ts)
		if err != nil {
			errs = append(errs, badEntry(ts, i, "", err))
		}
		c.labels[i], c.elems[i] = label, elemOf(ts, label)
		c.inlines[i] = isInline(ts)
		c.size += knownSize(ts)
		c.inline = c.inline && c.inlines[i]
	}
	if len(errs) > 0 {
		c.err = combinedErrors{joinErrors(errs, func(_ int, err error) error { return err })}
	}
	return c
}

func combineWith(first Toolset, others []Toolset) *Combined {
	return NewCombined(append([]Toolset{first}, others...)...)
}

// GetTools implements [Toolset].
func (c *Combined) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, c) }

// Label implements [Labeler]; a Combined has no label of its own.
func (c *Combined) Label() string { return "" }

// Instructions implements [InstructionsProvider]: the non-empty
// instructions of the children, in order, separated by a blank line.
func (c *Combined) Instructions(ctx context.Context) (string, error) {
	if c == nil {
		return "", errNilCombined
	}
	var parts []string
	var errs []error
	for i, ts := range c.children {
		s, err := forwardInstructions(ctx, ts)
		if err != nil {
			errs = append(errs, &entryError{index: i, label: c.labels[i], elem: c.elems[i], err: err})
			continue
		}
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n"), errors.Join(errs...)
}

// Close closes the children that hold resources, in reverse order. It keeps
// going past a child that fails and returns the errors joined. Closing again
// does nothing and returns the same result.
func (c *Combined) Close() error {
	if c == nil {
		return errNilCombined
	}
	c.closeOnce.Do(func() {
		var errs []error
		for i := len(c.children) - 1; i >= 0; i-- {
			if err := forwardClose(c.children[i]); err != nil {
				errs = append(errs, &entryError{index: i, label: c.labels[i], elem: c.elems[i], err: err})
			}
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

func (c *Combined) view(ctx context.Context, sc *scratch) (view, error) {
	if c == nil {
		return view{}, errNilCombined
	}
	if c.err != nil {
		return view{}, c.err
	}
	// The first turn of a Combined makes the copies of its children's
	// tools, which are then laid end to end so that the join shares them.
	done := func() {}
	if !c.built.Load() {
		done = sc.reserveTools(c.size)
	}
	views, err := materializeAll(ctx, c.children, c.inlines, c.size, sc, func(i int, err error) error {
		return &entryError{index: i, label: c.labels[i], elem: c.elems[i], err: err}
	})
	done()
	if err != nil {
		return view{}, err
	}
	parts := sc.parts(len(views))
	for i, v := range views {
		parts[i] = part{snap: v.snap, label: c.labels[i], elem: c.elems[i]}
	}
	out := join(joinCombined, parts)
	sc.explaining().joined(out)
	if !out.perTurn {
		// A turn made the copies later turns reuse: those after it
		// make none.
		c.built.Store(true)
	}
	return view{snap: out, keep: joinKeep(out, views, sc)}, nil
}

// knownSize returns how many tools ts holds when that is known without
// materialising it (the tools of Functions under wrappers that keep them
// all or hide some), or 0. It is a hint, for the size of a block.
func knownSize(ts Toolset) int {
	for depth := 0; depth < 100 && ts != nil; depth++ {
		n, next := kindOf(ts).size(ts)
		if next == nil {
			return n
		}
		ts = next
	}
	return 0
}

// Prefixed returns c with every tool name prefixed; see [NewPrefixed].
func (c *Combined) Prefixed(prefix string, opts ...PrefixOption) *Prefixed {
	return NewPrefixed(c, prefix, opts...)
}

// Renamed returns c with some tools renamed; see [NewRenamed].
func (c *Combined) Renamed(names map[string]string) *Renamed { return NewRenamed(c, names) }

// Filtered returns c showing only the tools pred accepts each turn; see [NewFiltered].
func (c *Combined) Filtered(pred Predicate) *Filtered { return NewFiltered(c, pred) }

// Prepared returns c with its tool list edited each turn by fn; see [NewPrepared].
func (c *Combined) Prepared(fn PrepareFunc) *Prepared { return NewPrepared(c, fn) }

// CombinedWith returns a toolset of c followed by others; see [NewCombined].
func (c *Combined) CombinedWith(others ...Toolset) *Combined { return combineWith(c, others) }

// Guarded returns c with each tool offered again with the options guard
// returns for it; see [NewGuarded].
func (c *Combined) Guarded(guard func(Tool) []ToolOption) *Guarded { return NewGuarded(c, guard) }
