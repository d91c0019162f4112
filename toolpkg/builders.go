package toolpkg

import "github.com/gotoolset/toolset"

// Prefixed returns t with every tool name prefixed; see [toolset.NewPrefixed].
func (t *Toolset) Prefixed(prefix string, opts ...toolset.PrefixOption) *toolset.Prefixed {
	return toolset.NewPrefixed(t, prefix, opts...)
}

// Renamed returns t with some tools renamed; see [toolset.NewRenamed].
func (t *Toolset) Renamed(names map[string]string) *toolset.Renamed {
	return toolset.NewRenamed(t, names)
}

// Filtered returns t showing only the tools pred accepts each turn; see
// [toolset.NewFiltered].
func (t *Toolset) Filtered(pred toolset.Predicate) *toolset.Filtered {
	return toolset.NewFiltered(t, pred)
}

// Prepared returns t with its tool list edited each turn by fn; see
// [toolset.NewPrepared].
func (t *Toolset) Prepared(fn toolset.PrepareFunc) *toolset.Prepared {
	return toolset.NewPrepared(t, fn)
}

// CombinedWith returns a toolset of t followed by others; see
// [toolset.NewCombined].
func (t *Toolset) CombinedWith(others ...toolset.Toolset) *toolset.Combined {
	return toolset.NewCombined(append([]toolset.Toolset{t}, others...)...)
}

// Guarded returns t with each tool offered again with the options guard
// returns for it; see [toolset.NewGuarded].
func (t *Toolset) Guarded(guard func(toolset.Tool) []toolset.ToolOption) *toolset.Guarded {
	return toolset.NewGuarded(t, guard)
}
