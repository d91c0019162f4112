// Package agentfile declares agents in YAML: an agent's name, its
// instructions and its toolsets, each from a source (a Go toolset the
// program registers, an MCP server, a packaged toolset of a store) with
// the library's composition and policies.
package agentfile
