package toolset

import "iter"

// unrevealedTools is what a turn keeps of the deferred tools its run hid:
// the set as it was built, before they were hidden (nil: every tool of the
// snapshot).
type unrevealedTools struct {
	built []bool
}

// Deferred reports whether the tool is deferred ([WithDeferred]): a model
// is not shown it until a tool search of the run reveals it.
func (t Tool) Deferred() bool { return t.core != nil && t.core.deferred }

// Catalog iterates over the turn's tools ([ToolList.All]) together with
// the deferred tools ([WithDeferred]) its run had not revealed when the
// turn was built, each in its place, in the order the model is sent them.
// It is what a provider that loads deferred tools itself is sent
// (Anthropic's and OpenAI's defer_loading): the whole catalogue, deferred
// tools marked ([Tool.Deferred]). It stays the same, byte for byte, as
// searches reveal tools, so that the provider's prompt cache is kept. A
// tool of the catalogue that is not in All cannot be called until a
// search reveals it.
func (ts *ToolList) Catalog() iter.Seq[Tool] {
	if ts == nil || ts.unrevealed == nil {
		return ts.All()
	}
	built := ts.unrevealed.built
	return func(yield func(Tool) bool) {
		for i := range ts.snap.tools {
			var t Tool
			switch {
			case ts.keep == nil || ts.keep[i]:
				t = ts.at(int32(i))
			case (built == nil || built[i]) && hiddenUnrevealed(ts.rc, ts.snap.tools[i].core):
				t = ts.snap.tools[i]
			default:
				continue
			}
			if !yield(t) {
				return
			}
		}
	}
}

// hiddenUnrevealed reports whether a tool of the built set that the turn
// does not show was hidden because it is deferred and was not revealed
// when the turn was built. A search of the turn may have revealed it
// since, which does not change the turn's catalogue; a tool hidden because
// its failure budget is spent (revealed before) is not.
func hiddenUnrevealed(rc *RunContext, c *toolCore) bool {
	return c.deferred && (c.maxFailures == 0 || !rc.budgetSpent(c))
}

// IsToolSearch reports whether the tool is a tool search made by
// [NewToolSearch] (or a copy of one: renamed, prefixed), so that an
// adapter can send it as the provider's own client-executed tool search.
func (t Tool) IsToolSearch() bool { return t.core != nil && t.core.search != nil }

// Prefix returns the prefix and the separator that p puts before every
// tool name, so that an adapter can send p's tools as a group of the
// provider's (OpenAI's namespaces) under the prefix, by their own names.
func (p *Prefixed) Prefix() (prefix, separator string) {
	if p == nil {
		return "", ""
	}
	return p.prefix, p.sep
}
