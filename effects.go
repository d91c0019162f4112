package toolset

// Effects say what a tool's calls do besides answering, as the tool
// declares them: MCP's tool annotations (readOnlyHint, destructiveHint,
// idempotentHint, openWorldHint) are one source, [WithEffects] another.
// They are the tool's word, not a guarantee: a server one does not trust
// may say anything.
//
// A declaration alone changes nothing. [EffectPolicies], given to
// [NewGuarded], turns it into policies for the tools of a toolset; a
// program may read [Tool.Effects] and choose its own.
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
func WithEffects(e Effects) ToolOption {
	return func(t *Tool) { t.core.effects = &e }
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

// EffectPolicies is a guard for [NewGuarded] that gives each tool the
// policies its effects call for: a tool that may destroy (declared
// destructive and not read-only, or declaring nothing) has every call
// approved by a human and runs alone in the model's order
// ([WithSequential]); it asks nothing more of a tool that already needs
// approval. A read-only tool, or one that only adds, gets nothing. Tools
// that are not idempotent need nothing here: a run's journal
// ([WithCallJournal]) asks before it runs one again after a crash.
//
//	mcp := toolset.NewGuarded(mcptoolset.NewHTTP(url), toolset.EffectPolicies)
func EffectPolicies(t Tool) []ToolOption {
	e, _ := t.Effects()
	if !e.destructive() {
		return nil
	}
	opts := []ToolOption{WithSequential()}
	if t.core == nil || t.core.approval == nil {
		opts = append(opts, WithApprovalRequired(Always))
	}
	return opts
}
