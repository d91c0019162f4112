package mesh

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultNamespace is the namespace of every subject when none is given.
const DefaultNamespace = "toolset"

// MaxNamespaceBytes bounds a namespace.
const MaxNamespaceBytes = 128

// MaxToolNameBytes bounds a tool name, the provider rule's 64.
const MaxToolNameBytes = 64

// ToolSeparator joins a toolset's name and a tool's: "<toolset>__<tool>".
const ToolSeparator = "__"

// Subjects builds the NATS subjects of one namespace. SAM's topic
// "{ns}/a2a/v1/sam_remote_tool/invoke/{tool}" is the subject
// "{ns}.a2a.v1.sam_remote_tool.invoke.{tool}", and so on. Every name put
// in a subject is checked: a name with a character a subject token cannot
// hold is refused, never mangled.
type Subjects struct {
	ns     string
	remote string // "{ns}.a2a.v1.sam_remote_tool."
}

// NewSubjects returns the subjects of namespace (DefaultNamespace when "").
// A namespace is one or more tokens of [A-Za-z0-9_-] separated by ".".
func NewSubjects(namespace string) (Subjects, error) {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if err := CheckNamespace(namespace); err != nil {
		return Subjects{}, err
	}
	return Subjects{ns: namespace, remote: namespace + ".a2a.v1.sam_remote_tool."}, nil
}

// Namespace returns the namespace.
func (s Subjects) Namespace() string { return s.ns }

// Invoke returns "{ns}.a2a.v1.sam_remote_tool.invoke.{tool}".
func (s Subjects) Invoke(tool string) (string, error) { return s.tool("invoke", tool) }

// InvokeVersion returns "{ns}.a2a.v1.sam_remote_tool.invoke.{tool}.v{N}",
// the extension that pins a call to a package version.
func (s Subjects) InvokeVersion(tool string, version int) (string, error) {
	subj, err := s.tool("invoke", tool)
	if err != nil {
		return "", err
	}
	if version <= 0 {
		return "", fmt.Errorf("mesh: version %d: must be positive", version)
	}
	return subj + ".v" + strconv.Itoa(version), nil
}

// InvokeAll returns the wildcard of every invoke subject.
func (s Subjects) InvokeAll() string { return s.remote + "invoke.>" }

// Init returns "{ns}.a2a.v1.sam_remote_tool.init.{tool}".
func (s Subjects) Init(tool string) (string, error) { return s.tool("init", tool) }

// InitAll returns the wildcard of every init subject.
func (s Subjects) InitAll() string { return s.remote + "init.*" }

// InitRequest returns "{ns}.a2a.v1.sam_remote_tool.init_request.{tool}".
func (s Subjects) InitRequest(tool string) (string, error) { return s.tool("init_request", tool) }

// Removed returns "{ns}.a2a.v1.sam_remote_tool.removed.{tool}".
func (s Subjects) Removed(tool string) (string, error) { return s.tool("removed", tool) }

// RemovedAll returns the wildcard of every removed subject.
func (s Subjects) RemovedAll() string { return s.remote + "removed.*" }

// Response returns "{ns}.a2a.v1.sam_remote_tool.response.{agent}.{corr}".
func (s Subjects) Response(agent, corr string) (string, error) {
	return s.call("response", agent, corr)
}

// ResponseAll returns the wildcard of every response subject of agent.
func (s Subjects) ResponseAll(agent string) (string, error) {
	if err := CheckID("agent", agent); err != nil {
		return "", err
	}
	return s.remote + "response." + agent + ".*", nil
}

// Status returns "{ns}.a2a.v1.sam_remote_tool.status.{agent}.{corr}".
func (s Subjects) Status(agent, corr string) (string, error) {
	return s.call("status", agent, corr)
}

// StatusAll returns the wildcard of every status subject of agent.
func (s Subjects) StatusAll(agent string) (string, error) {
	if err := CheckID("agent", agent); err != nil {
		return "", err
	}
	return s.remote + "status." + agent + ".*", nil
}

// Cancel returns "{ns}.a2a.v1.sam_remote_tool.cancel.{agent}.{corr}", the
// extension on which a caller gives up a call.
func (s Subjects) Cancel(agent, corr string) (string, error) {
	return s.call("cancel", agent, corr)
}

// CancelAll returns the wildcard of every cancel subject.
func (s Subjects) CancelAll() string { return s.remote + "cancel.*.*" }

// Catalog returns "{ns}.a2a.v1.sam_remote_tool.catalog", the extension on
// which every runtime answers with its Catalog.
func (s Subjects) Catalog() string { return s.remote + "catalog" }

// Sync returns "{ns}.toolset.v1.sync", on which the platform announces a
// published or removed package (a SyncNotice).
func (s Subjects) Sync() string { return s.ns + ".toolset.v1.sync" }

// SyncReport returns "{ns}.toolset.v1.sync_report", on which runtimes
// report what they synced (a SyncReport).
func (s Subjects) SyncReport() string { return s.ns + ".toolset.v1.sync_report" }

// SyncReportRequest returns "{ns}.toolset.v1.sync_report_request", on
// which the platform asks every runtime to send its reports again.
func (s Subjects) SyncReportRequest() string { return s.ns + ".toolset.v1.sync_report_request" }

// ParseCall splits a response, status or cancel subject of this namespace
// into its kind ("response", "status" or "cancel"), agent and correlation
// ID; ok is false for any other subject.
func (s Subjects) ParseCall(subject string) (kind, agent, corr string, ok bool) {
	rest, found := strings.CutPrefix(subject, s.remote)
	if !found {
		return "", "", "", false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return "", "", "", false
	}
	switch parts[0] {
	case "response", "status", "cancel":
	default:
		return "", "", "", false
	}
	if CheckID("agent", parts[1]) != nil || CheckID("id", parts[2]) != nil {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// ParseTool returns the tool name of an invoke, init, init_request or
// removed subject of this namespace, and the version of a pinned invoke
// subject (0 otherwise); ok is false for any other subject.
func (s Subjects) ParseTool(subject string) (kind, tool string, version int, ok bool) {
	rest, found := strings.CutPrefix(subject, s.remote)
	if !found {
		return "", "", 0, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return "", "", 0, false
	}
	switch parts[0] {
	case "invoke", "init", "init_request", "removed":
	default:
		return "", "", 0, false
	}
	if CheckToolName(parts[1]) != nil {
		return "", "", 0, false
	}
	if len(parts) == 3 {
		v, err := strconv.Atoi(strings.TrimPrefix(parts[2], "v"))
		if parts[0] != "invoke" || !strings.HasPrefix(parts[2], "v") || err != nil || v <= 0 || strconv.Itoa(v) != parts[2][1:] {
			return "", "", 0, false
		}
		version = v
	}
	return parts[0], parts[1], version, true
}

func (s Subjects) tool(kind, tool string) (string, error) {
	if err := CheckToolName(tool); err != nil {
		return "", err
	}
	return s.remote + kind + "." + tool, nil
}

func (s Subjects) call(kind, agent, corr string) (string, error) {
	if err := CheckID("agent", agent); err != nil {
		return "", err
	}
	if err := CheckID("correlation id", corr); err != nil {
		return "", err
	}
	return s.remote + kind + "." + agent + "." + corr, nil
}

// ToolName returns "<toolset>__<tool>", checked with CheckToolName.
func ToolName(toolset, tool string) (string, error) {
	name := toolset + ToolSeparator + tool
	if err := CheckToolName(name); err != nil {
		return "", err
	}
	return name, nil
}

// SplitToolName splits "<toolset>__<tool>" at its first "__"; ok is false
// when name holds none. A toolset's name never holds "__" (a package's name
// is letters, digits and single separators), so the first one is the join.
func SplitToolName(name string) (toolset, tool string, ok bool) {
	i := strings.Index(name, ToolSeparator)
	if i <= 0 || i+len(ToolSeparator) >= len(name) {
		return "", "", false
	}
	return name[:i], name[i+len(ToolSeparator):], true
}

// CheckToolName reports whether name can name a tool on the wire:
// ^[a-zA-Z0-9_-]{1,64}$, the provider rule, which is also one subject token.
func CheckToolName(name string) error {
	if name == "" {
		return errors.New("mesh: empty tool name")
	}
	if len(name) > MaxToolNameBytes {
		return fmt.Errorf("mesh: tool name %q: longer than %d bytes", cut(name, MaxToolNameBytes), MaxToolNameBytes)
	}
	if i := badTokenByte(name); i >= 0 {
		return fmt.Errorf("mesh: tool name %q: byte %q at %d is not a letter, digit, '_' or '-'", name, name[i], i)
	}
	return nil
}

// CheckID reports whether id (what says which: "agent", "correlation id",
// "runtime") can be one subject token: 1 to MaxIDBytes of [A-Za-z0-9_-].
func CheckID(what, id string) error {
	if id == "" {
		return fmt.Errorf("mesh: empty %s", what)
	}
	if len(id) > MaxIDBytes {
		return fmt.Errorf("mesh: %s %q: longer than %d bytes", what, cut(id, 32)+"...", MaxIDBytes)
	}
	if i := badTokenByte(id); i >= 0 {
		return fmt.Errorf("mesh: %s %q: byte %q at %d is not a letter, digit, '_' or '-'", what, id, id[i], i)
	}
	return nil
}

// CheckNamespace reports whether ns can be a namespace: tokens of
// [A-Za-z0-9_-] separated by ".", at most MaxNamespaceBytes.
func CheckNamespace(ns string) error {
	if ns == "" {
		return errors.New("mesh: empty namespace")
	}
	if len(ns) > MaxNamespaceBytes {
		return fmt.Errorf("mesh: namespace longer than %d bytes", MaxNamespaceBytes)
	}
	for tok := range strings.SplitSeq(ns, ".") {
		if tok == "" {
			return fmt.Errorf("mesh: namespace %q: empty token", ns)
		}
		if i := badTokenByte(tok); i >= 0 {
			return fmt.Errorf("mesh: namespace %q: byte %q is not a letter, digit, '_', '-' or '.'", ns, tok[i])
		}
	}
	return nil
}

// badTokenByte returns the index of the first byte of s outside
// [A-Za-z0-9_-], or -1.
func badTokenByte(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return i
		}
	}
	return -1
}
