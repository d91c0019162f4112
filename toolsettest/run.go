package toolsettest

import (
	"testing"

	"github.com/gotoolset/toolset"
)

// NewRun begins a run for a test with a generated ID, as
// toolset.NewRun("", opts...) does, and ends it when the test ends.
// Derive each turn's context from it as an agent's loop does:
//
//	run := toolsettest.NewRun(t, toolset.WithValue(Role, "admin"))
//	ctx := run.Turn(t.Context())
//	tools := toolsettest.Build(t, ctx, ts)
//
// Use [toolset.NewRun] (and End it) for a run of a given ID.
func NewRun(t testing.TB, opts ...toolset.RunOption) *toolset.RunContext {
	t.Helper()
	run := toolset.NewRun("", opts...)
	t.Cleanup(run.End)
	return run
}
