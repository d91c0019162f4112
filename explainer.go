package toolset

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

// This file holds the explainer: the visitor that turns the walk of
// materialize into the walk of Explain. There is one walk. A scratch that
// carries an explainer (scratch.x) makes materialize call explainer.walk
// for every node, which names the node's path, runs the view of its type
// (see dispatch.go), and keeps what is known of the node's tools in cur;
// the views call the explainer's hooks where they decide something (a
// predicate hid a tool, a prefix renamed one, a Prepared dropped one, two
// renamed tools clash). The invariant:
//
//	Every hook does nothing on a nil explainer, and a turn's scratch
//	carries none, so BuildTools pays a nil test per decision and nothing
//	else: no interface call, no closure, no allocation.
//
// An explained walk runs every node on the caller's goroutine, in order
// (explainer.all), and goes on past a Renamed's clash, which it notes, so
// that everything a turn decides is seen.

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
	e.Policies = policiesOf(t.core)
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

// explainer is the state of an explained walk.
type explainer struct {
	cur    explained   // the subtree walked last
	path   string      // the path of the node being walked
	idx    int         // the position of the next node among its parent's children, or -1
	walked []explained // the children of the join being made, from all
}

func newExplainer() *explainer { return &explainer{idx: -1} }

// walk materialises ts, the node at position x.idx of its parent, by the
// row of its type, and leaves what is known of its tools in x.cur.
func (x *explainer) walk(ctx context.Context, ts Toolset, sc *scratch) (view, error) {
	idx := x.idx
	x.idx = -1
	if what := nilToolset(ts); what != "" {
		return view{}, errors.New("toolset: " + strings.TrimPrefix(what, "a "))
	}
	el, err := element(ts, idx)
	if err != nil {
		return view{}, err
	}
	parent := x.path
	x.path = joinPath(parent, el)
	x.cur = explained{}
	v, err := viewOf(ctx, ts, sc)
	x.path = parent
	if err != nil {
		return view{}, err
	}
	x.cur.v = v
	return v, nil
}

// all materialises the children of a join one after the other, on the
// caller's goroutine, and stops at the first that fails, named by name.
// What is known of each is left in x.walked for joined.
func (x *explainer) all(ctx context.Context, toolsets []Toolset, sc *scratch, name func(i int, err error) error) ([]view, error) {
	views := make([]view, len(toolsets))
	walked := make([]explained, len(toolsets))
	for i, ts := range toolsets {
		x.idx = i
		v, err := materialize(ctx, ts, sc)
		if err != nil {
			return nil, name(i, err)
		}
		views[i], walked[i] = v, x.cur
	}
	x.walked = walked
	return views, nil
}

// joined follows the tools of the children walked by all into out, their
// join.
func (x *explainer) joined(out *snapshot) {
	if x == nil {
		return
	}
	walked := x.walked
	x.walked = nil
	x.cur = explained{tools: make([]*explainedTool, len(out.tools))}
	for _, seg := range out.segs {
		copy(x.cur.tools[seg.start:seg.end], walked[seg.pos].tools)
	}
	for _, w := range walked {
		x.cur.gone = append(x.cur.gone, w.gone...)
		x.cur.fails = append(x.cur.fails, w.fails...)
	}
}

// fresh starts the explanations of the n tools of a leaf.
func (x *explainer) fresh(n int) {
	if x == nil {
		return
	}
	x.cur.tools = make([]*explainedTool, n)
	for i := range x.cur.tools {
		x.cur.tools[i] = &explainedTool{path: x.path}
	}
}

// notes returns where a function notes why it hid tools, or nil when no
// explainer is listening.
func (x *explainer) notes() *turnNotes {
	if x == nil {
		return nil
	}
	return &turnNotes{}
}

// hidden notes why each tool visible in `in` and hidden by keep was
// hidden: as why says, or as kind.
func (x *explainer) hidden(in view, keep []bool, why *turnNotes, kind ReasonKind) {
	if x == nil {
		return
	}
	for i := range keep {
		if keep[i] || !in.visible(i) {
			continue
		}
		k, detail := kind, ""
		if n, ok := why.find(int32(i)); ok {
			k = n.kind
			if n.err != nil {
				detail = "predicate failed: " + bound(errorText(n.err), maxReasonText)
			}
		}
		x.cur.tools[i].note(k, x.path, detail)
	}
}

// renamed notes the renames from in to out, position for position; only
// the positions marked in which, when it is not nil.
func (x *explainer) renamed(in, out *snapshot, which renamedFrom) {
	if x == nil {
		return
	}
	for i := range out.tools {
		if which != nil && !which[i] {
			continue
		}
		if from, to := in.tools[i].Name, out.tools[i].Name; from != to {
			x.cur.tools[i].renames = append(x.cur.tools[i].renames, Rename{From: from, To: to, By: x.path})
		}
	}
}

// clash notes the tools of in at visible, which r renamed onto one name
// this turn. The turn fails at the first clash, as the Renamed's view
// does, whatever the layers above hide; the walk goes on.
func (x *explainer) clash(r *Renamed, in, out *snapshot, renamed renamedFrom, visible []int32) {
	if x.cur.fails == nil {
		x.cur.fails = append(x.cur.fails, r.clashError(in, out, renamed, visible))
	}
	for _, i := range visible {
		var others []string
		for _, j := range visible {
			if j != i {
				others = append(others, strconv.Quote(in.tools[j].Name))
			}
		}
		x.cur.tools[i].note(ReasonNameConflict, x.path, "renamed onto the name of "+strings.Join(others, ", "))
	}
}

// prepared follows the tools of in into out, the result of a Prepared:
// each tool of out is found among the visible tools of in by name; the
// others leave the list.
func (x *explainer) prepared(in, out view) {
	if x == nil {
		return
	}
	byName := make(map[string]int, len(in.snap.tools))
	for i := range in.snap.tools {
		if in.visible(i) {
			if _, dup := byName[in.snap.tools[i].Name]; !dup {
				byName[in.snap.tools[i].Name] = i
			}
		}
	}
	tools := make([]*explainedTool, len(out.snap.tools))
	kept := make([]bool, len(in.snap.tools))
	for j, t := range out.snap.tools {
		i := byName[t.Name]
		tools[j], kept[i] = x.cur.tools[i], true
	}
	for i, t := range x.cur.tools {
		if kept[i] {
			continue
		}
		if in.visible(i) {
			t.note(ReasonDroppedByPrepared, x.path, "")
		}
		t.name, t.core = in.snap.tools[i].Name, in.snap.tools[i].core
		x.cur.gone = append(x.cur.gone, t)
	}
	x.cur.tools = tools
}
