package toolsettest

import (
	"context"
	"maps"

	"github.com/gotoolset/toolset"
)

const (
	defaultRunID = "test-run"
	defaultAgent = "test-agent"
)

// RunBuilder builds the run context a turn is built and called under. Its
// methods set one thing each and return the builder, so a test reads:
//
//	ctx := toolsettest.NewRun().Role("admin").Tenant("acme").Context(t.Context())
//
// A RunBuilder is not safe for concurrent use; the contexts it makes are.
type RunBuilder struct {
	rc toolset.RunContext
}

// NewRun returns a builder for a run with ID "test-run", agent "test-agent"
// and step 0.
func NewRun() *RunBuilder {
	return &RunBuilder{rc: toolset.RunContext{RunID: defaultRunID, Agent: defaultAgent}}
}

// ID sets the run ID.
func (b *RunBuilder) ID(id string) *RunBuilder { b.rc.RunID = id; return b }

// Agent sets the agent name.
func (b *RunBuilder) Agent(name string) *RunBuilder { b.rc.Agent = name; return b }

// Step sets the turn number.
func (b *RunBuilder) Step(n int) *RunBuilder { b.rc.Step = n; return b }

// Role sets the request-scoped value "role".
func (b *RunBuilder) Role(role string) *RunBuilder { return b.Value("role", role) }

// Tenant sets the request-scoped value "tenant".
func (b *RunBuilder) Tenant(tenant string) *RunBuilder { return b.Value("tenant", tenant) }

// Value sets a request-scoped value.
func (b *RunBuilder) Value(key string, v any) *RunBuilder {
	if b.rc.Values == nil {
		b.rc.Values = map[string]any{}
	}
	b.rc.Values[key] = v
	return b
}

// Deps sets the application dependencies tools read with toolset.DepsAs.
func (b *RunBuilder) Deps(deps any) *RunBuilder { b.rc.Deps = deps; return b }

// RunContext returns a new run context with what was set so far. Later
// changes to the builder do not affect it.
func (b *RunBuilder) RunContext() *toolset.RunContext {
	rc := b.rc
	rc.Values = maps.Clone(b.rc.Values)
	return &rc
}

// Context returns parent carrying a new run context (see
// [RunBuilder.RunContext]). Pass t.Context() as parent so the run is
// cancelled when the test ends. Each call makes a new run: build a turn's
// tools and call them under one context, since a [toolset.ToolList] refuses
// calls under another run's context.
func (b *RunBuilder) Context(parent context.Context) context.Context {
	return toolset.NewContext(parent, b.RunContext())
}
