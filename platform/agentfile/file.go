package agentfile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// File is a parsed agent file: what the agent is and where its toolsets
// come from, not yet resolved into toolsets. Parse makes one; its fields
// may be read, and changed before [Check] or [File.Resolve].
type File struct {
	// Filename is the name problems are reported under.
	Filename string
	// Name is the agent's name (name, or metadata.name in the
	// platform's shape).
	Name string
	// Instructions is the agent's system-prompt text, if any.
	Instructions string
	// Toolsets are the agent's toolsets, in the file's order, which is
	// the order of the tools the model is sent.
	Toolsets []Entry
}

// Position is where something is in the file: 1-based line and column.
type Position struct {
	Line, Column int
}

// Entry is one toolset of an agent: exactly one source (Local, MCP or
// Package), then its composition and its policies.
type Entry struct {
	// Pos is where the entry begins.
	Pos Position

	// Local names a Go toolset the program registers in [Options.Local].
	Local string
	// MCP is an MCP server, started as a command or reached by URL.
	MCP *MCP
	// Package is a packaged toolset of a store, with this agent's
	// configuration of it.
	Package *Package

	// Prefix is put before each tool name, followed by "_" unless the
	// prefix already ends in "_" or "-". Empty: no prefix.
	Prefix string
	// Rename maps the source's tool names (before Prefix) to new ones.
	Rename map[string]string
	// Roles, when not empty, show the toolset only to runs whose [Role]
	// is one of them.
	Roles []string
	// Deferred keeps the tools out of the model's list until the agent's
	// tool search finds them.
	Deferred bool

	// Timeout bounds each call (the model is told when it runs out);
	// zero: none.
	Timeout time.Duration
	// Cache keeps successful results; nil: none.
	Cache *Cache
	// RateLimit bounds how often each tool runs; nil: no limit.
	RateLimit *RateLimit
	// Approval makes every call wait for a human's approval.
	Approval bool
	// MaxFailures is each tool's budget of failing steps per run; zero:
	// failures are not counted.
	MaxFailures int

	// pos holds where the entry's parts are, for Check's problems:
	// "local", "package", "prefix", "rename:FROM", "tools:TOOL",
	// "tools:TOOL:KEY", "config:KEY", "exclude:TOOL".
	pos map[string]Position
}

// MCP is an MCP server: Command (with Env) or URL (with Headers).
type MCP struct {
	// Name names the server in labels and errors; default: the
	// command's base name, or the URL's host.
	Name string
	// Command is the server's argv, run with the deployer's environment
	// plus Env, speaking MCP over stdin and stdout.
	Command []string
	// Env are environment variables added for Command; a value may hold
	// ${NAME}, replaced by the deployer's variable when resolved.
	Env map[string]string
	// URL is a streamable-HTTP MCP endpoint (http or https).
	URL string
	// Headers are sent with every request to URL; a value may hold
	// ${NAME}, so that a secret stays out of the file.
	Headers map[string]string
}

// Package is a packaged toolset of a [toolpkg.Store] and this agent's
// configuration of it. Its tools are named <package>__<tool>.
type Package struct {
	// Name is the toolset's name in the store.
	Name string
	// Config is the agent's configuration: toolset-level values, values
	// by tool, excluded tools.
	Config toolpkg.Config
}

// Cache is an entry's result cache: [toolset.WithCache].
type Cache struct {
	// TTL is how long a result stays fresh; zero: until evicted.
	TTL time.Duration
	// Scope is toolset.CacheProcess (the default) or toolset.CacheRun.
	Scope toolset.CacheScope
	// MaxEntries bounds the results kept per scope; zero: the library's
	// default.
	MaxEntries int
}

// RateLimit is an entry's rate limit: [toolset.WithRateLimit], per tool.
type RateLimit struct {
	// Calls are allowed Per interval.
	Calls int
	Per   time.Duration
	// Burst is how many calls may start back to back; zero: Calls.
	Burst int
	// Reject refuses a call over the limit (the model is told when to
	// retry) instead of making it wait.
	Reject bool
}

// Packages returns the names of the packaged toolsets the file uses,
// sorted, each once: what a platform counts to tell whether a package is
// in use.
func (f *File) Packages() []string {
	if f == nil {
		return nil
	}
	var names []string
	for _, e := range f.Toolsets {
		if e.Package != nil && e.Package.Name != "" {
			names = append(names, e.Package.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// position returns where the part key of the entry is, or the entry's
// own position.
func (e *Entry) position(key string) Position {
	if p, ok := e.pos[key]; ok {
		return p
	}
	return e.Pos
}

// hasPolicies says whether the entry sets a policy on its tools.
func (e *Entry) hasPolicies() bool {
	return e.Deferred || e.Timeout > 0 || e.Cache != nil || e.RateLimit != nil || e.Approval || e.MaxFailures > 0
}

// toolOptions are the entry's policies as the library's tool options.
func (e *Entry) toolOptions() []toolset.ToolOption {
	var opts []toolset.ToolOption
	if e.Deferred {
		opts = append(opts, toolset.WithDeferred())
	}
	if e.Timeout > 0 {
		opts = append(opts, toolset.WithTimeout(e.Timeout, toolset.TimeoutTellModel))
	}
	if c := e.Cache; c != nil {
		opts = append(opts, toolset.WithCache(toolset.CachePolicy{Scope: c.Scope, TTL: c.TTL, MaxEntries: c.MaxEntries}))
	}
	if r := e.RateLimit; r != nil {
		opts = append(opts, toolset.WithRateLimit(toolset.RateLimit{Requests: r.Calls, Interval: r.Per, Burst: r.Burst, Reject: r.Reject}))
	}
	if e.Approval {
		opts = append(opts, toolset.WithApprovalRequired(always))
	}
	if e.MaxFailures > 0 {
		opts = append(opts, toolset.WithMaxFailures(e.MaxFailures))
	}
	return opts
}

// always asks for approval of every call.
func always(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return true, nil }

// prefixed returns name under the entry's prefix.
func (e *Entry) prefixed(name string) string {
	if e.Prefix == "" {
		return name
	}
	if strings.HasSuffix(e.Prefix, "_") || strings.HasSuffix(e.Prefix, "-") {
		return e.Prefix + name
	}
	return e.Prefix + "_" + name
}

// maxQuoted bounds a piece of the file quoted in a message.
const maxQuoted = 64

// quote quotes s for a message, cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		return fmt.Sprintf("%q...", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}
