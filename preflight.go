package toolset

import (
	"fmt"
	"strings"
)

// A preflight is a provider adapter's check of a turn's tools against the
// rules of its provider, before anything is sent: each adapter module
// (provider/openaitools, provider/anthropictools, provider/geminitools)
// has a Check function, and an option that runs it as part of converting
// the tools. The types here are what the adapters share, so that an
// application reports their findings alike.

// PreflightProblem is one thing a provider would refuse, or silently
// weaken, in one tool's definition; or, when Lowered is set, a rewrite the
// adapter makes so that the provider takes the definition unchanged in
// meaning.
type PreflightProblem struct {
	// Tool is the tool's name.
	Tool string
	// Path is a JSON Pointer into the tool's definition as the adapters
	// see it, {"name": ..., "description": ..., "parameters": ...}:
	// "/name", "/description", "/parameters" for the root of the
	// parameter schema, "/parameters/properties/city" for a property.
	Path string
	// Problem says what is wrong, or what the adapter rewrote.
	Problem string
	// Fix says what to do about it; empty for a rewrite that needs
	// nothing done.
	Fix string
	// Lowered reports a note rather than a problem: the adapter sends
	// this part rewritten into a form the provider takes, and the
	// rewritten schema accepts exactly the arguments the original does.
	Lowered bool
}

// String returns the problem as one line: tool, path, problem, fix.
func (p PreflightProblem) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q at %s: %s", p.Tool, p.where(), p.Problem)
	if p.Fix != "" {
		b.WriteString("; fix: ")
		b.WriteString(p.Fix)
	}
	return b.String()
}

func (p PreflightProblem) where() string {
	if p.Path == "" {
		return "the tool"
	}
	return p.Path
}

// PreflightError lists every problem a preflight found in a turn's tools,
// all at once: each tool, each place, each rule. It holds problems only,
// never notes ([PreflightProblem.Lowered]).
type PreflightError struct {
	// Provider names the provider whose rules were applied, such as
	// "Gemini".
	Provider string
	// Problems are the problems found, in the order of the tools and of
	// their schemas.
	Problems []PreflightProblem
	// Omitted counts problems found past the bound the adapter keeps, and
	// not listed.
	Omitted int
}

// Error implements error, one line per problem.
func (e *PreflightError) Error() string {
	var b strings.Builder
	tools := map[string]bool{}
	for _, p := range e.Problems {
		tools[p.Tool] = true
	}
	fmt.Fprintf(&b, "toolset: %s would refuse or weaken %d tool(s), %d problem(s):", e.Provider, len(tools), len(e.Problems)+e.Omitted)
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.String())
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "\n  - and %d more", e.Omitted)
	}
	return b.String()
}

// NewPreflightError returns a *PreflightError for the problems among
// found (notes left out), or nil when there are none. omitted counts
// problems found but not kept, which alone make an error.
func NewPreflightError(provider string, found []PreflightProblem, omitted int) error {
	var problems []PreflightProblem
	for _, p := range found {
		if !p.Lowered {
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 && omitted == 0 {
		return nil
	}
	return &PreflightError{Provider: provider, Problems: problems, Omitted: omitted}
}
