package toolset

import "context"

// Wrapper delegates everything to the toolset it wraps. Embed it in your
// own type and override what you need:
//
//	// Beta tags every tool description.
//	type Beta struct{ toolset.Wrapper }
//
//	func (b Beta) GetTools(ctx context.Context) ([]toolset.Tool, error) {
//		tools, err := b.Wrapper.GetTools(ctx)
//		for i := range tools {
//			tools[i].Description = "[beta] " + tools[i].Description
//		}
//		return tools, err
//	}
//
// Wrapper has no builder methods, on purpose: a method promoted from an
// embedded Wrapper would receive the Wrapper, not your type, and so lose
// your GetTools; pass your type to the constructors instead, as in
// toolset.NewPrefixed(Beta{...}, "x").
//
// The label, instructions and Close are forwarded to the wrapped toolset.
// The zero value wraps nothing and yields no tools.
type Wrapper struct {
	// Wrapped is the toolset that calls are delegated to.
	Wrapped Toolset
	// Middleware wraps the handler of every tool the Wrapper yields, the
	// first outermost, after the tool's own middleware is applied. The
	// copies still share their state with the original tools. Do not modify
	// the slice once the Wrapper is in use.
	Middleware []Middleware
}

// GetTools implements [Toolset], returning the wrapped toolset's tools.
func (w Wrapper) GetTools(ctx context.Context) ([]Tool, error) { return getTools(ctx, w) }

// Label implements [Labeler], forwarding the wrapped toolset's label.
func (w Wrapper) Label() string { return labelOrEmpty(w.Wrapped) }

// Instructions implements [InstructionsProvider], forwarding the wrapped
// toolset's instructions.
func (w Wrapper) Instructions(ctx context.Context) (string, error) {
	return forwardInstructions(ctx, w.Wrapped)
}

// Close closes the wrapped toolset if it holds resources.
func (w Wrapper) Close() error { return forwardClose(w.Wrapped) }

func (w Wrapper) view(ctx context.Context, sc *scratch) (view, error) {
	if w.Wrapped == nil {
		return view{snap: emptySnapshot}, nil
	}
	v, err := materialize(ctx, w.Wrapped, sc)
	if err != nil || len(w.Middleware) == 0 {
		return v, err
	}
	return withMiddleware(v, w.Middleware), nil
}
