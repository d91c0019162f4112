package toolset

import "context"

// This file is the one place that knows every toolset type of this
// package: a row of kinds for each, saying how a toolset of the type is
// materialised (and, with an explainer in the scratch, explained), whether
// it is a nil pointer, whether materialising it waits on nothing but
// memory, how many tools it is known to hold, and what tells it apart in
// a path. kindOf picks the row. The invariant:
//
//	A toolset is recognised by its exact type, never through embedding,
//	so that a type of the caller's that embeds one of this package's and
//	overrides GetTools keeps its override: it gets the row of the
//	caller's toolsets, whose GetTools is called.
//
// A new toolset type adds a constant, a row and a case of kindOf here, and
// its own file; TestDispatchCoversEveryToolset fails until it has them.

// toolsetKind describes one toolset type of this package, or the toolsets of the
// caller's (kUser) and the nil Toolset (kNil).
type toolsetKind struct {
	// name is the type's name in paths; "" for the caller's toolsets,
	// whose type's name is taken from the value.
	name string
	// sample is a value of the type, for the test of the table.
	sample Toolset
	// ptr reports whether the type is a pointer, whose nil value is
	// reported as "a nil *Name".
	ptr bool
	// view materialises ts, of this kind, for the turn; see materialize.
	view func(ctx context.Context, ts Toolset, sc *scratch) (view, error)
	// isNil reports whether ts is a nil pointer.
	isNil func(ts Toolset) bool
	// inline reports whether materialising ts waits on nothing but
	// memory, or returns the toolset that decides it (see isInline).
	inline func(ts Toolset) (yes bool, next Toolset)
	// size returns how many tools ts is known to hold, or the toolset
	// that holds them (see knownSize).
	size func(ts Toolset) (n int, next Toolset)
	// what returns what tells ts apart in a path (see pathElem): a
	// prefix, a name, a label of its own, or "". It is nil for the
	// caller's toolsets, told apart by their Label.
	what func(ts Toolset) string
	// standalone reports a tool given as a toolset of its own, which
	// among a turn's entries replaces an earlier one of its name.
	standalone bool
}

// The kinds, by row of kinds.
const (
	kNil = iota
	kFunction
	kTool
	kToolPtr
	kPrefixed
	kRenamed
	kGuarded
	kFiltered
	kPrepared
	kCombined
	kDynamic
	kWrapper
	kWrapperPtr
	kUser
	nKinds
)

// kindOf returns the row of ts's type.
func kindOf(ts Toolset) *toolsetKind {
	switch ts.(type) {
	case nil:
		return &kinds[kNil]
	case *Function:
		return &kinds[kFunction]
	case Tool:
		return &kinds[kTool]
	case *Tool:
		return &kinds[kToolPtr]
	case *Prefixed:
		return &kinds[kPrefixed]
	case *Renamed:
		return &kinds[kRenamed]
	case *Guarded:
		return &kinds[kGuarded]
	case *Filtered:
		return &kinds[kFiltered]
	case *Prepared:
		return &kinds[kPrepared]
	case *Combined:
		return &kinds[kCombined]
	case *Dynamic:
		return &kinds[kDynamic]
	case Wrapper:
		return &kinds[kWrapper]
	case *Wrapper:
		return &kinds[kWrapperPtr]
	default:
		return &kinds[kUser]
	}
}

// kinds is filled in by init: its views call materialize, which reads it.
var kinds [nKinds]toolsetKind

func init() {
	no := func(Toolset) bool { return false }
	none := func(Toolset) string { return "" }
	unknown := func(Toolset) (int, Toolset) { return 0, nil }
	kinds = [nKinds]toolsetKind{
		kNil: {
			name:   "nil",
			view:   func(context.Context, Toolset, *scratch) (view, error) { return view{}, errNilToolset },
			isNil:  func(Toolset) bool { return true },
			inline: func(Toolset) (bool, Toolset) { return true, nil }, // fails at once
			size:   unknown,
			what:   none,
		},
		kFunction: {
			name: "Function", sample: (*Function)(nil), ptr: true,
			view:   func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(*Function).view(ctx, sc) },
			isNil:  func(ts Toolset) bool { return ts.(*Function) == nil },
			inline: func(Toolset) (bool, Toolset) { return true, nil },
			size: func(ts Toolset) (int, Toolset) {
				if f := ts.(*Function); f != nil {
					return len(f.snap.tools), nil
				}
				return 0, nil
			},
			what: func(ts Toolset) string { return ts.(*Function).label },
		},
		kTool: {
			name: "Tool", sample: Tool{},
			view:       func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(Tool).view(ctx, sc) },
			isNil:      no,
			inline:     func(Toolset) (bool, Toolset) { return true, nil },
			size:       func(Toolset) (int, Toolset) { return 1, nil },
			what:       func(ts Toolset) string { return ts.(Tool).Name },
			standalone: true,
		},
		kToolPtr: {
			name: "Tool", sample: (*Tool)(nil), ptr: true,
			view: func(ctx context.Context, ts Toolset, sc *scratch) (view, error) {
				if t := ts.(*Tool); t != nil {
					return t.view(ctx, sc)
				}
				return view{}, errNilTool
			},
			isNil:      func(ts Toolset) bool { return ts.(*Tool) == nil },
			inline:     func(Toolset) (bool, Toolset) { return true, nil }, // a nil one fails at once
			size:       func(Toolset) (int, Toolset) { return 1, nil },
			what:       func(ts Toolset) string { return ts.(*Tool).Name },
			standalone: true,
		},
		kPrefixed: {
			name: "Prefixed", sample: (*Prefixed)(nil), ptr: true,
			view:  func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(*Prefixed).view(ctx, sc) },
			isNil: func(ts Toolset) bool { return ts.(*Prefixed) == nil },
			inline: func(ts Toolset) (bool, Toolset) {
				p := ts.(*Prefixed)
				return p == nil || p.inline, nil
			},
			size: func(ts Toolset) (int, Toolset) {
				if p := ts.(*Prefixed); p != nil {
					return 0, p.inner
				}
				return 0, nil
			},
			what: func(ts Toolset) string { return ts.(*Prefixed).prefix },
		},
		kRenamed: {
			name: "Renamed", sample: (*Renamed)(nil), ptr: true,
			view:  func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(*Renamed).view(ctx, sc) },
			isNil: func(ts Toolset) bool { return ts.(*Renamed) == nil },
			inline: func(ts Toolset) (bool, Toolset) {
				r := ts.(*Renamed)
				return r == nil || r.inline, nil
			},
			size: func(ts Toolset) (int, Toolset) {
				if r := ts.(*Renamed); r != nil {
					return 0, r.inner
				}
				return 0, nil
			},
			what: none,
		},
		kGuarded: {
			name: "Guarded", sample: (*Guarded)(nil), ptr: true,
			view:  func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(*Guarded).view(ctx, sc) },
			isNil: func(ts Toolset) bool { return ts.(*Guarded) == nil },
			inline: func(ts Toolset) (bool, Toolset) {
				g := ts.(*Guarded)
				return g == nil || g.inline, nil
			},
			size: func(ts Toolset) (int, Toolset) {
				if g := ts.(*Guarded); g != nil {
					return 0, g.inner
				}
				return 0, nil
			},
			what: none,
		},
		kFiltered: {
			name: "Filtered", sample: (*Filtered)(nil), ptr: true,
			view:  func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(*Filtered).view(ctx, sc) },
			isNil: func(ts Toolset) bool { return ts.(*Filtered) == nil },
			inline: func(ts Toolset) (bool, Toolset) {
				f := ts.(*Filtered)
				return f == nil || f.inline, nil
			},
			size: func(ts Toolset) (int, Toolset) {
				if f := ts.(*Filtered); f != nil {
					return 0, f.inner // the most it shows
				}
				return 0, nil
			},
			what: none,
		},
		kPrepared: {
			name: "Prepared", sample: (*Prepared)(nil), ptr: true,
			view:  func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(*Prepared).view(ctx, sc) },
			isNil: func(ts Toolset) bool { return ts.(*Prepared) == nil },
			inline: func(ts Toolset) (bool, Toolset) {
				p := ts.(*Prepared)
				return p == nil || p.inline, nil
			},
			size: unknown, // its function decides
			what: none,
		},
		kCombined: {
			name: "Combined", sample: (*Combined)(nil), ptr: true,
			view:  func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(*Combined).view(ctx, sc) },
			isNil: func(ts Toolset) bool { return ts.(*Combined) == nil },
			inline: func(ts Toolset) (bool, Toolset) {
				c := ts.(*Combined)
				return c == nil || c.inline, nil
			},
			size: func(ts Toolset) (int, Toolset) {
				if c := ts.(*Combined); c != nil {
					return c.size, nil
				}
				return 0, nil
			},
			what: none,
		},
		kDynamic: {
			name: "Dynamic", sample: (*Dynamic)(nil), ptr: true,
			view:   func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(*Dynamic).view(ctx, sc) },
			isNil:  func(ts Toolset) bool { return ts.(*Dynamic) == nil },
			inline: func(Toolset) (bool, Toolset) { return false, nil }, // its function may block
			size:   unknown,
			what:   none,
		},
		kWrapper: {
			name: "Wrapper", sample: Wrapper{},
			view:  func(ctx context.Context, ts Toolset, sc *scratch) (view, error) { return ts.(Wrapper).view(ctx, sc) },
			isNil: no,
			inline: func(ts Toolset) (bool, Toolset) {
				return true, ts.(Wrapper).Wrapped // nothing wrapped yields nothing at once
			},
			size: unknown,
			what: none,
		},
		kWrapperPtr: {
			name: "Wrapper", sample: (*Wrapper)(nil), ptr: true,
			view: func(ctx context.Context, ts Toolset, sc *scratch) (view, error) {
				if w := ts.(*Wrapper); w != nil {
					return w.view(ctx, sc)
				}
				return view{}, errNilWrapper
			},
			isNil: func(ts Toolset) bool { return ts.(*Wrapper) == nil },
			inline: func(ts Toolset) (bool, Toolset) {
				if w := ts.(*Wrapper); w != nil {
					return true, w.Wrapped
				}
				return true, nil
			},
			size: unknown,
			what: none,
		},
		kUser: {
			view:   userView,
			isNil:  no,                                                  // a nil pointer of the caller's may still have a GetTools that works
			inline: func(Toolset) (bool, Toolset) { return false, nil }, // it may block
			size:   unknown,
			// what: nil, the label
		},
	}
}
