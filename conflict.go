package toolset

import (
	"fmt"
	"strings"
)

// checkNames reports the names of s that clash among the tools visible this
// turn, and, for the entries of BuildTools, the names that are invalid.
// root is the toolset s is the view of when it is not a join of BuildTools
// entries: its label names it in the error, and its path element begins
// the paths of contributors that no join names.
func checkNames(s *snapshot, keep []bool, root namedRoot, agent string, entries bool) error {
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
		e.Toolset = root.label
	}
	name := func(i int32) string {
		if entries || root.ts == nil || kindOf(root.ts) == &kinds[kCombined] {
			return s.contributor(i, "") // the error names the Combined
		}
		el, _ := element(root.ts, -1) // a toolset of this package: no Label of its own to fail
		return s.contributor(i, el)
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
	// Contributors names each contributor by its path, as
	// [ToolExplanation.Path] spells it: each toolset's type, its position
	// among the entries of BuildTools or the children of the [Combined]
	// before it, and a prefix, label or name in quotes, joined with "/":
	// `Prefixed#0 "db"`, `Tool#1 "search"`, `Combined#0/Function#2 "web"`.
	// The path ends at the innermost Combined the tool came through; the
	// layers under it are left out. For names that a [Renamed] brought
	// together, the contributors are the tools' old names:
	// `"execute_query" (renamed)`, `"drop"`.
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

// namedRoot is the toolset whose GetTools checks its names.
type namedRoot struct {
	label string
	ts    Toolset
}

// rootOf returns ts as the root of a name check.
func rootOf(ts Toolset) namedRoot { return namedRoot{label: LabelOf(ts), ts: ts} }
