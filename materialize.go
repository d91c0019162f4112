package toolset

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// This file holds materialisation: the walk that turns a tree of
// toolsets into a view for the turn, by the row of each node's type (see
// dispatch.go), on the caller's goroutine for what waits on nothing and on
// goroutines of their own for what may block. The invariant:
//
//	A node's view is the function of its children's views and its own
//	callbacks' verdicts this turn; an error of any node fails the turn,
//	and every callback's panic or Goexit becomes an error, never a crash
//	or an empty view.

// materialize returns the view of ts for this turn, as the row of its
// type in kinds says (see kindOf). The toolsets of this package are
// recognised by their exact type, never through embedding, so a user type
// that embeds one and overrides GetTools keeps its override.
//
// sc, if not nil, is the turn's scratch memory, from which the masks and
// lists that the turn drops are taken. It is used by one goroutine at a
// time: what is materialised on a goroutine of its own is given none. A
// scratch that carries an explainer makes the walk an explained one (see
// Explain): the explainer sees every node, and the views tell it what
// they decide.
func materialize(ctx context.Context, ts Toolset, sc *scratch) (view, error) {
	if x := sc.explaining(); x != nil {
		return x.walk(ctx, ts, sc)
	}
	return viewOf(ctx, ts, sc)
}

// viewOf materialises ts by the row of its type.
func viewOf(ctx context.Context, ts Toolset, sc *scratch) (view, error) {
	v, err := kindOf(ts).view(ctx, ts, sc)
	if err != nil {
		return view{}, err
	}
	if v.snap == nil {
		v.snap = emptySnapshot
	}
	return v, nil
}

// userView materialises a toolset of the caller's: its own GetTools, then
// the tools' enabled and prepare functions.
func userView(ctx context.Context, ts Toolset, sc *scratch) (view, error) {
	tools, err := userTools(ctx, ts)
	if err != nil {
		return view{}, err
	}
	v := view{snap: reuseSnapshot(tools)}
	x := sc.explaining()
	x.fresh(len(v.snap.tools))
	x.refused(ctx, ts)
	return leafView(ctx, v, sc)
}

// The errors of a nil pointer of a toolset type of this package, returned
// by its methods instead of a panic.
var (
	errNilCombined = errors.New("toolset: nil *Combined")
	errNilDynamic  = errors.New("toolset: nil *Dynamic")
	errNilFiltered = errors.New("toolset: nil *Filtered")
	errNilFunction = errors.New("toolset: nil *Function")
	errNilGuarded  = errors.New("toolset: nil *Guarded")
	errNilPrefixed = errors.New("toolset: nil *Prefixed")
	errNilPrepared = errors.New("toolset: nil *Prepared")
	errNilRenamed  = errors.New("toolset: nil *Renamed")
	errNilTool     = errors.New("toolset: nil *Tool")
	errNilToolset  = errors.New("toolset: nil Toolset")
	errNilWrapper  = errors.New("toolset: nil *Wrapper")
)

// nilToolset says what ts is when it is nil, or a nil pointer of a type
// of this package ("a nil Toolset", "a nil *Filtered"), and returns ""
// otherwise.
func nilToolset(ts Toolset) string {
	if ts == nil {
		return "a nil Toolset"
	}
	if k := kindOf(ts); k.ptr && k.isNil(ts) {
		return "a nil *" + k.name
	}
	return ""
}

// userTools runs the GetTools of a toolset of the caller's; a panic becomes
// a *PanicError.
func userTools(ctx context.Context, ts Toolset) (tools []Tool, err error) {
	defer func() {
		if p := recover(); p != nil {
			tools, err = nil, newPanicError("GetTools", "", LabelOf(ts), p)
		}
	}()
	return ts.GetTools(ctx)
}

// isInline reports whether ts is made only of this package's in-memory
// toolsets: [Function]s and tools under Prefixed, Renamed, Filtered,
// Prepared, Combined and Wrapper layers. Materialising one waits on
// nothing but its predicates and prepare functions, which work on tools
// in memory, so it is done on the caller's goroutine; a goroutine costs
// more than the work. Everything else may block (a Dynamic, a remote
// toolset, any type of the caller's) and gets a goroutine of its own when
// it has company.
func isInline(ts Toolset) bool {
	for {
		yes, next := kindOf(ts).inline(ts)
		if next == nil {
			return yes
		}
		ts = next
	}
}

// materializeAll materialises toolsets and returns their views in order.
// The inline ones (see isInline) are done first, on the caller's
// goroutine; then the others, each on a goroutine of its own unless it is
// alone in the list, where the first failure cancels the rest. So a
// callback that calls runtime.Goexit under a toolset that may block is
// reported as a *PanicError whenever it has siblings, as it always was. The errors of all
// failing toolsets are joined, each named by name(i).
//
// size is how many tools the toolsets are known to hold (see knownSize):
// inline work on that many tools is split across goroutines when the
// machine has more than one processor to run them (materializeSplit).
func materializeAll(ctx context.Context, toolsets []Toolset, inline []bool, size int, sc *scratch, name func(i int, err error) error) ([]view, error) {
	if x := sc.explaining(); x != nil {
		return x.all(ctx, toolsets, sc, name)
	}
	views := sc.views(len(toolsets))
	var errs []error
	blocking := 0
	for i := range toolsets {
		if !inline[i] {
			blocking++
		}
	}
	if procs := runtime.GOMAXPROCS(0); size >= splitMin && procs > 1 && sc != nil && !sc.worker && len(toolsets)-blocking > 1 {
		errs = materializeSplit(ctx, toolsets, inline, views, min(procs, len(toolsets)-blocking, size/splitMin*2), sc)
	} else {
		for i, ts := range toolsets {
			if !inline[i] {
				continue
			}
			v, err := materialize(ctx, ts, sc)
			if err != nil {
				if errs == nil {
					errs = make([]error, len(toolsets))
				}
				errs[i] = err
				continue
			}
			views[i] = v
		}
	}
	if errs != nil {
		if err := joinErrors(errs, name); err != nil {
			return nil, err
		}
	}
	switch {
	case blocking == 0:
	case len(toolsets) == 1:
		for i, ts := range toolsets {
			if !inline[i] {
				v, err := materialize(ctx, ts, sc)
				if err != nil {
					return nil, name(i, err)
				}
				views[i] = v
			}
		}
	default:
		errs = make([]error, len(toolsets))
		g, gctx := errgroup.WithContext(ctx)
		// One pointer for what every goroutine shares keeps each closure
		// small. The derived context is wrapped to carry the run itself,
		// in storage of m, so that callbacks find it without walking the
		// chain. The goroutines are given no scratch memory: it is the
		// caller's.
		m := &materializing{g: g, views: views, errs: errs}
		m.ctx = withRun(gctx, FromContext(ctx), &m.tc)
		for i, ts := range toolsets {
			if inline[i] {
				continue
			}
			g.Go(func() error { return m.guarded(i, ts) })
		}
		if g.Wait() != nil && ctx.Err() == nil {
			dropCancelled(errs)
		}
		if err := joinErrors(errs, name); err != nil {
			return nil, err
		}
	}
	return views, nil
}

// splitMin is the fewest known tools whose inline work is split across
// goroutines: below it, starting them costs more than they save.
const splitMin = 1 << 15

// materializeSplit materialises the inline toolsets in n groups of
// consecutive ones, the first on the caller's goroutine and the others
// each on a goroutine of its own with scratch of its own, and returns
// their errors (nil when none failed). A callback that calls
// runtime.Goexit on one of those goroutines fails its toolset with a
// *PanicError, as on the goroutines of toolsets that may block; nothing
// they run can block, so they need no cancelling.
func materializeSplit(ctx context.Context, toolsets []Toolset, inline []bool, views []view, n int, sc *scratch) []error {
	errs := make([]error, len(toolsets))
	group := func(k int, wsc *scratch) {
		lo, hi := k*len(toolsets)/n, (k+1)*len(toolsets)/n
		i, normal := lo, false
		defer func() {
			if !normal && k > 0 {
				// Callbacks recover their own panics: this is a Goexit,
				// or a bug. (On the caller's goroutine, either goes on.)
				errs[i] = newPanicError("callback", "", LabelOf(toolsets[i]), recover())
			}
		}()
		for ; i < hi; i++ {
			if inline[i] {
				views[i], errs[i] = materialize(ctx, toolsets[i], wsc)
			}
		}
		normal = true
	}
	var wg sync.WaitGroup
	for k := 1; k < n; k++ {
		wsc := getScratch()
		wsc.worker = true
		sc.workers = append(sc.workers, wsc)
		wg.Go(func() { group(k, wsc) })
	}
	// The caller's share splits no further, as the workers' do not. A
	// Goexit in it still waits for the workers: until they are done they
	// write into scratch that the unwinding turn gives back to the pool.
	func() {
		sc.worker = true
		defer func() {
			sc.worker = false
			wg.Wait()
		}()
		group(0, sc)
	}()
	for _, err := range errs {
		if err != nil {
			return errs
		}
	}
	return nil
}

// materializing is the state the goroutines of materializeAll share.
type materializing struct {
	ctx   context.Context
	tc    turnContext
	g     *errgroup.Group
	views []view
	errs  []error
}

// guarded materialises ts, the toolset at position i, on a goroutine of
// materializeAll, and returns its error. The callbacks recover their own
// panics; this catches whatever else panics, and user code that calls
// runtime.Goexit, which would otherwise leave the goroutine's view empty
// and its error nil. The goroutine of a Goexit returns nothing to the
// group, so another goroutine of the group returns its error, to cancel
// the siblings as an error returned does.
func (m *materializing) guarded(i int, ts Toolset) error {
	normal := false
	defer func() {
		if normal {
			return
		}
		p := recover()
		err := newPanicError("callback", "", LabelOf(ts), p)
		m.views[i], m.errs[i] = view{}, err
		if p == nil {
			m.g.Go(func() error { return err })
		}
	}()
	m.views[i], m.errs[i] = materialize(m.ctx, ts, nil)
	normal = true
	return m.errs[i]
}

// dropCancelled removes the errors of toolsets that only stopped because a
// sibling failed and cancelled them, unless that would remove them all.
func dropCancelled(errs []error) {
	real := 0
	for _, err := range errs {
		if err != nil && !isCanceled(err) {
			real++
		}
	}
	if real == 0 {
		return
	}
	for i, err := range errs {
		if err != nil && isCanceled(err) {
			errs[i] = nil
		}
	}
}

// isCanceled reports whether err, an error of a toolset's, is
// context.Canceled. An error whose Is or Unwrap method panics is not.
func isCanceled(err error) (yes bool) {
	defer func() {
		if recover() != nil {
			yes = false
		}
	}()
	return errors.Is(err, context.Canceled)
}

func joinErrors(errs []error, name func(i int, err error) error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, name(i, err))
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return &joinedErrors{out}
}

// joinedErrors is the failure of several toolsets of one turn or one
// Combined, each named: errors.Join's, known to this package, so that an
// enclosing entryError can put each on its path.
type joinedErrors struct{ errs []error }

func (j *joinedErrors) Error() string {
	var b strings.Builder
	for i, err := range j.errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(errorText(err))
	}
	return b.String()
}

func (j *joinedErrors) Unwrap() []error { return j.errs }
