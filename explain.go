package toolset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Explain materialises a turn of entries as [BuildTools] does and reports,
// for every tool the toolsets produced, whether it is in the turn's list
// and why: which filter hid it and at which path, whether its own
// [WithEnabled] predicate hid it or a prepare function dropped it, whether
// it is deferred and not revealed in this run, its failure budget spent,
// its environment missing or its name in conflict, and the names it had
// before prefixes and renames. It is for developers and logs; nothing of
// it is meant for the model.
//
// Explain runs the turn's predicates and prepare functions again, under
// ctx, so call it where running them twice is harmless: after a
// BuildTools that failed or showed too little, in a test, or in a debug
// endpoint. It does not build the turn: the turn of ctx may build its
// tools before or after, and the run is not changed. It works on the
// context of any turn of a run that has not ended, or on one carrying no
// run. An error is what would make the turn fail before its names are
// checked: a toolset that fails, or a panic; the failures that come after
// (name conflicts and invalid names, missing environment variables) are
// reasons of the tools concerned, and [Explanation.Err] is the error
// BuildTools would return for them.
//
// BuildTools itself records nothing of this: explaining a turn costs a
// normal turn nothing.
func Explain(ctx context.Context, agent string, entries ...Toolset) (*Explanation, error) {
	rc := runOf(ctx)
	if err := rc.Err(); err != nil {
		return nil, fmt.Errorf("toolset: agent %q: tools not explained: %w", agent, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolset: agent %q: tools not explained: %w", agent, err)
	}
	if _, ok := ctx.(*turnContext); !ok && rc != nil {
		ctx = withRun(ctx, rc, nil)
	}
	parts := make([]part, len(entries))
	walked := make([]explained, len(entries))
	views := make([]view, len(entries))
	for i, e := range entries {
		if err := describeEntry(agent, i, e, &parts[i]); err != nil {
			return nil, err
		}
		x, err := explainWalk(ctx, e, "", i)
		if err != nil {
			return nil, fmt.Errorf("toolset: agent %q: %w", agent, &entryError{index: i, label: parts[i].label, err: err})
		}
		walked[i], views[i] = x, x.v
		parts[i].snap = x.v.snap
		if parts[i].standalone && len(x.v.snap.tools) != 1 {
			parts[i].standalone = false
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolset: agent %q: tools not explained: %w", agent, err)
	}
	s := join(joinEntries, parts)
	keep := joinKeep(s, views, nil)
	at := make([]*explainedTool, len(s.tools))
	var gone []*explainedTool
	out := &Explanation{Agent: agent}
	used := make([]bool, len(entries))
	for _, seg := range s.segs {
		if seg.start < seg.end {
			copy(at[seg.start:seg.end], walked[seg.pos].tools)
			used[seg.pos] = true
		}
	}
	for i, x := range walked {
		gone = append(gone, x.gone...)
		if out.Err == nil && len(x.fails) > 0 {
			out.Err = x.fails[0]
		}
		if !used[i] && len(x.tools) == 1 {
			t := x.tools[0]
			t.name = x.v.snap.tools[0].Name
			t.note(ReasonReplaced, "", "a later standalone tool of the same name replaced it")
			gone = append(gone, t)
		}
	}
	final := explainRun(rc, s, keep, at)
	out.Tools = make([]ToolExplanation, 0, len(at)+len(gone))
	if out.Err == nil {
		out.Err = turnFailure(s, final, agent)
	}
	for i, t := range s.tools {
		x := at[i]
		out.Tools = append(out.Tools, x.explanation(t, final == nil || final[i]))
	}
	for _, x := range gone {
		out.Tools = append(out.Tools, x.explanation(Tool{Name: x.name, core: x.core}, false))
	}
	return out, nil
}

// turnFailure returns the error BuildTools fails with for the names and
// the environment of the tools of s that final shows, or nil.
func turnFailure(s *snapshot, final []bool, agent string) error {
	if err := checkNames(s, final, "", agent, true); err != nil {
		return err
	}
	var missing []MissingEnv
	for _, i := range s.index().env {
		if final == nil || final[i] {
			missing = missingEnv(missing, s.tools[i])
		}
	}
	if len(missing) > 0 {
		return &EnvError{Missing: missing}
	}
	return nil
}

// Explanation says why each tool the toolsets of a turn produced is or is
// not in the turn's list; see [Explain]. Its String is a readable report.
type Explanation struct {
	// Agent is the agent whose turn is explained.
	Agent string
	// Tools explains each tool: those the turn's list holds, in its order,
	// shown or hidden, then those that left it on the way (dropped by a
	// [Prepared] function, or replaced by a later standalone tool of the
	// same name).
	Tools []ToolExplanation
	// Err is the error BuildTools would fail the turn with once the
	// toolsets are materialised: a [*NameConflictError] for the names in
	// conflict and the invalid ones (a [Renamed]'s collision included,
	// which BuildTools reports from the Renamed itself), an [*EnvError],
	// or nil.
	Err error
}

// ToolExplanation explains one tool of an [Explanation].
type ToolExplanation struct {
	// Name is the name the tool is offered under this turn, or would be.
	Name string
	// Original is the name the tool was made with.
	Original string
	// Renames lists each prefix and rename that made Original into Name,
	// innermost first.
	Renames []Rename
	// Path names where the tool came from, outermost first, each toolset
	// by its type, its position among its parent's children (or the
	// entries of the turn) after "#", and a label, prefix or name in
	// quotes: `Combined#0/Filtered#1/Prefixed "db"/Function "users"`.
	Path string
	// Visible reports whether the turn's list shows the tool to the model
	// (marked unavailable, for a spent tool in a stable list). A turn that
	// [Explanation.Err] fails shows nothing.
	Visible bool
	// Reasons says what decided, in the order it was decided, innermost
	// first.
	Reasons []Reason
}

// Rename is one step of a tool's names: a prefix or a rename.
type Rename struct {
	// From and To are the names before and after.
	From, To string
	// By is the path of the [Prefixed] or [Renamed] that did it.
	By string
}

// Reason is one thing that decided whether a tool is in a turn's list.
type Reason struct {
	// Kind says what it was.
	Kind ReasonKind
	// Path is the path of the toolset that decided (see
	// [ToolExplanation.Path]), or "" for the turn itself.
	Path string
	// Detail says more: a predicate's error, the variables missing, the
	// other contributors of a name.
	Detail string
}

// ReasonKind is a kind of [Reason].
type ReasonKind uint8

// The kinds of reasons. All but ReasonBudgetSpent (in a stable list),
// ReasonNameConflict, ReasonInvalidName and ReasonMissingEnv hide the
// tool; those four keep it in the list, the last three failing the turn.
const (
	// ReasonFiltered: a [Filtered] predicate refused the tool, or failed.
	ReasonFiltered ReasonKind = iota + 1
	// ReasonDisabled: the tool's own [WithEnabled] predicate refused it,
	// or failed.
	ReasonDisabled
	// ReasonDroppedByPrepare: the tool's own [WithPrepare] function
	// dropped it for this turn.
	ReasonDroppedByPrepare
	// ReasonDroppedByPrepared: a [Prepared] function left it out.
	ReasonDroppedByPrepared
	// ReasonReplaced: a later standalone tool of the same name, among
	// the entries of the turn, replaced it.
	ReasonReplaced
	// ReasonNotRevealed: the tool is deferred ([WithDeferred]) and no
	// tool search of this run has revealed it.
	ReasonNotRevealed
	// ReasonBudgetSpent: the tool's failure budget ([WithMaxFailures])
	// is spent in this run: it is left out, or, in a stable list, kept
	// and marked unavailable.
	ReasonBudgetSpent
	// ReasonNameConflict: another tool shown this turn has the same name.
	ReasonNameConflict
	// ReasonInvalidName: providers reject the tool's name.
	ReasonInvalidName
	// ReasonMissingEnv: environment variables the tool requires
	// ([WithRequiredEnv]) are missing or empty.
	ReasonMissingEnv
)

var reasonText = [...]string{
	ReasonFiltered:          "filtered out",
	ReasonDisabled:          "disabled by its enabled predicate",
	ReasonDroppedByPrepare:  "dropped by its prepare function",
	ReasonDroppedByPrepared: "left out by a Prepared function",
	ReasonReplaced:          "replaced",
	ReasonNotRevealed:       "deferred, not revealed by a tool search of this run",
	ReasonBudgetSpent:       "failure budget spent in this run",
	ReasonNameConflict:      "name conflict",
	ReasonInvalidName:       "invalid name",
	ReasonMissingEnv:        "missing environment variables",
}

// String says what the kind means.
func (k ReasonKind) String() string {
	if int(k) < len(reasonText) && reasonText[k] != "" {
		return reasonText[k]
	}
	return "ReasonKind(" + strconv.Itoa(int(k)) + ")"
}

// String explains one reason: `filtered out at Combined#0/Filtered:
// predicate failed: no role`.
func (r Reason) String() string {
	var b strings.Builder
	b.WriteString(r.Kind.String())
	if r.Path != "" {
		b.WriteString(" at ")
		b.WriteString(r.Path)
	}
	if r.Detail != "" {
		b.WriteString(": ")
		b.WriteString(printable(r.Detail))
	}
	return b.String()
}

// printable returns s as it is when it is printable on one line, and
// quoted otherwise, so that a name or an error from a remote toolset
// cannot break a report's lines.
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// Find returns the explanations of the tools named name: offered under
// it, or named so before a prefix or a rename.
func (e *Explanation) Find(name string) []ToolExplanation {
	if e == nil {
		return nil
	}
	var out []ToolExplanation
	for _, t := range e.Tools {
		if t.Name == name || t.Original == name || t.hadName(name) {
			out = append(out, t)
		}
	}
	return out
}

func (t ToolExplanation) hadName(name string) bool {
	for _, r := range t.Renames {
		if r.From == name || r.To == name {
			return true
		}
	}
	return false
}

// String reports the explanation, a line for each tool and one for each
// of its renames and reasons:
//
//	agent "ops": 1 of 2 tools shown
//	db_query: shown, from Combined#0/Prefixed "db"/Function
//	  - was "query", prefixed at Combined#0/Prefixed "db"
//	db_drop: hidden, from ...
func (e *Explanation) String() string {
	if e == nil {
		return "<nil>"
	}
	var b strings.Builder
	shown := 0
	for _, t := range e.Tools {
		if t.Visible {
			shown++
		}
	}
	fmt.Fprintf(&b, "agent %q: %d of %d tools shown", e.Agent, shown, len(e.Tools))
	if e.Err != nil {
		b.WriteString("; the turn fails: ")
		msg := bound(strings.TrimPrefix(errorText(e.Err), "toolset: "), maxErrText)
		b.WriteString(strings.ReplaceAll(msg, "\n", "\n  "))
	}
	for _, t := range e.Tools {
		b.WriteByte('\n')
		b.WriteString(t.String())
	}
	return b.String()
}

// String reports the tool: its name, whether it is shown and where it
// came from, then a line for each rename and each reason.
func (t ToolExplanation) String() string {
	var b strings.Builder
	b.WriteString(printable(bound(t.Name, maxShownName)))
	if t.Visible {
		b.WriteString(": shown")
	} else {
		b.WriteString(": hidden")
	}
	if t.Path != "" {
		b.WriteString(", from ")
		b.WriteString(t.Path)
	}
	for _, r := range t.Renames {
		fmt.Fprintf(&b, "\n  - was %q, ", bound(r.From, maxShownName))
		if strings.HasSuffix(r.To, r.From) && len(r.To) > len(r.From) {
			b.WriteString("prefixed")
		} else {
			b.WriteString("renamed")
		}
		if r.By != "" {
			b.WriteString(" at ")
			b.WriteString(r.By)
		}
	}
	for _, r := range t.Reasons {
		b.WriteString("\n  - ")
		b.WriteString(r.String())
	}
	return b.String()
}

// explainedTool is what an explained walk knows of one tool.
type explainedTool struct {
	path    string
	renames []Rename
	reasons []Reason
	name    string    // for a tool that left the list: its name then
	core    *toolCore // and its core
}

func (x *explainedTool) note(k ReasonKind, path, detail string) {
	x.reasons = append(x.reasons, Reason{Kind: k, Path: path, Detail: detail})
}

func (x *explainedTool) explanation(t Tool, visible bool) ToolExplanation {
	e := ToolExplanation{Name: t.Name, Original: t.Name, Path: x.path, Visible: visible, Renames: x.renames, Reasons: x.reasons}
	if t.core != nil && t.core.name != "" {
		e.Original = t.core.name
	}
	return e
}

// explained is the view of a toolset in an explained turn, with what is
// known of each of its tools, and of the tools that left it.
type explained struct {
	v     view
	tools []*explainedTool // by position in v.snap
	gone  []*explainedTool
	fails []error // why the turn fails that the layers above cannot change
}

// turnNotes collects, in an explained turn, why a function hid tools.
type turnNotes struct{ notes []turnNote }

type turnNote struct {
	pos  int32
	kind ReasonKind
	err  error
}

func (n *turnNotes) add(pos int32, k ReasonKind, err error) {
	n.notes = append(n.notes, turnNote{pos, k, err})
}

// find returns the note of position i, if any.
func (n *turnNotes) find(i int32) (turnNote, bool) {
	for _, note := range n.notes {
		if note.pos == i {
			return note, true
		}
	}
	return turnNote{}, false
}

// maxReasonText bounds the text of an error a reason quotes, and
// maxErrText that of the turn's error in a report (Err holds it whole).
const (
	maxReasonText = 200
	maxErrText    = 4 << 10
)

// element names ts in a path: its type, its position idx among its
// parent's children (none when idx < 0), and what tells it apart.
func element(ts Toolset, idx int) (string, error) {
	var b strings.Builder
	b.WriteString(typeName(ts))
	if idx >= 0 {
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(idx))
	}
	var what string
	switch t := ts.(type) {
	case *Prefixed:
		what = t.prefix
	case *Function:
		what = t.label
	case Tool:
		what = t.Name
	case *Tool:
		what = t.Name
	case *Renamed, *Filtered, *Prepared, *Combined, *Dynamic, Wrapper, *Wrapper:
	default:
		label, err := labelOf(ts)
		if err != nil {
			return "", err
		}
		if label != typeName(ts) {
			what = label
		}
	}
	if what != "" {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(bound(what, maxShownName)))
	}
	return b.String(), nil
}

func fresh(n int, path string) []*explainedTool {
	out := make([]*explainedTool, n)
	for i := range out {
		out[i] = &explainedTool{path: path}
	}
	return out
}

// explainWalk materialises ts, the child idx of the toolset at parent, as
// materialize does, recording why each tool is hidden. Every layer is
// walked on the caller's goroutine, in order.
func explainWalk(ctx context.Context, ts Toolset, parent string, idx int) (explained, error) {
	if what := nilToolset(ts); what != "" {
		return explained{}, errors.New("toolset: " + strings.TrimPrefix(what, "a "))
	}
	el, err := element(ts, idx)
	if err != nil {
		return explained{}, err
	}
	path := el
	if parent != "" {
		path = parent + "/" + el
	}
	var x explained
	switch t := ts.(type) {
	case *Function:
		if t.err != nil {
			return explained{}, t.err
		}
		x = explained{v: view{snap: t.snap}, tools: fresh(len(t.snap.tools), path)}
		if t.perTurn {
			err = x.leaf(ctx, path)
		}
	case Tool:
		err = x.tool(ctx, t, path)
	case *Tool:
		err = x.tool(ctx, *t, path)
	case *Prefixed:
		if t.prefix == "" {
			return explained{}, errors.New("toolset: Prefixed: empty prefix")
		}
		if x, err = explainWalk(ctx, t.inner, path, -1); err != nil {
			return explained{}, err
		}
		in := x.v.snap
		d := derive(&t.memo, in, func(in *snapshot) *derived { return t.build(in, nil) })
		x.renamed(in, d.out, nil, path)
	case *Renamed:
		if x, err = explainWalk(ctx, t.inner, path, -1); err != nil {
			return explained{}, err
		}
		in := x.v.snap
		d := derive(&t.memo, in, func(in *snapshot) *derived { return t.build(in, nil) })
		facts := d.aux.(renameFacts)
		for _, group := range facts.clashes {
			var visible []int32
			for _, i := range group {
				if x.v.visible(int(i)) {
					visible = append(visible, i)
				}
			}
			if len(visible) < 2 {
				continue
			}
			if x.fails == nil {
				// The turn fails at the first clash, as the Renamed's
				// view does, whatever the layers above hide.
				x.fails = append(x.fails, t.clashError(in, d.out, facts.renamed, visible))
			}
			for _, i := range visible {
				var others []string
				for _, j := range visible {
					if j != i {
						others = append(others, strconv.Quote(in.tools[j].Name))
					}
				}
				x.tools[i].note(ReasonNameConflict, path, "renamed onto the name of "+strings.Join(others, ", "))
			}
		}
		x.renamed(in, d.out, facts.renamed, path)
	case *Filtered:
		if t.pred == nil {
			return explained{}, errors.New("toolset: Filtered: nil predicate")
		}
		if x, err = explainWalk(ctx, t.inner, path, -1); err != nil {
			return explained{}, err
		}
		keep := make([]bool, len(x.v.snap.tools))
		var why turnNotes
		if err := t.evaluate(ctx, x.v, keep, &why); err != nil {
			return explained{}, err
		}
		x.hidden(keep, &why, ReasonFiltered, path)
		x.v.keep = keep
	case *Prepared:
		if t.fn == nil {
			return explained{}, errors.New("toolset: Prepared: nil prepare function")
		}
		if x, err = explainWalk(ctx, t.inner, path, -1); err != nil {
			return explained{}, err
		}
		v, err := t.over(ctx, x.v)
		if err != nil {
			return explained{}, err
		}
		x.prepared(v, path)
	case *Dynamic:
		if t.fn == nil {
			return explained{}, errors.New("toolset: Dynamic: nil function")
		}
		picked, err := t.pick(ctx)
		if err != nil {
			return explained{}, err
		}
		if picked == nil {
			return explained{v: view{snap: emptySnapshot}}, nil
		}
		return explainWalk(ctx, picked, path, -1)
	case Wrapper:
		return x.wrapper(ctx, t, path)
	case *Wrapper:
		return x.wrapper(ctx, *t, path)
	case *Combined:
		if t.err != nil {
			return explained{}, t.err
		}
		err = x.combined(ctx, t, path)
	default:
		var tools []Tool
		if tools, err = userTools(ctx, ts); err != nil {
			return explained{}, err
		}
		s := reuseSnapshot(tools)
		x = explained{v: view{snap: s}, tools: fresh(len(s.tools), path)}
		err = x.leaf(ctx, path)
	}
	if err != nil {
		return explained{}, err
	}
	if x.v.snap == nil {
		x.v.snap = emptySnapshot
	}
	return x, nil
}

// tool explains a standalone tool.
func (x *explained) tool(ctx context.Context, t Tool, path string) error {
	if err := t.Err(); err != nil {
		return err
	}
	*x = explained{v: view{snap: t.soloSnapshot()}, tools: fresh(1, path)}
	return x.leaf(ctx, path)
}

// leaf applies the tools' own enabled and prepare functions, as leafView
// does, noting which hid what.
func (x *explained) leaf(ctx context.Context, path string) error {
	positions := x.v.snap.turnPolicies()
	if len(positions) == 0 {
		return nil
	}
	before := x.v
	var why turnNotes
	v, err := applyTurnPolicies(ctx, before, positions, nil, &why)
	if err != nil {
		return err
	}
	if v.keep != nil {
		x.hidden(v.keep, &why, ReasonDisabled, path)
	}
	x.v = v
	return nil
}

// hidden notes why each tool visible before keep and hidden by it was
// hidden: as why says, or as kind.
func (x *explained) hidden(keep []bool, why *turnNotes, kind ReasonKind, path string) {
	for i := range keep {
		if keep[i] || !x.v.visible(i) {
			continue
		}
		k, detail := kind, ""
		if n, ok := why.find(int32(i)); ok {
			k = n.kind
			if n.err != nil {
				detail = "predicate failed: " + bound(errorText(n.err), maxReasonText)
			}
		}
		x.tools[i].note(k, path, detail)
	}
}

// renamed notes the renames from in to out, position for position; only
// the positions marked in which, when it is not nil.
func (x *explained) renamed(in, out *snapshot, which renamedFrom, path string) {
	for i := range out.tools {
		if which != nil && !which[i] {
			continue
		}
		if from, to := in.tools[i].Name, out.tools[i].Name; from != to {
			x.tools[i].renames = append(x.tools[i].renames, Rename{From: from, To: to, By: path})
		}
	}
	x.v.snap = out
}

// prepared follows the tools of x into v, the result of a Prepared: each
// tool of v is found among the visible tools of x by name; the others
// leave the list.
func (x *explained) prepared(v view, path string) {
	in := x.v.snap
	byName := make(map[string]int, len(in.tools))
	for i := range in.tools {
		if x.v.visible(i) {
			if _, dup := byName[in.tools[i].Name]; !dup {
				byName[in.tools[i].Name] = i
			}
		}
	}
	tools := make([]*explainedTool, len(v.snap.tools))
	kept := make([]bool, len(in.tools))
	for j, t := range v.snap.tools {
		i := byName[t.Name]
		tools[j], kept[i] = x.tools[i], true
	}
	for i, t := range x.tools {
		if kept[i] {
			continue
		}
		if x.v.visible(i) {
			t.note(ReasonDroppedByPrepared, path, "")
		}
		t.name, t.core = in.tools[i].Name, in.tools[i].core
		x.gone = append(x.gone, t)
	}
	x.v, x.tools = v, tools
}

// wrapper explains a Wrapper: its middleware changes no name and hides
// nothing.
func (x *explained) wrapper(ctx context.Context, w Wrapper, path string) (explained, error) {
	if w.Wrapped == nil {
		return explained{v: view{snap: emptySnapshot}}, nil
	}
	in, err := explainWalk(ctx, w.Wrapped, path, -1)
	if err != nil || len(w.Middleware) == 0 {
		return in, err
	}
	in.v = withMiddleware(in.v, w.Middleware)
	return in, nil
}

// combined explains the children of c, one after the other, and joins
// them as Combined.view does.
func (x *explained) combined(ctx context.Context, c *Combined, path string) error {
	views := make([]view, len(c.children))
	walked := make([]explained, len(c.children))
	parts := make([]part, len(c.children))
	for i, child := range c.children {
		w, err := explainWalk(ctx, child, path, i)
		if err != nil {
			return &entryError{index: i, label: c.labels[i], combined: true, err: err}
		}
		walked[i], views[i] = w, w.v
		parts[i] = part{snap: w.v.snap, label: c.labels[i]}
	}
	out := join(joinCombined, parts)
	x.v = view{snap: out, keep: joinKeep(out, views, nil)}
	x.tools = make([]*explainedTool, len(out.tools))
	for _, seg := range out.segs {
		copy(x.tools[seg.start:seg.end], walked[seg.pos].tools)
	}
	for _, w := range walked {
		x.gone = append(x.gone, w.gone...)
		x.fails = append(x.fails, w.fails...)
	}
	return nil
}

// explainRun notes what the run and the turn decide of the tools of s,
// the join of the entries, whose visibility keep says: deferred tools not
// revealed, spent budgets, missing environment, name conflicts and
// invalid names. It returns the turn's final mask.
func explainRun(rc *RunContext, s *snapshot, keep []bool, at []*explainedTool) []bool {
	final, over, _ := forRun(rc, s, keep)
	visible := func(k []bool, i int32) bool { return k == nil || k[i] }
	ix := s.index()
	for _, i := range ix.deferred {
		if visible(keep, i) && !visible(final, i) {
			at[i].note(ReasonNotRevealed, "", "")
		}
	}
	for _, i := range ix.budgets {
		_, marked := over[i]
		c := s.tools[i].core
		unrevealed := c.deferred && !rc.isRevealed(c)
		if marked || visible(keep, i) && !visible(final, i) && !unrevealed {
			detail := fmt.Sprintf("failed in %d steps, its budget", c.maxFailures)
			if marked {
				detail += "; kept in the stable list, marked unavailable"
			}
			at[i].note(ReasonBudgetSpent, "", detail)
		}
	}
	for _, group := range ix.dups {
		var shown []int32
		for _, i := range group {
			if visible(final, i) {
				shown = append(shown, i)
			}
		}
		if len(shown) < 2 {
			continue
		}
		for _, i := range shown {
			var others []string
			for _, j := range shown {
				if j != i {
					others = append(others, at[j].path)
				}
			}
			at[i].note(ReasonNameConflict, "", "also shown by "+strings.Join(others, ", "))
		}
	}
	for _, i := range ix.invalid {
		if visible(final, i) {
			at[i].note(ReasonInvalidName, "", nameProblem(s.tools[i].Name))
		}
	}
	for _, i := range ix.env {
		if !visible(final, i) {
			continue
		}
		var vars []string
		for _, m := range missingEnv(nil, s.tools[i]) {
			vars = append(vars, m.Var)
		}
		if len(vars) > 0 {
			at[i].note(ReasonMissingEnv, "", strings.Join(vars, ", "))
		}
	}
	return final
}
