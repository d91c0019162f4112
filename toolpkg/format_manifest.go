package toolpkg

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ManifestName is the name of the manifest at the root of a package.
const ManifestName = "manifest.yaml"

// maxManifestBytes caps the size of manifest.yaml.
const maxManifestBytes = 1 << 20

// DefaultTimeoutSeconds is the timeout of a tool whose manifest entry and
// discovered schema set none.
const DefaultTimeoutSeconds = 300

// The largest numbers the manifest format accepts, whatever a store
// allows: they keep every limit and timeout far from overflowing. A store
// bounds them further ([Limits.MaxTimeoutSeconds],
// [Limits.MaxResourceLimits]).
const (
	// FormatMaxTimeoutSeconds is the largest timeout_seconds: 30 days.
	FormatMaxTimeoutSeconds = 30 * 24 * 3600
	// FormatMaxLimit is the largest count or number of seconds in
	// resource_limits.
	FormatMaxLimit = 1<<31 - 1
	// FormatMaxLimitMB is the largest size in MB in resource_limits: 1 TB.
	FormatMaxLimitMB = 1 << 20
)

// Runtime says how an executable was built and where it is looked up.
type Runtime string

// The runtimes a manifest may name.
const (
	// RuntimeGo is a static Go binary at the executable's path.
	RuntimeGo Runtime = "go"
	// RuntimePython is a Python script (a pip console script, say) with
	// its dependencies extracted under python/. It runs with the store's
	// Python interpreter, never through its "#!" line.
	RuntimePython Runtime = "python"
)

// A manifest's runtime is a packaging hint: the runtime inspects the file
// itself (see [Executable.Kind]). An entry may leave it out.

// Profile is a sandbox profile: network access and default resource
// limits.
type Profile string

// The sandbox profiles.
const (
	// Restrictive runs the tool with no network (its own network namespace
	// under bwrap) and tight limits.
	Restrictive Profile = "restrictive"
	// Standard shares the host's network; the default.
	Standard Profile = "standard"
	// Permissive shares the network, relaxes the limits and shows the tool
	// more of the host's read-only file system (all of /etc and /opt).
	Permissive Profile = "permissive"
)

// Limits returns the resource limits of the profile, or the zero value for
// an unknown profile.
func (p Profile) Limits() ResourceLimits {
	switch p {
	case Restrictive:
		return ResourceLimits{MaxCPUSeconds: 60, MaxFileSizeMB: 64, MaxOpenFiles: 128, MaxProcesses: 32, MaxStackSizeMB: 8, MaxWriteMB: 128}
	case Standard:
		return ResourceLimits{MaxCPUSeconds: 300, MaxFileSizeMB: 256, MaxOpenFiles: 512, MaxProcesses: 128, MaxStackSizeMB: 16, MaxWriteMB: 512}
	case Permissive:
		return ResourceLimits{MaxCPUSeconds: 600, MaxFileSizeMB: 1024, MaxOpenFiles: 1024, MaxProcesses: 512, MaxStackSizeMB: 32, MaxWriteMB: 2048}
	}
	return ResourceLimits{}
}

// Network reports whether the profile lets a tool use the host's network.
func (p Profile) Network() bool { return p != Restrictive }

// ResourceLimits are the per-process limits a tool runs under. A zero field
// means "the profile's value" in a manifest.
type ResourceLimits struct {
	MaxCPUSeconds  int `json:"max_cpu_seconds,omitempty"`
	MaxFileSizeMB  int `json:"max_file_size_mb,omitempty"`
	MaxOpenFiles   int `json:"max_open_files,omitempty"`
	MaxProcesses   int `json:"max_processes,omitempty"`
	MaxStackSizeMB int `json:"max_stack_size_mb,omitempty"`
	// MaxWriteMB bounds, in bwrap mode, what a tool can write: its work
	// directory and its /tmp are each a tmpfs of this size.
	MaxWriteMB int `json:"max_write_mb,omitempty"`
}

// Within returns l with every field lowered to the field of bound, where
// bound's is set (greater than zero).
func (l ResourceLimits) Within(bound ResourceLimits) ResourceLimits {
	low := func(a, b int) int {
		if b > 0 && (a <= 0 || a > b) {
			return b
		}
		return a
	}
	return l.with(bound, low)
}

// fields lists the limits by their manifest names.
func (l ResourceLimits) fields() []struct {
	name string
	v    int
} {
	return []struct {
		name string
		v    int
	}{
		{"max_cpu_seconds", l.MaxCPUSeconds}, {"max_file_size_mb", l.MaxFileSizeMB},
		{"max_open_files", l.MaxOpenFiles}, {"max_processes", l.MaxProcesses},
		{"max_stack_size_mb", l.MaxStackSizeMB}, {"max_write_mb", l.MaxWriteMB},
	}
}

// Over returns l with every zero field taken from base.
func (l ResourceLimits) Over(base ResourceLimits) ResourceLimits {
	pick := func(a, b int) int {
		if a > 0 {
			return a
		}
		return b
	}
	return l.with(base, pick)
}

// with returns the limits made of f(l's field, o's field), field by field.
func (l ResourceLimits) with(o ResourceLimits, f func(a, b int) int) ResourceLimits {
	return ResourceLimits{
		MaxCPUSeconds:  f(l.MaxCPUSeconds, o.MaxCPUSeconds),
		MaxFileSizeMB:  f(l.MaxFileSizeMB, o.MaxFileSizeMB),
		MaxOpenFiles:   f(l.MaxOpenFiles, o.MaxOpenFiles),
		MaxProcesses:   f(l.MaxProcesses, o.MaxProcesses),
		MaxStackSizeMB: f(l.MaxStackSizeMB, o.MaxStackSizeMB),
		MaxWriteMB:     f(l.MaxWriteMB, o.MaxWriteMB),
	}
}

// Manifest is a parsed and validated manifest.yaml.
type Manifest struct {
	// Version is the manifest format version; only 1 exists (the
	// default).
	Version int
	// Description describes the toolset, for people; the model reads the
	// tools' descriptions from discovery.
	Description string
	// Executables lists the manifest's tools entries in file order.
	Executables []Executable
	// Warnings are what a lenient parse let pass: unknown keys, each
	// naming its field and line. [ParseManifestStrict] reports them as
	// errors.
	Warnings []FieldProblem

	lines map[string]int // the line of each field set, by its path
}

// line returns the line of a field in manifest.yaml, or 0.
func (m *Manifest) line(field string) int { return m.lines[field] }

// Executable is one entry of the manifest's tools map: an executable that
// exposes the tools its --schema output lists.
type Executable struct {
	// Key is the entry's key in the tools map.
	Key string `json:"key"`
	// Runtime is go or python.
	Runtime Runtime `json:"runtime"`
	// Path is the executable's path inside the package, cleaned ("./x"
	// becomes "x").
	Path string `json:"executable"`
	// File is where the executable was found in the package: Path, or for
	// Python perhaps python/bin/<Path>. It is set once the package is in a
	// store.
	File string `json:"file,omitempty"`
	// TimeoutSeconds is the call timeout of its tools, unless their schema
	// sets one (default 300).
	TimeoutSeconds int `json:"timeout_seconds"`
	// Profile is the sandbox profile (default standard).
	Profile Profile `json:"sandbox_profile"`
	// Limits overrides some of the profile's resource limits.
	Limits ResourceLimits `json:"resource_limits"`
	// Description, ToolDir and SchemaRefreshSeconds are documented keys
	// of the format, kept as given: descriptions shown to the model come
	// from discovery, tool_dir is a hint of the platform's packaging
	// tools, and a store discovers again on every upload rather than on
	// a timer.
	Description          string `json:"description,omitempty"`
	ToolDir              string `json:"tool_dir,omitempty"`
	SchemaRefreshSeconds int    `json:"schema_refresh_seconds,omitempty"`
	// Kind is what the file is, found by inspecting it at upload: a
	// native binary for this machine, a Python script, or another
	// script run through its "#!" line. Empty before the package is in
	// a store.
	Kind ExecKind `json:"kind,omitempty"`
}

// Candidates returns the paths inside the package where the executable is
// looked up, in order: its path, then python/bin/<path>, whatever the
// runtime the manifest names.
func (e Executable) Candidates() []string {
	return []string{e.Path, path.Join("python/bin", e.Path)}
}

// EffectiveLimits returns the resource limits the executable runs under:
// its profile's, with the manifest's overrides.
func (e Executable) EffectiveLimits() ResourceLimits {
	return e.Limits.Over(e.Profile.Limits())
}

// FieldProblem is one problem with a manifest field.
type FieldProblem struct {
	// Field is the path of the field, such as "tools.correlator.runtime".
	Field string
	// Line is the field's line in manifest.yaml, or 0 when unknown.
	Line int
	// Message says what is wrong and what is expected.
	Message string
}

// String renders the problem as "field: message (line N)".
func (p FieldProblem) String() string {
	s := p.Message
	if p.Field != "" {
		s = p.Field + ": " + s
	}
	if p.Line > 0 {
		s += fmt.Sprintf(" (line %d)", p.Line)
	}
	return s
}

// ManifestError lists every problem found in a manifest.
type ManifestError struct {
	Problems []FieldProblem
}

// Error implements error.
func (e *ManifestError) Error() string {
	var b strings.Builder
	b.WriteString("toolpkg: invalid " + ManifestName + ":")
	for _, p := range e.Problems {
		b.WriteString("\n  - " + p.String())
	}
	return b.String()
}

var keyPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ParseManifest parses and validates manifest.yaml as the platform's
// documentation writes it: version and runtime may be left out, and an
// unknown key is a warning in [Manifest.Warnings] naming its field and
// line, not an error. Every problem found is reported in one
// *ManifestError, each naming its field (tools.<key>.<field>) and line.
func ParseManifest(data []byte) (*Manifest, error) {
	return parseManifest(data, false)
}

// ParseManifestStrict is [ParseManifest] for authors who want every
// deviation refused: an unknown key is an error, and version and runtime
// are required.
func ParseManifestStrict(data []byte) (*Manifest, error) {
	return parseManifest(data, true)
}

func parseManifest(data []byte, strict bool) (*Manifest, error) {
	p := &manifestParser{strict: strict}
	if len(data) > maxManifestBytes {
		p.add("", 0, "the manifest is %d bytes; at most %d are allowed", len(data), maxManifestBytes)
		return nil, p.err()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.add("", 0, "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, p.err()
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.add("", 0, "the manifest is empty; it needs \"version: 1\" and a \"tools\" map")
		return nil, p.err()
	}
	p.lines = map[string]int{}
	m := p.manifest(resolve(doc.Content[0]))
	if err := p.err(); err != nil {
		return nil, err
	}
	m.lines = p.lines
	m.Warnings = p.warnings
	return m, nil
}

// What a manifest may cost to check, whatever its aliases expand to: a
// map aliased from many places is walked once per use, so a small
// manifest could otherwise make billions of problems.
const (
	// maxManifestNodes bounds the map entries walked, aliases expanded.
	maxManifestNodes = 100000
	// maxManifestProblems bounds the problems reported; the rest are
	// counted.
	maxManifestProblems = 100
	// maxQuoted bounds a value of the manifest quoted in a problem.
	maxQuoted = 64
)

type manifestParser struct {
	strict   bool
	warnings []FieldProblem
	problems []FieldProblem
	dropped  int // problems beyond maxManifestProblems
	nodes    int // map entries walked
	lines    map[string]int
}

func (p *manifestParser) add(field string, line int, format string, args ...any) {
	if len(p.problems) >= maxManifestProblems {
		p.dropped++
		return
	}
	p.problems = append(p.problems, FieldProblem{Field: field, Line: line, Message: fmt.Sprintf(format, args...)})
}

// tooBig reports, once, whether the walk went over maxManifestNodes map
// entries; the walk then stops.
func (p *manifestParser) tooBig() bool {
	p.nodes++
	if p.nodes == maxManifestNodes+1 {
		p.add("", 0, "the manifest has more than %d map entries (YAML aliases counted at each use); checking stopped", maxManifestNodes)
	}
	return p.nodes > maxManifestNodes
}

// err returns the problems in the order of their lines; problems of
// missing fields, which have no line, come last.
func (p *manifestParser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	line := func(i int) int {
		if l := p.problems[i].Line; l > 0 {
			return l
		}
		return math.MaxInt
	}
	sort.SliceStable(p.problems, func(i, j int) bool { return line(i) < line(j) })
	if p.dropped > 0 {
		p.problems = append(p.problems, FieldProblem{Message: fmt.Sprintf("and %d more problems", p.dropped)})
	}
	return &ManifestError{Problems: p.problems}
}

// resolve follows YAML aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// mapping returns the key and value nodes of a mapping, reporting duplicate
// and unknown keys. allowed nil accepts any key.
func (p *manifestParser) mapping(field string, n *yaml.Node, allowed []string) ([]*yaml.Node, []*yaml.Node, bool) {
	if n.Kind != yaml.MappingNode {
		p.add(field, n.Line, "expected a map, got %s", nodeKind(n))
		return nil, nil, false
	}
	seen := map[string]bool{}
	var keys, vals []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if p.tooBig() {
			return keys, vals, false
		}
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.add(field, k.Line, "expected a plain key, got %s", nodeKind(k))
			continue
		}
		sub := joinField(field, k.Value)
		if seen[k.Value] {
			p.add(sub, k.Line, "duplicate key")
			continue
		}
		seen[k.Value] = true
		if allowed != nil && !contains(allowed, k.Value) {
			if p.strict {
				p.add(sub, k.Line, "unknown field; allowed fields: %s", strings.Join(allowed, ", "))
			} else if len(p.warnings) < maxManifestProblems {
				p.warnings = append(p.warnings, FieldProblem{Field: sub, Line: k.Line,
					Message: "unknown field, ignored; known fields: " + strings.Join(allowed, ", ")})
			}
			continue
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	return keys, vals, true
}

func (p *manifestParser) manifest(root *yaml.Node) *Manifest {
	m := &Manifest{}
	keys, vals, ok := p.mapping("", root, []string{"version", "description", "tools"})
	if !ok {
		return m
	}
	m.Version = 1
	var toolsNode *yaml.Node
	haveVersion := false
	for i, k := range keys {
		switch k.Value {
		case "version":
			haveVersion = true
			if v, ok := p.integer("version", vals[i]); ok {
				if v != 1 {
					p.add("version", vals[i].Line, "unsupported version %d; only version 1 exists", v)
				}
				m.Version = v
			}
		case "description":
			if s, ok := p.text("description", vals[i]); ok {
				m.Description = s
			}
		case "tools":
			toolsNode = vals[i]
		}
	}
	if !haveVersion && p.strict {
		p.add("version", 0, "required; set \"version: 1\"")
	}
	if toolsNode == nil {
		p.add("tools", 0, "required: a map from a key to an executable entry")
		return m
	}
	tkeys, tvals, ok := p.mapping("tools", toolsNode, nil)
	if !ok {
		return m
	}
	if len(tkeys) == 0 {
		p.add("tools", toolsNode.Line, "no tools; declare at least one executable")
	}
	paths := map[string]string{}
	for i, k := range tkeys {
		field := joinField("tools", k.Value)
		if !keyPattern.MatchString(k.Value) {
			p.add(field, k.Line, "invalid key; keys must match ^[a-zA-Z0-9_-]{1,64}$")
		}
		e := p.executable(field, k.Value, tvals[i])
		if e.Path != "" {
			if other, dup := paths[e.Path]; dup {
				p.add(joinField(field, "executable"), tvals[i].Line, "%s is also the executable of tools.%s", quoteShort(e.Path), joinField("", other))
			}
			paths[e.Path] = k.Value
		}
		m.Executables = append(m.Executables, e)
	}
	return m
}

var toolFields = []string{"runtime", "executable", "timeout_seconds", "sandbox_profile", "resource_limits",
	"description", "tool_dir", "schema_refresh_seconds"}

var limitFields = []string{"max_cpu_seconds", "max_file_size_mb", "max_open_files", "max_processes", "max_stack_size_mb", "max_write_mb"}

func (p *manifestParser) executable(field, key string, n *yaml.Node) Executable {
	e := Executable{Key: key, TimeoutSeconds: DefaultTimeoutSeconds, Profile: Standard}
	keys, vals, ok := p.mapping(field, n, toolFields)
	if !ok {
		return e
	}
	set := map[string]bool{}
	for i, k := range keys {
		f := joinField(field, k.Value)
		v := vals[i]
		set[k.Value] = true
		switch k.Value {
		case "runtime":
			if s, ok := p.str(f, v); ok {
				switch Runtime(s) {
				case RuntimeGo, RuntimePython:
					e.Runtime = Runtime(s)
				default:
					p.add(f, v.Line, "unknown runtime %s; use go or python", quoteShort(s))
				}
			}
		case "executable":
			if s, ok := p.str(f, v); ok {
				clean, msg := cleanPackagePath(s)
				if msg != "" {
					p.add(f, v.Line, "%s: %s", quoteShort(s), msg)
				} else {
					e.Path = clean
				}
			}
		case "timeout_seconds":
			if t, ok := p.integer(f, v); ok {
				switch {
				case t <= 0:
					p.add(f, v.Line, "must be a positive number of seconds, got %d", t)
				case t > FormatMaxTimeoutSeconds:
					p.add(f, v.Line, "must be at most %d seconds (30 days), got %d", FormatMaxTimeoutSeconds, t)
				default:
					e.TimeoutSeconds = t
					p.lines[f] = v.Line
				}
			}
		case "sandbox_profile":
			if s, ok := p.str(f, v); ok {
				switch Profile(s) {
				case Restrictive, Standard, Permissive:
					e.Profile = Profile(s)
				default:
					p.add(f, v.Line, "unknown sandbox profile %s; use restrictive, standard or permissive", quoteShort(s))
				}
			}
		case "resource_limits":
			e.Limits = p.limits(f, v)
		case "description":
			if s, ok := p.text(f, v); ok {
				e.Description = s
			}
		case "tool_dir":
			if s, ok := p.str(f, v); ok {
				clean, msg := cleanPackagePath(s)
				if msg != "" {
					p.add(f, v.Line, "%s: %s", quoteShort(s), msg)
				} else {
					e.ToolDir = clean
				}
			}
		case "schema_refresh_seconds":
			if t, ok := p.integer(f, v); ok {
				if t <= 0 || t > FormatMaxTimeoutSeconds {
					p.add(f, v.Line, "must be a positive number of seconds, at most %d, got %d", FormatMaxTimeoutSeconds, t)
				} else {
					e.SchemaRefreshSeconds = t
				}
			}
		}
	}
	if !set["runtime"] && p.strict {
		p.add(joinField(field, "runtime"), n.Line, "required: go or python")
	}
	if !set["executable"] {
		p.add(joinField(field, "executable"), n.Line, "required: the executable's path inside the package")
	}
	return e
}

func (p *manifestParser) limits(field string, n *yaml.Node) ResourceLimits {
	var l ResourceLimits
	keys, vals, ok := p.mapping(field, n, limitFields)
	if !ok {
		return l
	}
	for i, k := range keys {
		f := joinField(field, k.Value)
		v, ok := p.integer(f, vals[i])
		if !ok {
			continue
		}
		if v <= 0 {
			p.add(f, vals[i].Line, "must be a positive integer, got %d", v)
			continue
		}
		ceiling := FormatMaxLimit
		if strings.HasSuffix(k.Value, "_mb") {
			ceiling = FormatMaxLimitMB
		}
		if v > ceiling {
			p.add(f, vals[i].Line, "must be at most %d, got %d", ceiling, v)
			continue
		}
		p.lines[f] = vals[i].Line
		switch k.Value {
		case "max_cpu_seconds":
			l.MaxCPUSeconds = v
		case "max_file_size_mb":
			l.MaxFileSizeMB = v
		case "max_open_files":
			l.MaxOpenFiles = v
		case "max_processes":
			l.MaxProcesses = v
		case "max_stack_size_mb":
			l.MaxStackSizeMB = v
		case "max_write_mb":
			l.MaxWriteMB = v
		}
	}
	return l
}

// maxManifestDescription bounds a description in the manifest.
const maxManifestDescription = 4096

// text reads a description: a string, possibly empty, bounded.
func (p *manifestParser) text(field string, n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.add(field, n.Line, "expected a string, got %s", nodeKind(n))
		return "", false
	}
	if len(n.Value) > maxManifestDescription {
		p.add(field, n.Line, "is %d bytes; at most %d are allowed", len(n.Value), maxManifestDescription)
		return "", false
	}
	return n.Value, true
}

func (p *manifestParser) str(field string, n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.add(field, n.Line, "expected a string, got %s", nodeKind(n))
		return "", false
	}
	if n.Value == "" {
		p.add(field, n.Line, "must not be empty")
		return "", false
	}
	return n.Value, true
}

var digits = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

func (p *manifestParser) integer(field string, n *yaml.Node) (int, bool) {
	var v int
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" && digits.MatchString(n.Value) {
		// YAML reads an integer too large for 64 bits as a float.
		p.add(field, n.Line, "the integer %.40s is out of range", n.Value)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.add(field, n.Line, "expected an integer, got %s", nodeKind(n))
		return 0, false
	}
	if n.Decode(&v) != nil {
		p.add(field, n.Line, "the integer %.40s is out of range", n.Value)
		return 0, false
	}
	return v, true
}

// nodeKind words what a node is, for error messages.
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return "the string " + quoteShort(n.Value)
		case "!!null":
			return "nothing (null)"
		case "!!int", "!!float", "!!bool":
			return fmt.Sprintf("%s %s", strings.TrimPrefix(n.Tag, "!!"), strings.Trim(quoteShort(n.Value), `"`))
		}
		return quoteShort(n.Value)
	}
	return "an unsupported YAML node"
}

// joinField returns the path of a field, its name shortened: a key of
// the manifest can be long.
func joinField(parent, name string) string {
	if len(name) > maxQuoted {
		name = strings.ToValidUTF8(name[:maxQuoted], "") + "..."
	}
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// quoteShort quotes s for a problem, cut to maxQuoted bytes.
func quoteShort(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.ToValidUTF8(s[:maxQuoted], "")) + "..."
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// errEscapes is the message for paths that leave the package.
var errEscapes = errors.New("escapes the package")

// cleanPackagePath checks a path inside a package (an executable's path
// from the manifest, or a zip entry's name) and returns it cleaned, or a
// message saying what is wrong with it.
func cleanPackagePath(p string) (string, string) {
	switch {
	case p == "":
		return "", "empty path"
	case strings.ContainsRune(p, 0):
		return "", "contains a NUL byte"
	case strings.Contains(p, `\`):
		return "", `contains a backslash; use "/" as the separator`
	case strings.HasPrefix(p, "/"):
		return "", "absolute path " + errEscapes.Error()
	case len(p) >= 2 && p[1] == ':' && (p[0]|0x20) >= 'a' && (p[0]|0x20) <= 'z':
		return "", "a drive letter " + errEscapes.Error()
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", `".." ` + errEscapes.Error()
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return "", "names the package root, not a file"
	}
	return clean, ""
}
