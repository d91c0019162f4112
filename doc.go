// Package toolset composes the tools an LLM agent is offered on each turn.
//
// An agent's tools come from many places: typed Go functions, MCP servers,
// other agents, packaged tool bundles. This package gives them one shape,
// [Toolset], and a handful of composable implementations:
//
//   - [Function]: a static list of [Tool] values, typically made with [NewTool];
//   - [Prefixed] and [Renamed]: namespace or rename tools so names do not collide;
//   - [Filtered]: hide tools per turn, for example by the caller's role read from the [RunContext];
//   - [Combined]: merge several toolsets, materialised concurrently;
//   - [Prepared]: edit, drop or reorder the tool list per turn;
//   - [Dynamic]: pick the toolset per turn;
//   - [Wrapper]: embed it in your own type to override behaviour.
//
// Builder methods chain them left to right:
//
//	db := toolset.NewFunction(query, migrate).Prefixed("db").Filtered(isAdmin)
//
// Once per turn, [BuildTools] turns an agent's toolsets and standalone tools
// into the ordered, immutable set of tools the model is sent. It reports every
// name conflict and every invalid name of the turn in one [*NameConflictError],
// and its [Tools.Call] executes a model's tool call by name, validating the
// arguments against the tool's JSON Schema first.
//
// A [Tool] is a value: what the model sees (name, description, schemas) plus a
// pointer to the code and state behind it. Renamed and prefixed copies share
// that pointer, so state follows the underlying tool, not the surface name.
//
// Toolsets are safe for concurrent use by many runs at once; per-run state
// lives in the [RunContext] carried by the [context.Context]. A [Tools] set
// belongs to the run it was built for and refuses calls under another
// run's context ([*RunMismatchError]); BuildTools under a done context
// returns the context's error.
//
// User code never takes the process down: a panic of a handler, of
// middleware or of any callback (predicates, prepare and Dynamic functions,
// approval predicates, cache policies, a toolset's own GetTools, Label,
// Instructions or Close) becomes a [*PanicError] naming the kind of
// callback, the tool and the toolset. A filter predicate's error hides the
// tool; its panic fails the turn. An unknown tool name is shown and scored
// cut to a bounded length. A nil toolset, or a nil pointer of a toolset type
// of this package, is an error wherever it is used ("entries[1] is a nil
// *Filtered"); its methods return one too.
//
// Errors say each thing once: this package's "toolset: " begins the
// outermost of its errors only, and a rename collision is a
// [*NameConflictError] like any other conflict.
package toolset
