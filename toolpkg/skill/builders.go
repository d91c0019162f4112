package skill

import "github.com/gotoolset/toolset"

// Prefixed returns toolset.NewPrefixed(t, prefix, opts...).
func (t *Toolset) Prefixed(prefix string, opts ...toolset.PrefixOption) *toolset.Prefixed {
	return toolset.NewPrefixed(t, prefix, opts...)
}

// Renamed returns toolset.NewRenamed(t, names).
func (t *Toolset) Renamed(names map[string]string) *toolset.Renamed {
	return toolset.NewRenamed(t, names)
}

// Filtered returns toolset.NewFiltered(t, pred).
func (t *Toolset) Filtered(pred toolset.Predicate) *toolset.Filtered {
	return toolset.NewFiltered(t, pred)
}

// Prepared returns toolset.NewPrepared(t, fn).
func (t *Toolset) Prepared(fn toolset.PrepareFunc) *toolset.Prepared {
	return toolset.NewPrepared(t, fn)
}

// CombinedWith returns toolset.NewCombined(t, others...).
func (t *Toolset) CombinedWith(others ...toolset.Toolset) *toolset.Combined {
	return toolset.NewCombined(append([]toolset.Toolset{t}, others...)...)
}

// Guarded returns toolset.NewGuarded(t, guard).
func (t *Toolset) Guarded(guard func(toolset.Tool) []toolset.ToolOption) *toolset.Guarded {
	return toolset.NewGuarded(t, guard)
}
