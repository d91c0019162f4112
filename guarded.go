package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
)

// Guarded gives the tools of a toolset policies that their owner did not:
// a timeout, a cache, a rate limit, approval, a failure budget, middleware,
// any [ToolOption]. The library sets a tool's policies when the tool is
// made, so Guarded offers each tool of the inner toolset as a tool of its
// own with the same name, description, schemas and metadata and the
// options a function chose for it, whose handler runs the original tool
// (with the original's own policies, if it has any). This is how a
// program puts policies on tools made elsewhere: a packaged toolset, an
// MCP server's tools, another team's Go toolset. Make one with
// [NewGuarded] or a .Guarded builder.
//
// A guarded tool lasts while the tool it guards stays the same tool with
// the same definition, so its cache, rate window and failure budget last
// from turn to turn; a changed definition (a new version of a package)
// makes a new one. Give the options [WithOrigin] to keep failure budgets
// and rate windows across such a change.
//
// Guarded is memoised like the package's own combinators: a turn over an
// unchanged inner toolset reuses the guarded tools and everything built on
// them, at the cost of one lookup.
type Guarded struct {
	inner  Toolset
	guard  func(Tool) []ToolOption
	inline bool
	memo   memoSlots[derived]

	mu   sync.Mutex
	made map[string]guardedTool // by name, for the tools last guarded
}

// guardedTool is a tool Guarded made, and the tool it guards.
type guardedTool struct {
	inner, outer Tool
}

// NewGuarded returns ts with each tool offered again with the options
// guard returns for it (nil or none: the tool is offered as it is). guard
// is called once per tool and definition, not per turn or call; a panic
// in it fails the turn with a [*PanicError] naming the tool. A nil guard
// makes GetTools fail.
func NewGuarded(ts Toolset, guard func(Tool) []ToolOption) *Guarded {
	return &Guarded{inner: ts, guard: guard, inline: isInline(ts)}
}

// GetTools implements [Toolset].
func (g *Guarded) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, g) }

// Label implements [Labeler], forwarding the inner toolset's label.
func (g *Guarded) Label() string {
	if g == nil {
		return ""
	}
	return labelOrEmpty(g.inner)
}

// Instructions implements [InstructionsProvider], forwarding the inner
// toolset's instructions.
func (g *Guarded) Instructions(ctx context.Context) (string, error) {
	if g == nil {
		return "", errNilGuarded
	}
	return forwardInstructions(ctx, g.inner)
}

// Close closes the inner toolset if it holds resources.
func (g *Guarded) Close() error {
	if g == nil {
		return errNilGuarded
	}
	return forwardClose(g.inner)
}

func (g *Guarded) view(ctx context.Context, sc *scratch) (view, error) {
	if g == nil {
		return view{}, errNilGuarded
	}
	if g.guard == nil {
		return view{}, errors.New("toolset: Guarded: nil guard function")
	}
	in, err := materialize(ctx, g.inner, sc)
	if err != nil {
		return view{}, err
	}
	if d := g.memo.find(func(d *derived) bool { return d.in == in.snap }); d != nil {
		return view{snap: d.out, keep: in.keep}, nil
	}
	out, err := g.build(in.snap)
	if err != nil {
		return view{}, err
	}
	g.memo.store(&derived{in: in.snap, out: out})
	return view{snap: out, keep: in.keep}, nil
}

// build makes the snapshot of the guarded tools of in, reusing those made
// for an earlier snapshot whose tools are the same.
func (g *Guarded) build(in *snapshot) (_ *snapshot, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.made == nil {
		g.made = make(map[string]guardedTool, len(in.tools))
	}
	tools := make([]Tool, len(in.tools))
	i := 0
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError("guard function", in.tools[i].Name, LabelOf(g), p)
		}
	}()
	for ; i < len(in.tools); i++ {
		t := in.tools[i]
		if m, ok := g.made[t.Name]; ok && sameDefinition(m.inner, t) {
			tools[i] = m.outer
			continue
		}
		outer := t
		if t.Err() == nil {
			if opts := g.guard(t); len(opts) > 0 {
				outer = guardTool(t, opts)
			}
		}
		g.made[t.Name] = guardedTool{inner: t, outer: outer}
		tools[i] = outer
	}
	// Forget the tools of names no longer offered, once they are many.
	if len(g.made) > 2*len(in.tools)+64 {
		keep := make(map[string]bool, len(in.tools))
		for _, t := range in.tools {
			keep[t.Name] = true
		}
		for name := range g.made {
			if !keep[name] {
				delete(g.made, name)
			}
		}
	}
	return &snapshot{tools: tools, from: in, ownPolicies: true}, nil
}

// sameDefinition reports whether b is the tool a is, offered as a was.
func sameDefinition(a, b Tool) bool {
	if !a.Same(b) || a.Name != b.Name || a.Description != b.Description {
		return false
	}
	if a.Parameters == b.Parameters && a.Returns == b.Returns && sameMetadata(a.Metadata, b.Metadata) {
		return true
	}
	pa, errA := a.ParametersJSON()
	pb, errB := b.ParametersJSON()
	if errA != nil || errB != nil || !bytes.Equal(pa, pb) || !sameMetadata(a.Metadata, b.Metadata) {
		return false
	}
	ra, errA := json.Marshal(a.Returns)
	rb, errB := json.Marshal(b.Returns)
	return errA == nil && errB == nil && bytes.Equal(ra, rb)
}

func sameMetadata(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// guardTool offers inner as a tool of its own with the options opts,
// whose calls run inner's call path (its validation, policies and
// handler) under the outer tool's.
func guardTool(inner Tool, opts []ToolOption) Tool {
	relay := func(Handler) Handler {
		return func(ctx context.Context, c ToolCall) (any, error) {
			rc := runOf(ctx)
			rc.bindTool(inner)
			res, err := inner.executeIn(ctx, c, rc, nil)
			// The outer tool names the error once.
			var te *ToolError
			if errors.As(err, &te) && te.Tool == c.Name && te.Err != nil && err == error(te) {
				return res, te.Err
			}
			return res, err
		}
	}
	unreachable := func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("toolset: guarded tool called past its relay")
	}
	all := make([]ToolOption, 0, len(opts)+3)
	all = append(all, WithMetadata(inner.Metadata), WithReturns(inner.Returns))
	all = append(all, opts...)
	// Innermost, after any middleware the options add: it never calls
	// the unreachable handler.
	all = append(all, WithMiddleware(relay))
	c := newCore(inner.Name, inner.Parameters, unreachable)
	carryListing(c, inner.core)
	return newTool(c, inner.Description, all)
}

// carryListing gives the guarded tool's core the policies of the inner
// tool's that are read from the tool a turn lists rather than on its call
// path: its deferral, required environment, call bound and call order,
// its declared effects and whether an interrupted call runs again.
// The guard's options, applied after, may add to them.
func carryListing(c, inner *toolCore) {
	c.deferred = inner.deferred
	c.env = slices.Clone(inner.env)
	c.callLimit = inner.callLimit
	c.sequential, c.sequentialBy = inner.sequential, inner.sequentialBy
	c.resources = slices.Clone(inner.resources)
	c.effects, c.effectsBy = inner.effects, inner.effectsBy
	c.resumeRerun, c.resumeBy = inner.resumeRerun, inner.resumeBy
	c.guards = inner
}

// Guarded returns g with each tool offered again with the options guard
// returns for it; see [NewGuarded].
func (g *Guarded) Guarded(guard func(Tool) []ToolOption) *Guarded { return NewGuarded(g, guard) }

// Prefixed returns g with every tool name prefixed; see [NewPrefixed].
func (g *Guarded) Prefixed(prefix string, opts ...PrefixOption) *Prefixed {
	return NewPrefixed(g, prefix, opts...)
}

// Renamed returns g with some tools renamed; see [NewRenamed].
func (g *Guarded) Renamed(names map[string]string) *Renamed { return NewRenamed(g, names) }

// Filtered returns g showing only the tools pred accepts each turn; see [NewFiltered].
func (g *Guarded) Filtered(pred Predicate) *Filtered { return NewFiltered(g, pred) }

// Prepared returns g with its tool list edited each turn by fn; see [NewPrepared].
func (g *Guarded) Prepared(fn PrepareFunc) *Prepared { return NewPrepared(g, fn) }

// CombinedWith returns a toolset of g followed by others; see [NewCombined].
func (g *Guarded) CombinedWith(others ...Toolset) *Combined { return combineWith(g, others) }
