package toolset

import (
	"context"
	"fmt"
	"strings"
)

// BuildTools turns an agent's toolsets into the tools the model is sent this
// turn. Call it once per turn with the turn's context, which carries the
// [RunContext] that predicates read.
//
// Entries are toolsets; a bare [Tool] (or *Tool) is a standalone tool. A
// name shown this turn by two toolsets, or by a toolset and a standalone
// tool, is a conflict; two standalone tools with one name are not: the later
// replaces the earlier, at the earlier one's position. Every conflict and
// every invalid name of the turn (names must match ^[a-zA-Z0-9_-]{1,64}$) is
// reported in one [*NameConflictError] that names every contributor. The
// errors of toolsets that fail are joined instead.
//
// Entries are materialised concurrently, like the children of a [Combined].
// Work that does not depend on the run context is memoised across turns, so
// a turn over unchanged toolsets costs little more than running their
// predicates.
//
// The set belongs to the run of ctx (see [ToolList]). A ctx that is done
// makes BuildTools return its error, even when no toolset would notice. A
// panic of any callback run for the turn (a predicate, a prepare or
// Dynamic function, a toolset's own GetTools or Label) fails the turn
// with a [*PanicError]; so does a callback that calls [runtime.Goexit]
// on one of the goroutines BuildTools starts.
func BuildTools(ctx context.Context, agent string, entries ...Toolset) (*ToolList, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolset: agent %q: tools not built: %w", agent, err)
	}
	s, keep, err := buildSnapshot(ctx, agent, entries)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolset: agent %q: tools not built: %w", agent, err)
	}
	keep, over := forRun(ctx, s, keep)
	if err := checkNames(s, keep, "", agent, true); err != nil {
		return nil, err
	}
	var missing []MissingEnv
	for _, i := range s.index().env {
		if keep == nil || keep[i] {
			missing = missingEnv(missing, s.tools[i])
		}
	}
	if len(missing) > 0 {
		return nil, &EnvError{Missing: missing}
	}
	ts := newTools(agent, s, keep)
	ts.over = over
	ts.rc = runOf(ctx)
	return ts, nil
}

// buildSnapshot materialises the entries of a turn and joins them.
func buildSnapshot(ctx context.Context, agent string, entries []Toolset) (*snapshot, []bool, error) {
	static := make([]bool, len(entries))
	parts := make([]part, len(entries))
	for i, e := range entries {
		if what := nilToolset(e); what != "" {
			return nil, nil, fmt.Errorf("toolset: agent %q: entries[%d] is %s", agent, i, what)
		}
		static[i] = isStatic(e)
		switch t := e.(type) {
		case Tool:
			parts[i].standalone = true
		case *Tool:
			parts[i].standalone = t != nil
		}
		label, err := labelOf(e)
		if err != nil {
			return nil, nil, fmt.Errorf("toolset: agent %q: entries[%d]: %w", agent, i, unprefixed{err})
		}
		parts[i].label = label
	}
	views, err := materializeAll(ctx, entries, static, func(i int, err error) error {
		return &entryError{index: i, label: parts[i].label, err: err}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("toolset: agent %q: %w", agent, err)
	}
	for i, v := range views {
		parts[i].snap = v.snap
		if parts[i].standalone && len(v.snap.tools) != 1 {
			parts[i].standalone = false
		}
	}
	out := join(joinEntries, parts)
	return out, joinKeep(out, views), nil
}

// forRun applies what the run itself decides to the turn's set: deferred
// tools stay hidden until a search of this run revealed them, and tools
// whose retries are spent are dropped, or marked unavailable in over.
func forRun(ctx context.Context, s *snapshot, keep []bool) ([]bool, map[int32]Tool) {
	ix := s.index()
	visible := func(i int32) bool { return keep == nil || keep[i] }
	owned := false
	hide := func(i int32) {
		if !owned {
			keep, owned = cloneKeep(keep, len(s.tools)), true
		}
		keep[i] = false
	}
	rc := runOf(ctx)
	for _, i := range ix.deferred {
		if visible(i) && !rc.isRevealed(s.tools[i].core) {
			hide(i)
		}
	}
	var over map[int32]Tool
	if len(ix.retries) > 0 && rc.hasFailures() {
		for _, i := range ix.retries {
			t := s.tools[i]
			if !visible(i) || !rc.retriesSpent(t.core) {
				continue
			}
			if !rc.StableToolList {
				hide(i)
				continue
			}
			if over == nil {
				over = make(map[int32]Tool)
			}
			t.Description = unavailablePrefix + t.Description
			over[i] = t
		}
	}
	return keep, over
}

// getTools is the GetTools of every toolset of this package: it
// materialises ts as the root of a turn, checks that no name is shown twice,
// and returns a copy of its visible tools. Whether names suit a model is
// checked by BuildTools, since a later Renamed may still fix them.
func getTools(ctx context.Context, ts Toolset) ([]Tool, error) {
	v, err := materialize(ctx, ts)
	if err != nil {
		return nil, err
	}
	if err := checkNames(v.snap, v.keep, LabelOf(ts), "", false); err != nil {
		return nil, err
	}
	return v.tools(), nil
}

// checkNames reports the names of s that clash among the tools visible this
// turn, and, for the entries of BuildTools, the names that are invalid. root
// names s itself when it is not a join of BuildTools entries.
func checkNames(s *snapshot, keep []bool, root, agent string, entries bool) error {
	ix := s.index()
	invalid := ix.invalid
	if !entries {
		invalid = nil // name rules are the model's, checked when a turn is built
	}
	if len(ix.dups) == 0 && len(invalid) == 0 {
		return nil
	}
	visible := func(i int32) bool { return keep == nil || keep[i] }
	var e NameConflictError
	e.Agent = agent
	if !entries {
		e.Toolset = root
	}
	name := func(i int32) string {
		if entries || s.segs != nil {
			return s.contributor(i, "")
		}
		return s.contributor(i, root)
	}
	for _, group := range ix.dups {
		var who []string
		for _, i := range group {
			if visible(i) {
				who = append(who, name(i))
			}
		}
		if len(who) > 1 {
			e.Conflicts = append(e.Conflicts, NameConflict{Name: s.tools[group[0]].Name, Contributors: who})
		}
	}
	for _, i := range invalid {
		if visible(i) {
			e.Invalid = append(e.Invalid, InvalidName{Name: s.tools[i].Name, Contributor: name(i), Reason: nameProblem(s.tools[i].Name)})
		}
	}
	if len(e.Conflicts) == 0 && len(e.Invalid) == 0 {
		return nil
	}
	return &e
}

// NameConflictError reports every tool name that clashes in a turn, and
// every invalid tool name, with the toolsets that contributed each. Get it
// with errors.As.
type NameConflictError struct {
	// Agent is the agent whose tools were built, when the error comes from
	// BuildTools.
	Agent string
	// Toolset is the label of the toolset whose GetTools failed, when the
	// error does not come from BuildTools.
	Toolset string
	// Conflicts lists the names shown by more than one contributor, in the
	// order the model would see them.
	Conflicts []NameConflict
	// Invalid lists the names that do not match ^[a-zA-Z0-9_-]{1,64}$.
	Invalid []InvalidName

	rename bool // the conflicts were made by a Renamed
}

// NameConflict is one name shown by several contributors.
type NameConflict struct {
	// Name is the tool name.
	Name string
	// Contributors names each contributor by position and label:
	// "Prefixed#0" or "tools[1] (standalone)" among the entries of
	// BuildTools, "toolsets[2] (Function)" inside a Combined, joined with " > "
	// along a nested path. For names that a [Renamed] brought together, the
	// contributors are the tools' old names: `"execute_query" (renamed)`,
	// `"drop"`.
	Contributors []string
}

// InvalidName is a tool name that providers reject.
type InvalidName struct {
	// Name is the tool name.
	Name string
	// Contributor names where it came from, as in [NameConflict].
	Contributor string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *NameConflictError) Error() string {
	var b strings.Builder
	b.WriteString("toolset: ")
	switch {
	case e.Agent != "":
		fmt.Fprintf(&b, "agent %q has ", e.Agent)
	case e.Toolset != "":
		fmt.Fprintf(&b, "%s has ", e.Toolset)
	default:
		b.WriteString("the tools have ")
	}
	switch {
	case len(e.Conflicts) > 0 && len(e.Invalid) > 0:
		b.WriteString("tool name conflicts and invalid tool names:")
	case len(e.Conflicts) > 0:
		b.WriteString("tool name conflicts:")
	default:
		b.WriteString("invalid tool names:")
	}
	for _, c := range e.Conflicts {
		fmt.Fprintf(&b, "\n  - %q contributed by: %s", c.Name, strings.Join(c.Contributors, ", "))
	}
	for _, n := range e.Invalid {
		fmt.Fprintf(&b, "\n  - %q from %s: %s", n.Name, n.Contributor, n.Reason)
	}
	switch {
	case len(e.Conflicts) > 0 && e.rename:
		b.WriteString("\nhint: rename the tools to different names")
	case len(e.Conflicts) > 0:
		b.WriteString("\nhint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)")
	}
	if len(e.Invalid) > 0 {
		b.WriteString("\nhint: tool names must match ^[a-zA-Z0-9_-]{1,64}$; rename tools with .Renamed(...) or use a shorter prefix")
	}
	return b.String()
}

// maxNameLen is the longest tool name providers accept.
const maxNameLen = 64

// validName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func validName(name string) bool {
	if len(name) == 0 || len(name) > maxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// nameProblem says why a name is invalid.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "empty name"
	case len(name) > maxNameLen:
		return fmt.Sprintf("%d characters, at most %d allowed", len(name), maxNameLen)
	}
	for _, r := range name {
		if r > 0x7f || !nameByte(byte(r)) {
			return fmt.Sprintf("character %q not allowed (only letters, digits, '_' and '-')", r)
		}
	}
	return "invalid"
}
