package toolsettest

import "github.com/gotoolset/toolset"

// Prefixed returns f with every tool name prefixed; see [toolset.NewPrefixed].
func (f *Fake) Prefixed(prefix string, opts ...toolset.PrefixOption) *toolset.Prefixed {
	return toolset.NewPrefixed(f, prefix, opts...)
}

// Renamed returns f with some tools renamed; see [toolset.NewRenamed].
func (f *Fake) Renamed(names map[string]string) *toolset.Renamed {
	return toolset.NewRenamed(f, names)
}

// Filtered returns f showing only the tools pred accepts each turn; see
// [toolset.NewFiltered].
func (f *Fake) Filtered(pred toolset.Predicate) *toolset.Filtered {
	return toolset.NewFiltered(f, pred)
}

// Prepared returns f with its tool list edited each turn by fn; see
// [toolset.NewPrepared].
func (f *Fake) Prepared(fn toolset.PrepareFunc) *toolset.Prepared {
	return toolset.NewPrepared(f, fn)
}

// CombinedWith returns a toolset of f followed by others; see
// [toolset.NewCombined].
func (f *Fake) CombinedWith(others ...toolset.Toolset) *toolset.Combined {
	return toolset.NewCombined(append([]toolset.Toolset{f}, others...)...)
}

// Prefixed returns r with every tool name prefixed; see [toolset.NewPrefixed].
func (r *Recorder) Prefixed(prefix string, opts ...toolset.PrefixOption) *toolset.Prefixed {
	return toolset.NewPrefixed(r, prefix, opts...)
}

// Renamed returns r with some tools renamed; see [toolset.NewRenamed].
func (r *Recorder) Renamed(names map[string]string) *toolset.Renamed {
	return toolset.NewRenamed(r, names)
}

// Filtered returns r showing only the tools pred accepts each turn; see
// [toolset.NewFiltered].
func (r *Recorder) Filtered(pred toolset.Predicate) *toolset.Filtered {
	return toolset.NewFiltered(r, pred)
}

// Prepared returns r with its tool list edited each turn by fn; see
// [toolset.NewPrepared].
func (r *Recorder) Prepared(fn toolset.PrepareFunc) *toolset.Prepared {
	return toolset.NewPrepared(r, fn)
}

// CombinedWith returns a toolset of r followed by others; see
// [toolset.NewCombined].
func (r *Recorder) CombinedWith(others ...toolset.Toolset) *toolset.Combined {
	return toolset.NewCombined(append([]toolset.Toolset{r}, others...)...)
}
