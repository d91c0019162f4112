package agentfile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/canonjson"
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
	// RoleKey names the run value that entries' Roles are matched
	// against (roleKey); empty means "role", [Role]'s name.
	RoleKey string
	// Toolsets are the agent's toolsets, in the file's order, which is
	// the order of the tools the model is sent. In SAM's shape,
	// spec.tools entries that name a tool of a package come after
	// spec.toolsets, merged into an entry of the same package if there
	// is one (see the package documentation, SAM's documents).
	Toolsets []Entry

	// Skills are the attached skills: SKILL.md bundles uploaded to the
	// platform, which the agent may load. Check checks that each exists
	// when [Options.Skills] is set; nothing here loads them.
	Skills []SkillRef

	// What follows is SAM's and kept as the document gives it; none of
	// it is acted on here, and Parse warns of each one given.

	// Description is the agent's description (the agent card's).
	Description string
	// Type is spec.type ("standard").
	Type string
	// ModelProvider is spec.modelProvider: the model names the agent may
	// be run with ("general").
	ModelProvider []string
	// Deploy is spec.deploy; nil when not given.
	Deploy *bool
	// InputModes and OutputModes are the agent card's content types
	// (spec.inputModes, spec.outputModes).
	InputModes, OutputModes []string
	// Card are the skills the agent card advertises for agent-to-agent
	// discovery (spec.skills entries with an id), not SKILL.md bundles.
	Card []CardSkill

	// Warnings are what the document holds that is kept but not acted
	// on, or spelled in an older way: each with its line, sorted. They
	// never make a load fail. Parse sets them; Check adds none.
	Warnings []Problem
}

// SkillRef names an attached skill, and where the document names it.
type SkillRef struct {
	Name string
	Pos  Position
}

// CardSkill is one skill of an agent card (A2A's AgentSkill): what
// other agents are told the agent can do.
type CardSkill struct {
	// Pos is where the skill begins.
	Pos Position
	// ID identifies the skill; required.
	ID string
	// Name and Description say what it is.
	Name, Description string
	// Tags, Examples, InputModes and OutputModes are A2A's keys of the
	// same names.
	Tags, Examples, InputModes, OutputModes []string
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

	// Only, when not empty, keeps only these tools of the source, named
	// as the source names them (before Rename and Prefix; a package's
	// as <package>__<tool>): what SAM's spec.tools entries of tool_type
	// builtin and mcp with a tool_name ask for.
	Only []string

	// Prefix is put before each tool name, followed by "_" unless the
	// prefix already ends in "_" or "-". Empty: no prefix.
	Prefix string
	// Rename maps the source's tool names (before Prefix) to new ones.
	Rename map[string]string
	// Roles, when not empty, show the toolset only to runs whose role
	// (the string run value named by [File.RoleKey], [Role] by default)
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
	// "tools:TOOL:KEY", "config:KEY", "exclude:TOOL", "only:NAME".
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

// toolOptions are the entry's policies as the library's tool options,
// for the tools of a source that makes them with these options (an MCP
// server's).
func (e *Entry) toolOptions() []toolset.ToolOption { return e.policies().options(nil) }

// policies returns a copy of the entry's policies, which a later change
// of the entry does not reach.
func (e *Entry) policies() policies {
	p := policies{deferred: e.Deferred, timeout: e.Timeout, approval: e.Approval, maxFailures: e.MaxFailures}
	if e.Cache != nil {
		c := *e.Cache
		p.cache = &c
	}
	if r := e.RateLimit; r != nil {
		// One option value for every tool made with these policies, so
		// that a tool made again keeps its window (see toolset.WithOrigin).
		p.rateLimit = toolset.WithRateLimit(toolset.RateLimit{Requests: r.Calls, Interval: r.Per, Burst: r.Burst, Reject: r.Reject})
	}
	return p
}

// policies are an entry's policies.
type policies struct {
	deferred    bool
	timeout     time.Duration
	cache       *Cache
	rateLimit   toolset.ToolOption // nil: none
	approval    bool
	maxFailures int
}

// options are the policies as the library's tool options. For a tool
// offered in front of inner, a tool made elsewhere that its handler
// calls, they step aside where inner's approval would ask a human: the
// approval asks only for the calls inner does not have approved itself
// (a run records one decision for a call, which two askers would each
// take in turn, forever), and the cache neither answers nor keeps a call
// inner has approved, since it stands before inner's approval and would
// otherwise give one run's approved result to any later call.
func (p policies) options(inner *toolset.Tool) []toolset.ToolOption {
	var opts []toolset.ToolOption
	if p.deferred {
		opts = append(opts, toolset.WithDeferred())
	}
	if p.timeout > 0 {
		opts = append(opts, toolset.WithTimeout(p.timeout, toolset.TimeoutTellModel))
	}
	if c := p.cache; c != nil {
		policy := toolset.CachePolicy{Scope: c.Scope, TTL: c.TTL, MaxEntries: c.MaxEntries}
		if inner != nil {
			policy.Key = approvedKey(*inner)
		}
		opts = append(opts, toolset.WithCache(policy))
	}
	if p.rateLimit != nil {
		opts = append(opts, p.rateLimit)
	}
	if p.approval {
		need := always
		if inner != nil {
			need = unlessAsked(*inner)
		}
		opts = append(opts, toolset.WithApprovalRequired(need))
	}
	if p.maxFailures > 0 {
		opts = append(opts, toolset.WithMaxFailures(p.maxFailures))
	}
	return opts
}

// always asks for approval of every call.
func always(context.Context, toolset.Tool, json.RawMessage) (bool, error) { return true, nil }

// unlessAsked asks for approval of the calls inner does not ask for.
func unlessAsked(inner toolset.Tool) toolset.NeedsApprovalFunc {
	return func(ctx context.Context, _ toolset.Tool, args json.RawMessage) (bool, error) {
		asks, err := inner.NeedsApproval(ctx, args)
		return !asks, err
	}
}

// uncached numbers the cache keys that are never looked up again.
var uncached atomic.Uint64

// approvedKey is a cache key function that keys a call by its canonical
// arguments, as the library does, unless inner has the call approved:
// then the key is one of its own, never looked up again, so that the
// cache neither answers it nor keeps its result for another call.
func approvedKey(inner toolset.Tool) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		asks, err := inner.NeedsApproval(ctx, args)
		if err != nil {
			return "", err
		}
		if asks {
			return "\x00approved " + strconv.FormatUint(uncached.Add(1), 10), nil
		}
		key, err := canonjson.Append(nil, args)
		if err != nil {
			return "", err
		}
		return string(key), nil
	}
}

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

// ConfigPosition returns where the file sets the configuration key of a
// package entry: tool "" for a toolset-level value (config:), else a
// value of that tool (tools: or toolsetConfigs' configValues). It is the
// position of the key, and ok is false when the file does not set it
// (or the entry was not made by [Parse]).
func (e *Entry) ConfigPosition(tool, key string) (Position, bool) {
	part := "config:" + key
	if tool != "" {
		part = "tools:" + tool + ":" + key
	}
	p, ok := e.pos[part]
	return p, ok
}
