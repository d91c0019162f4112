package toolset

import (
	"context"
	"log/slog"
)

// RefusalReporter is implemented by toolsets that leave out some of the
// tools their source offers them, so that [Explain] can say which and
// why: an MCP server's tool whose name no provider accepts, or whose
// schema does not compile, is never one of the toolset's tools, and
// without a report it would be missing from the explanation without a
// word.
//
// Only Explain calls RefusedTools, right after the toolset's GetTools,
// under the same context; BuildTools never does. Explain lists each tool
// it returns among those that left the list: hidden, from the
// toolset's path, under its Name, with its Reasons. A reason whose Kind
// is zero is a [ReasonRefused], every reason's Path is the toolset's (a
// toolset speaks for itself, never for another place of the turn), and a
// tool without reasons gets one ReasonRefused; Visible, Path and
// Renames are Explain's to set, and ignored. Explain quotes at most 200
// bytes of each reason's Detail, at most 16 reasons of a tool and at
// most 1,000 tools; a panic of
// RefusedTools is logged with [slog.Default] and its report left out,
// since the turn itself does not depend on it.
type RefusalReporter interface {
	// RefusedTools returns the tools that the last GetTools left out,
	// in a deterministic order.
	RefusedTools(ctx context.Context) []ToolExplanation
}

// maxRefusedShown bounds the refused tools an explanation lists per
// toolset, and maxRefusalReasons the reasons it lists of each.
const (
	maxRefusedShown   = 1000
	maxRefusalReasons = 16
)

// refused notes, in an explained turn, the tools that ts, a toolset of
// the caller's just materialised, reports it refused.
func (x *explainer) refused(ctx context.Context, ts Toolset) {
	if x == nil {
		return
	}
	r, ok := ts.(RefusalReporter)
	if !ok {
		return
	}
	list, err := refusedTools(ctx, r)
	if err != nil {
		logError(ctx, "toolset: RefusedTools panicked; its refused tools are not explained",
			slog.String("toolset", x.path), slog.Any("error", err))
		return
	}
	for _, e := range list[:min(len(list), maxRefusedShown)] {
		t := &explainedTool{path: x.path, name: e.Name}
		for _, why := range e.Reasons[:min(len(e.Reasons), maxRefusalReasons)] {
			if why.Kind == 0 {
				why.Kind = ReasonRefused
			}
			t.note(why.Kind, x.path, bound(why.Detail, maxReasonText))
		}
		if len(t.reasons) == 0 {
			t.note(ReasonRefused, x.path, "")
		}
		x.cur.gone = append(x.cur.gone, t)
	}
}

// refusedTools runs r's RefusedTools; a panic becomes a *PanicError.
func refusedTools(ctx context.Context, r RefusalReporter) (list []ToolExplanation, err error) {
	defer func() {
		if p := recover(); p != nil {
			list, err = nil, newPanicError("RefusedTools", "", typeName(r), p)
		}
	}()
	return r.RefusedTools(ctx), nil
}
