package toolset

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
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
	x := newExplainer()
	sc := &scratch{x: x} // never pooled: the views outlive the walk
	for i, e := range entries {
		if err := describeEntry(agent, i, e, &parts[i]); err != nil {
			return nil, err
		}
		x.idx = i
		v, err := materialize(ctx, e, sc)
		if err != nil {
			return nil, fmt.Errorf("toolset: agent %q: %w", agent, &entryError{index: i, label: parts[i].label, elem: parts[i].elem, err: err})
		}
		walked[i], views[i] = x.cur, v
		parts[i].snap = v.snap
		if parts[i].standalone && len(v.snap.tools) != 1 {
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
	if err := checkNames(s, final, namedRoot{}, agent, true); err != nil {
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
	// [Prepared] function, replaced by a later standalone tool of the
	// same name, or refused by their toolset, see [RefusalReporter]).
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
	// Policies lists the tool's policies that its effects bear on
	// (approval, call order, what a resumed run does with an interrupted
	// call, a shared cache), each with what set it; nil when it has none.
	Policies []Policy
}

// Policy is one policy of a tool's calls, and what set it: an explicit
// option, or a default [EffectPolicies] drew from a declaration.
type Policy struct {
	// Name names the policy: "approval", "order", "resume" or "shared
	// cache".
	Name string
	// Value says what it does: "required", "runs alone", ...
	Value string
	// By says what set it: "explicit WithApprovalRequired", or the
	// effect and who declared it.
	By string
}

// String reports the policy: `approval: required (destructive, declared
// by MCP annotations of server "fs" (destructiveHint: true))`.
func (p Policy) String() string {
	return p.Name + ": " + p.Value + " (" + printable(p.By) + ")"
}

// policiesOf returns the policies of the tool of c that its effects bear
// on.
func policiesOf(c *toolCore) []Policy {
	if c == nil {
		return nil
	}
	var out []Policy
	for a := c; a != nil; a = a.guards {
		if a.approval == nil {
			continue
		}
		p := Policy{Name: "approval", Value: "when its function says", By: "explicit WithApprovalRequired"}
		switch fn := reflect.ValueOf(a.approval).Pointer(); fn {
		case reflect.ValueOf(Always).Pointer():
			p.Value = "required"
		case reflect.ValueOf(NeedsApprovalFunc(Never)).Pointer():
			p.Value = "never"
		}
		if a.approvalBy != "" {
			p.By = a.approvalBy
		}
		out = append(out, p)
		break
	}
	if c.sequential {
		by := cmp.Or(c.sequentialBy, "explicit WithSequential")
		out = append(out, Policy{Name: "order", Value: "runs alone, in the model's order", By: by})
	}
	switch {
	case c.resumeRerun:
		by := cmp.Or(c.resumeBy, "explicit WithResumeRerun")
		out = append(out, Policy{Name: "resume", Value: "an interrupted call runs again unasked", By: by})
	case c.resumeBy != "":
		out = append(out, Policy{Name: "resume", Value: "an interrupted call asks a human before it runs again", By: c.resumeBy})
	}
	for a := c; a != nil; a = a.guards {
		if a.cache != nil && a.cache.policy.Shared != nil {
			if !a.sharesResults() {
				out = append(out, Policy{Name: "shared cache", Value: "bypassed, every call runs",
					By: "not idempotent, declared by " + a.effectsBy})
			} else if a.effects != nil && !a.effects.harmlessAgain() {
				out = append(out, Policy{Name: "shared cache", Value: "serves calls", By: "explicit ShareNonIdempotent"})
			}
		}
	}
	return out
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
	// ReasonRefused: the toolset left out a tool its source offered (an
	// MCP server's tool whose name providers reject, say), and said so
	// as a [RefusalReporter].
	ReasonRefused
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
	ReasonRefused:           "refused by its toolset",
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
// came from, then a line for each rename, each reason and each policy.
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
	for _, p := range t.Policies {
		b.WriteString("\n  - ")
		b.WriteString(p.String())
	}
	return b.String()
}

// maxReasonText bounds the text of an error a reason quotes, and
// maxErrText that of the turn's error in a report (Err holds it whole).
const (
	maxReasonText = 200
	maxErrText    = 4 << 10
)

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
