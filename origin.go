package toolset

// WithOrigin names where the tool comes from, such as "mcp:<server>" for
// the tools of an MCP server or "toolpkg:<toolset>" for a package's: with
// the name the tool was made with, it makes the tool's identity, which
// outlives the tool value. A tool made again with the same name and
// origin (an MCP server announcing its tools anew after a change, a
// package's toolset rebuilt) is the same tool for the policies that
// count what it did:
//
//   - its failure budget in a run ([WithMaxFailures]) is the one the
//     tools of its identity made before it used, not a fresh one; the
//     run's saved state keys it by the name the tool was offered under
//     and the origin, so that it resumes for a tool whose schema changed
//     since (a tool without an origin resumes its budget only with the
//     same schema);
//   - its rate limit ([WithRateLimit], in the tool's memory) keeps the
//     window of the tools of its identity made with the same option
//     value: make the tools with the same options, and a tool made again
//     does not start a fresh window.
//
// Without an origin, a tool's budget and window belong to the tool value
// and its copies, and a tool made again starts afresh. An empty origin is
// no origin. The origin is never sent to the model.
func WithOrigin(origin string) ToolOption {
	return func(t *Tool) {
		t.core.origin = origin
	}
}

// applyOptions applies opts to t, then settles what depends on several of
// them: the rate window of a tool with an origin.
func applyOptions(t *Tool, opts []ToolOption) {
	for _, o := range opts {
		if o != nil {
			o(t)
		}
	}
	c := t.core
	if c.windows != nil && c.origin != "" {
		c.limiter = c.windows.limiter(c.origin+"\x00"+c.name, c.limiter)
	}
}
