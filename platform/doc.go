// Package platform serves the toolset platform: an HTTP service through
// which teams upload packaged toolsets (see package toolpkg), watch their
// discovery, configure them and attach them to agents.
//
// # Authentication
//
// Every request must carry a bearer token ([RequireToken]); [LoadToken]
// reads it from a file or the TOOLSET_PLATFORM_TOKEN environment variable.
// Errors are JSON: {"error": {"code", "message"}} ([WriteError]).
package platform
