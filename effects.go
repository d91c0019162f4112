package toolset

import (
	"context"
	"encoding/json"
)

// Effects say what a tool's calls do besides answering, as the tool
// declares them: MCP's tool annotations (readOnlyHint, destructiveHint,
// idempotentHint, openWorldHint) are one source, [WithEffects] another.
// They are the tool's word, not a guarantee: a server one does not trust
// may say anything.
//
// A declaration alone changes one thing: a [CachePolicy.Shared] store
// never serves a tool that declares calls that are neither read-only nor
// idempotent (see [CachePolicy.ShareNonIdempotent]). [EffectPolicies],
// given to [NewGuarded], turns the rest into policies for the tools of a
// toolset; a program may read [Tool.Effects] and choose its own.
type Effects struct {
	// ReadOnly: a call changes nothing.
	ReadOnly bool
	// Destructive: a call may destroy or overwrite what exists, rather
	// than only add to it. Meaningful when not ReadOnly.
	Destructive bool
	// Idempotent: a second call with the same arguments has no further
	// effect. Meaningful when not ReadOnly.
	Idempotent bool
	// OpenWorld: a call reaches outside the program's own world (the web,
	// other people's systems).
	OpenWorld bool
}

// UnknownEffects are what a tool that declares nothing is taken to do, as
// MCP's specification takes it: it may change and destroy things, a
// second call is not harmless, and it reaches outside.
var UnknownEffects = Effects{Destructive: true, OpenWorld: true}

// WithEffects declares what the tool's calls do; see [Effects].
func WithEffects(e Effects) ToolOption { return WithEffectsFrom(e, "WithEffects") }

// WithEffectsFrom declares what the tool's calls do, as [WithEffects],
// and says who declared it, in words [Explain] quotes when it names what
// set a policy: `MCP annotations of server "fs" (destructiveHint: true)`,
// say. Empty by: "WithEffects".
func WithEffectsFrom(e Effects, by string) ToolOption {
	if by == "" {
		by = "WithEffects"
	}
	by = bound(by, maxReasonText)
	return func(t *Tool) { t.core.effects, t.core.effectsBy = &e, by }
}

// Effects returns what the tool declares its calls do, and whether it
// declares it; a tool that declares nothing is reported as
// [UnknownEffects].
func (t Tool) Effects() (e Effects, declared bool) {
	if t.core == nil || t.core.effects == nil {
		return UnknownEffects, false
	}
	return *t.core.effects, true
}

// destructive reports whether the effects may destroy what exists.
func (e Effects) destructive() bool { return !e.ReadOnly && e.Destructive }

// harmlessAgain reports whether a second call does nothing the first did
// not: the call is read-only or idempotent.
func (e Effects) harmlessAgain() bool { return e.ReadOnly || e.Idempotent }

// Never is the [NeedsApprovalFunc] of a tool none of whose calls waits
// for a human: WithApprovalRequired(toolset.Never) says so explicitly,
// and [EffectPolicies] then asks no approval of the tool, whatever its
// effects.
func Never(context.Context, Tool, json.RawMessage) (bool, error) { return false, nil }

// WithResumeRerun makes a call of the tool that a resumed run's journal
// finds started and never finished (see [WithCallJournal]) run again
// without asking a human. Give it to tools a second call of which does
// no harm: [EffectPolicies] gives it to those that declare themselves
// read-only or idempotent.
func WithResumeRerun() ToolOption {
	return func(t *Tool) { t.core.resumeRerun, t.core.resumeBy = true, "" }
}

// EffectRules turn the effect-derived policies of [EffectGuard] off, or
// declare effects for a whole toolset. The zero value gives every policy
// [EffectPolicies] does.
type EffectRules struct {
	// Declare, if set, replaces the effects each tool declares (or its
	// lack of a declaration) with these: a program that knows a server
	// better than its annotations says so here.
	Declare *Effects
	// DeclaredBy names who declared Declare, for [Explain]: `toolset
	// "fs"`, say. Empty: "EffectRules".
	DeclaredBy string
	// NoApproval: tools that may destroy do not wait for a human.
	NoApproval bool
	// Parallel: tools that may destroy are not made [WithSequential].
	Parallel bool
	// AskOnResume: read-only and idempotent tools are not made
	// [WithResumeRerun]; an interrupted call of one asks a human, as
	// every other tool's does.
	AskOnResume bool
}

// EffectPolicies is a guard for [NewGuarded] that gives each tool the
// policies its effects call for, as [EffectGuard] with the zero
// [EffectRules]:
//
//   - a tool that may destroy (declared destructive and not read-only, or
//     declaring nothing) has every call approved by a human, unless the
//     tool has an approval policy of its own ([WithApprovalRequired],
//     [Never] included), and runs alone in the model's order
//     ([WithSequential]);
//   - a read-only or idempotent tool runs again unasked when a resumed
//     run finds one of its calls interrupted ([WithResumeRerun]); any
//     other asks a human first, as the journal does;
//   - a read-only tool, or one that only adds, runs alongside others.
//
// A tool that is neither read-only nor idempotent is never served from a
// shared result cache; that holds with or without this guard (see
// [Effects]). There is no policy that calls a tool again after a failure:
// the model decides whether to.
//
// An explicit policy wins over a default: a tool's own approval policy,
// an [EffectRules] that turns a default off for a toolset, or a guard of
// one's own that calls EffectPolicies for the tools it chooses. [Explain]
// names what set each policy.
//
//	mcp := toolset.NewGuarded(mcptoolset.NewHTTP(url), toolset.EffectPolicies)
func EffectPolicies(t Tool) []ToolOption { return effectOptions(t, EffectRules{}) }

// EffectGuard returns a guard for [NewGuarded] that gives the tools of a
// toolset the policies of [EffectPolicies] that r leaves on.
func EffectGuard(r EffectRules) func(Tool) []ToolOption {
	if r.DeclaredBy == "" {
		r.DeclaredBy = "EffectRules"
	}
	return func(t Tool) []ToolOption { return effectOptions(t, r) }
}

func effectOptions(t Tool, r EffectRules) []ToolOption {
	e, _ := t.Effects()
	by := t.effectsBy()
	var opts []ToolOption
	if r.Declare != nil {
		e, by = *r.Declare, r.DeclaredBy
		opts = append(opts, WithEffectsFrom(e, by))
	}
	if e.destructive() {
		why := "destructive, declared by " + by
		if t.core != nil && t.core.effects == nil && r.Declare == nil {
			why = "declares no effects, taken as destructive"
		}
		if !r.Parallel {
			opts = append(opts, func(t *Tool) { t.core.sequential, t.core.sequentialBy = true, why })
		}
		if !r.NoApproval && !t.approves() {
			opts = append(opts, func(t *Tool) { t.core.approval, t.core.approvalBy = Always, why })
		}
	}
	switch {
	case t.core != nil && t.core.resumeRerun:
		// The tool's own WithResumeRerun, or a guard's before: kept.
	case e.harmlessAgain() && !r.AskOnResume:
		what := "idempotent"
		if e.ReadOnly {
			what = "read-only"
		}
		why := what + ", declared by " + by
		opts = append(opts, func(t *Tool) { t.core.resumeRerun, t.core.resumeBy = true, why })
	default:
		// Asked as every tool is; said so, for Explain.
		why := "not idempotent, declared by " + by
		switch {
		case r.AskOnResume && e.harmlessAgain():
			why = "explicit EffectRules.AskOnResume"
		case t.core != nil && t.core.effects == nil && r.Declare == nil:
			why = "declares no effects, taken as not idempotent"
		}
		opts = append(opts, func(t *Tool) { t.core.resumeBy = why })
	}
	return opts
}

// effectsBy returns who declared the tool's effects, or "".
func (t Tool) effectsBy() string {
	if t.core == nil || t.core.effects == nil {
		return ""
	}
	return t.core.effectsBy
}

// approves reports whether the tool, or a tool it guards, has an approval
// policy.
func (t Tool) approves() bool {
	for c := t.core; c != nil; c = c.guards {
		if c.approval != nil {
			return true
		}
	}
	return false
}

// sharesResults reports whether c's shared cache may serve its calls: a
// tool that declares calls that are neither read-only nor idempotent is
// served only when its policy says so explicitly.
func (c *toolCore) sharesResults() bool {
	return c.effects == nil || c.effects.harmlessAgain() || c.cache.policy.ShareNonIdempotent
}
