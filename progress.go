package toolset

import (
	"context"
	"log/slog"
	"math"
)

// Progress is a report of how far a tool's call has come.
type Progress struct {
	// Message says what the tool is doing, for people ("fetching page
	// 3"). It may be empty.
	Message string
	// Fraction is how much is done, from 0 to 1; negative when the tool
	// does not know.
	Fraction float64
}

// progressKey is the context key of the progress callback.
type progressKey struct{}

// WithProgress returns a context that carries fn, the progress callback
// of the calls made under it: a tool reports with [ReportProgress], and
// fn receives each report, in the order reported. A callback set by an
// outer WithProgress is replaced. fn runs on the reporting goroutine and
// should return quickly; it must be safe for concurrent use when a tool
// reports from several goroutines. A panic in fn is recovered and logged
// with [slog.Default]: it never fails the call. A nil fn removes the
// callback.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress sends p to the progress callback of ctx (see
// [WithProgress]), if it has one; without one it does nothing and costs a
// context lookup. A Fraction that is not a number in [0, 1] is reported
// as unknown (-1).
func ReportProgress(ctx context.Context, p Progress) {
	fn, _ := ctx.Value(progressKey{}).(func(Progress))
	if fn == nil {
		return
	}
	if math.IsNaN(p.Fraction) || p.Fraction < 0 || p.Fraction > 1 {
		p.Fraction = -1
	}
	defer func() {
		if v := recover(); v != nil {
			logError(ctx, "toolset: progress callback panicked; the report is dropped", slog.Any("panic", v))
		}
	}()
	fn(p)
}

// HasProgress reports whether ctx carries a progress callback, for a
// tool that would do work only to report it.
func HasProgress(ctx context.Context) bool {
	fn, _ := ctx.Value(progressKey{}).(func(Progress))
	return fn != nil
}
