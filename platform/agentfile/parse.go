package agentfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// What an agent file may hold. Parsing costs at most a walk of MaxNodes
// nodes, however the file's YAML aliases repeat them.
const (
	// MaxFileBytes bounds the size of an agent file.
	MaxFileBytes = 1 << 20
	// MaxNodes bounds the YAML nodes walked, aliases counted at each use.
	MaxNodes = 100_000
	// MaxToolsets bounds the toolsets of an agent.
	MaxToolsets = 256
	// MaxDepth bounds the nesting of configuration values.
	MaxDepth = 32
	// MaxItems bounds the entries of any one list or map of the file.
	MaxItems = 1000

	maxString       = 4096
	maxInstructions = 64 << 10
	maxNameBytes    = 128
)

var (
	toolNameRE  = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	prefixRE    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,62}$`)
	localNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)
	envNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerRE    = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
	yamlLineRE  = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// Parse reads an agent file: its YAML syntax and its shape, every key
// known, every value of the right type and within bounds. It returns all
// the problems at once as a *CheckError, each with its line and column
// under filename. Parse only reads data: it starts no process and opens
// no file or connection, so it is safe on untrusted input.
func Parse(data []byte, filename string) (*File, error) {
	p := &parser{problems: problems{file: filename}}
	var f *File
	if root := p.root(data, "an agent file", "a name"); root != nil {
		f = p.file(root)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	f.Filename = filename
	f.Warnings = p.warningList()
	return f, nil
}

// parser walks one file's YAML nodes.
type parser struct {
	problems
	nodes   int
	stopped bool
}

// root bounds and decodes data, one YAML document, and returns its root
// node, or nil with the problems added. what names the file in messages
// ("an agent file"), least what it needs at least.
func (p *parser) root(data []byte, what, least string) *yaml.Node {
	if len(data) > MaxFileBytes {
		p.add(Position{}, "the file is %d bytes; %s may have at most %d", len(data), what, MaxFileBytes)
		return nil
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		p.add(invalidUTF8(data), "the file is not valid UTF-8 text")
		return nil
	}
	if at, over := tooManyTokens(data); over {
		p.add(at, "the file has more than %d YAML tokens (names, values and punctuation); reading stopped", maxTokens)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add(Position{}, "the file is empty; %s needs at least %s", what, least)
		} else {
			p.yamlError(err)
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		p.add(Position{Line: next.Line, Column: next.Column}, "a second YAML document; %s holds one", what)
		return nil
	case !errors.Is(err, io.EOF):
		p.yamlError(err)
		return nil
	}
	if len(doc.Content) == 0 {
		p.add(Position{}, "the file is empty; %s needs at least %s", what, least)
		return nil
	}
	return p.resolve(doc.Content[0])
}

// maxTokens bounds the YAML tokens of a file, counted before the YAML
// library reads it: the tree it builds holds a node for about each token
// (a few hundred bytes), all made before MaxNodes is counted, so a file
// of a mebibyte of "[a,a,a,..." would otherwise cost a hundred megabytes
// and most of a second. A file as big as an agent file is likely to be
// (long instructions, hundreds of toolsets) has a few thousand.
const maxTokens = 50_000

// yamlIndicators are the bytes that are a YAML token, or begin one, by
// themselves.
const yamlIndicators = "-?:,[]{}#&*!|>'\"%@`"

// tooManyTokens counts, from above, the YAML tokens of data: each
// indicator byte and each run of other bytes between blanks and
// indicators. It reports where the count passes maxTokens.
func tooManyTokens(data []byte) (Position, bool) {
	n, line, inWord := 0, 1, false
	for _, c := range data {
		switch {
		case c == '\n':
			line++
			inWord = false
			continue
		case c == ' ' || c == '\t' || c == '\r':
			inWord = false
			continue
		case strings.IndexByte(yamlIndicators, c) >= 0:
			inWord = false
		case inWord:
			continue
		default:
			inWord = true
		}
		if n++; n > maxTokens {
			return Position{Line: line}, true
		}
	}
	return Position{}, false
}

// invalidUTF8 returns the position of the first byte of data that is not
// UTF-8.
func invalidUTF8(data []byte) Position {
	pos := Position{Line: 1, Column: 1}
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n <= 1 {
			return pos
		}
		if r == '\n' {
			pos.Line, pos.Column = pos.Line+1, 1
		} else {
			pos.Column++
		}
		data = data[n:]
	}
	return pos
}

// yamlError reports a syntax error of the YAML library.
func (p *parser) yamlError(err error) {
	msg := err.Error()
	pos := Position{}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			pos.Line = n
		}
		msg = m[2]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	p.add(pos, "not valid YAML: %s", msg)
}

// tick counts a node walked; past MaxNodes the walk stops, with one
// problem.
func (p *parser) tick(n *yaml.Node) bool {
	if p.stopped {
		return false
	}
	p.nodes++
	if p.nodes > MaxNodes {
		p.stopped = true
		p.add(pos(n), "the file has more than %d YAML nodes (aliases counted at each use); reading stopped", MaxNodes)
		return false
	}
	return true
}

func pos(n *yaml.Node) Position { return Position{Line: n.Line, Column: n.Column} }

// resolve follows aliases.
func (p *parser) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	return n
}

// kind describes a node for messages.
func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return "a string"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "nothing"
		}
		return "a " + tagName(n.Tag)
	}
	return "an alias"
}

// tagName names a YAML tag for a message: a standard one by its name
// ("binary"), any other quoted and cut short, since a file's own tags
// may be long and decode to any bytes.
func tagName(tag string) string {
	if name, ok := strings.CutPrefix(tag, "!!"); ok && len(name) <= 16 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz") == "" {
		return name
	}
	return "value tagged " + quote(tag)
}

// field is one key of a mapping and its value.
type field struct {
	key  string
	kpos Position
	val  *yaml.Node
}

// mapping returns the fields of a map node in order, reporting a node
// that is not a map, keys that are not strings, duplicates, and (when
// allowed is not nil) unknown keys. what names the map in messages.
func (p *parser) mapping(n *yaml.Node, what string, allowed []string) []field {
	return p.mappingWith(n, what, allowed, nil)
}

// mappingWith is mapping that also takes the keys of older, which the
// problem of an unknown key does not list: older spellings still read.
func (p *parser) mappingWith(n *yaml.Node, what string, allowed, older []string) []field {
	if n.Kind != yaml.MappingNode {
		p.add(pos(n), "%s must be a map, not %s", what, kind(n))
		return nil
	}
	if len(n.Content)/2 > MaxItems {
		p.add(pos(n), "%s has %d entries; at most %d are allowed", what, len(n.Content)/2, MaxItems)
		return nil
	}
	var out []field
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := p.resolve(n.Content[i]), p.resolve(n.Content[i+1])
		if !p.tick(k) {
			return out
		}
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			if k.Tag == "!!merge" {
				p.add(pos(k), "merge keys (<<) are not supported; write the keys out")
				continue
			}
			p.add(pos(k), "a key of %s must be a string, not %s", what, kind(k))
			continue
		}
		if seen[k.Value] {
			p.add(pos(k), "duplicate key %s in %s", quote(k.Value), what)
			continue
		}
		seen[k.Value] = true
		if allowed != nil && !contains(allowed, k.Value) && !contains(older, k.Value) {
			p.add(pos(k), "unknown key %s in %s; known keys: %s", quote(k.Value), what, strings.Join(allowed, ", "))
			continue
		}
		out = append(out, field{key: k.Value, kpos: pos(k), val: v})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// str returns a string value of at most max bytes.
func (p *parser) str(n *yaml.Node, what string, max int) (string, bool) {
	if !p.tick(n) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.add(pos(n), "%s must be a string, not %s", what, kind(n))
		return "", false
	}
	if len(n.Value) > max {
		p.add(pos(n), "%s is %d bytes long; at most %d are allowed", what, len(n.Value), max)
		return "", false
	}
	if strings.IndexByte(n.Value, 0) >= 0 {
		p.add(pos(n), "%s holds a NUL byte", what)
		return "", false
	}
	return n.Value, true
}

// name returns a one-line string without control characters: a name.
func (p *parser) name(n *yaml.Node, what string) (string, bool) {
	s, ok := p.str(n, what, maxNameBytes)
	if !ok {
		return "", false
	}
	if s == "" {
		p.add(pos(n), "%s is empty", what)
		return "", false
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		p.add(pos(n), "%s %s holds a control character", what, quote(s))
		return "", false
	}
	return s, true
}

// boolean returns a boolean value.
func (p *parser) boolean(n *yaml.Node, what string) (bool, bool) {
	if !p.tick(n) {
		return false, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		p.add(pos(n), "%s must be true or false, not %s", what, kind(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		p.add(pos(n), "%s must be true or false", what)
		return false, false
	}
	return b, true
}

// integer returns an integer value in [lo, hi].
func (p *parser) integer(n *yaml.Node, what string, lo, hi int) (int, bool) {
	if !p.tick(n) {
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.add(pos(n), "%s must be a whole number, not %s", what, kind(n))
		return 0, false
	}
	var i int64
	if err := n.Decode(&i); err != nil || i < int64(lo) || i > int64(hi) {
		p.add(pos(n), "%s must be from %d to %d, not %s", what, lo, hi, quote(n.Value))
		return 0, false
	}
	return int(i), true
}

// duration returns a duration such as "30s" in [lo, hi].
func (p *parser) duration(n *yaml.Node, what string, lo, hi time.Duration) (time.Duration, bool) {
	if !p.tick(n) {
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.add(pos(n), "%s must be a duration such as \"30s\" or \"5m\", not %s", what, kind(n))
		return 0, false
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		p.add(pos(n), "%s must be a duration such as \"30s\" or \"5m\", not %s", what, quote(n.Value))
		return 0, false
	}
	if d < lo || d > hi {
		p.add(pos(n), "%s must be from %v to %v, not %v", what, lo, hi, d)
		return 0, false
	}
	return d, true
}

// strList returns a list of strings, each checked by item.
func (p *parser) strList(n *yaml.Node, what string, item func(*yaml.Node) (string, bool)) ([]string, []Position, bool) {
	if n.Kind != yaml.SequenceNode {
		p.add(pos(n), "%s must be a list, not %s", what, kind(n))
		return nil, nil, false
	}
	if len(n.Content) > MaxItems {
		p.add(pos(n), "%s has %d items; at most %d are allowed", what, len(n.Content), MaxItems)
		return nil, nil, false
	}
	out := make([]string, 0, len(n.Content))
	var at []Position
	ok := true
	for _, c := range n.Content {
		c = p.resolve(c)
		s, good := item(c)
		if !good {
			ok = false
			if p.stopped {
				break
			}
			continue
		}
		out, at = append(out, s), append(at, pos(c))
	}
	return out, at, ok
}

// Keys of the project's own format.
var (
	nativeKeys = []string{"name", "instructions", "roleKey", "toolsets", "toolsetConfigs", "skills"}
	entryKeys  = []string{"local", "mcp", "package", "prefix", "rename", "roles", "deferred",
		"timeout", "cache", "rateLimit", "approval", "maxFailures", "config", "tools", "exclude"}
	mcpKeys      = []string{"name", "command", "env", "url", "headers"}
	cacheKeys    = []string{"ttl", "scope", "maxEntries"}
	rateKeys     = []string{"calls", "per", "burst", "reject"}
	tsConfigKeys = []string{"toolset", "configValues", "excludedTools"}
)

// file reads an agent document: SAM's shape (kind: agent, spec) or the
// project's own format.
func (p *parser) file(root *yaml.Node) *File {
	f := &File{}
	if root.Kind != yaml.MappingNode {
		p.add(pos(root), "an agent file must be a map (name, instructions, toolsets), not %s", kind(root))
		return f
	}
	if samShape(root) {
		p.agentDoc(root, f, "the agent document")
		return f
	}
	var configs []*yaml.Node
	named := false
	for _, fl := range p.mapping(root, "the agent file", nativeKeys) {
		switch fl.key {
		case "name":
			if s, ok := p.name(fl.val, "the agent's name"); ok {
				f.Name, named = s, true
			}
		case "instructions":
			f.Instructions, _ = p.str(fl.val, "instructions", maxInstructions)
		case "roleKey":
			f.RoleKey, _ = p.name(fl.val, "roleKey")
		case "toolsets":
			f.Toolsets = p.toolsets(fl.val)
		case "toolsetConfigs":
			configs = append(configs, fl.val)
		case "skills":
			p.skills(fl, f)
		}
	}
	if !named && !p.stopped && len(p.list) == 0 {
		p.add(pos(root), "the agent has no name; give it name: NAME")
	}
	for _, c := range configs {
		p.toolsetConfigs(f, c)
	}
	return f
}

// toolsets reads the list of toolsets.
func (p *parser) toolsets(n *yaml.Node) []Entry {
	if n.Kind != yaml.SequenceNode {
		p.add(pos(n), "toolsets must be a list, not %s", kind(n))
		return nil
	}
	if len(n.Content) > MaxToolsets {
		p.add(pos(n), "the agent has %d toolsets; at most %d are allowed", len(n.Content), MaxToolsets)
		return nil
	}
	out := make([]Entry, 0, len(n.Content))
	for _, c := range n.Content {
		c = p.resolve(c)
		if !p.tick(c) {
			break
		}
		if c.Kind == yaml.ScalarNode {
			if c.Tag == "!!str" && isBuiltinGroup(c.Value) {
				if name, ok := p.name(c, "a toolset's name"); ok {
					p.warnBuiltinGroup(pos(c), name)
				}
				continue
			}
			// SAM's shape: a package by name.
			if name, ok := p.packageName(c); ok {
				out = append(out, Entry{Pos: pos(c), Package: &Package{Name: name},
					pos: map[string]Position{"package": pos(c)}})
			}
			continue
		}
		if e, ok := p.entry(c); ok {
			out = append(out, e)
		}
	}
	return out
}

func (p *parser) packageName(n *yaml.Node) (string, bool) {
	s, ok := p.name(n, "a package name")
	if !ok {
		return "", false
	}
	if err := toolpkg.CheckName(s); err != nil {
		p.add(pos(n), "package name %s is not valid: %s", quote(s), strings.TrimPrefix(err.Error(), "toolpkg: "))
		return "", false
	}
	return s, true
}

// entry reads one toolset.
func (p *parser) entry(n *yaml.Node) (Entry, bool) {
	e := Entry{Pos: pos(n), pos: map[string]Position{}}
	fields := p.mapping(n, "a toolset", entryKeys)
	if n.Kind != yaml.MappingNode {
		return e, false
	}
	before := len(p.list) + p.dropped
	var sources []field
	var pkgOnly []field
	var cfg toolpkg.Config
	for _, fl := range fields {
		e.pos[fl.key] = fl.kpos
		switch fl.key {
		case "local":
			sources = append(sources, fl)
			if s, ok := p.name(fl.val, "a local toolset's name"); ok {
				if !localNameRE.MatchString(s) {
					p.add(pos(fl.val), "local toolset name %s may hold only letters, digits, '.', '_' and '-'", quote(s))
				} else {
					e.Local = s
					e.pos["local"] = pos(fl.val)
				}
			}
		case "package":
			sources = append(sources, fl)
			if s, ok := p.packageName(fl.val); ok {
				e.Package = &Package{Name: s}
				e.pos["package"] = pos(fl.val)
			}
		case "mcp":
			sources = append(sources, fl)
			e.MCP = p.mcp(fl.val)
		case "prefix":
			if s, ok := p.str(fl.val, "prefix", maxString); ok {
				if !prefixRE.MatchString(s) {
					p.add(pos(fl.val), "prefix %s must be 1 to 62 letters, digits, '_' or '-'", quote(s))
				} else {
					e.Prefix = s
					e.pos["prefix"] = pos(fl.val)
				}
			}
		case "rename":
			e.Rename = p.rename(fl.val, e.pos)
		case "roles":
			roles, _, ok := p.strList(fl.val, "roles", func(c *yaml.Node) (string, bool) { return p.name(c, "a role") })
			if ok && len(roles) == 0 {
				p.add(pos(fl.val), "roles is empty, which would show the toolset to no run; leave roles out to show it to every run")
			}
			e.Roles = roles
		case "deferred":
			e.Deferred, _ = p.boolean(fl.val, "deferred")
		case "approval":
			e.Approval, _ = p.boolean(fl.val, "approval")
		case "timeout":
			e.Timeout, _ = p.duration(fl.val, "timeout", time.Millisecond, 24*time.Hour)
		case "maxFailures":
			e.MaxFailures, _ = p.integer(fl.val, "maxFailures", 1, 1000)
		case "cache":
			e.Cache = p.cache(fl.val)
		case "rateLimit":
			e.RateLimit = p.rateLimit(fl.val)
		case "config":
			pkgOnly = append(pkgOnly, fl)
			cfg.Toolset = p.values(fl.val, "config", "config:", e.pos)
		case "tools":
			pkgOnly = append(pkgOnly, fl)
			cfg.Tools = p.toolValues(fl.val, "tools", e.pos)
		case "exclude":
			pkgOnly = append(pkgOnly, fl)
			cfg.Exclude = p.exclude(fl.val, e.pos)
		}
	}
	switch {
	case len(sources) == 0:
		p.add(e.Pos, "a toolset needs a source: one of local, mcp or package")
	case len(sources) > 1:
		p.add(sources[1].kpos, "a toolset has one source; this one has both %s and %s", sources[0].key, sources[1].key)
	case sources[0].key != "package":
		for _, fl := range pkgOnly {
			p.add(fl.kpos, "%s configures a package; this toolset's source is %s", fl.key, sources[0].key)
		}
	}
	if e.Package != nil {
		e.Package.Config = cfg
	}
	return e, len(p.list)+p.dropped == before
}

// mcp reads an MCP server.
func (p *parser) mcp(n *yaml.Node) *MCP {
	m := &MCP{}
	fields := p.mapping(n, "mcp", mcpKeys)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	var env, headers *field
	for i, fl := range fields {
		switch fl.key {
		case "name":
			if s, ok := p.name(fl.val, "mcp.name"); ok {
				m.Name = s
			}
		case "command":
			argv, _, ok := p.strList(fl.val, "mcp.command", func(c *yaml.Node) (string, bool) {
				return p.str(c, "an argument of mcp.command", maxString)
			})
			if ok && (len(argv) == 0 || argv[0] == "") {
				p.add(pos(fl.val), "mcp.command needs a program: command: [PROGRAM, ARG...]")
			} else if ok && len(argv) > 256 {
				p.add(pos(fl.val), "mcp.command has %d arguments; at most 256 are allowed", len(argv))
			} else if ok {
				m.Command = argv
			}
		case "url":
			if s, ok := p.str(fl.val, "mcp.url", 2048); ok {
				if msg := checkURL(s); msg != "" {
					p.add(pos(fl.val), "mcp.url %s %s", quote(s), msg)
				} else {
					m.URL = s
				}
			}
		case "env":
			env = &fields[i]
			m.Env = p.envMap(fl.val, "mcp.env")
		case "headers":
			headers = &fields[i]
			m.Headers = p.headerMap(fl.val, "mcp.headers")
		}
	}
	hasCmd, hasURL := contains(keysOf(fields), "command"), contains(keysOf(fields), "url")
	switch {
	case hasCmd && hasURL:
		p.add(pos(n), "mcp has both command and url; give one")
	case !hasCmd && !hasURL:
		p.add(pos(n), "mcp needs command: [PROGRAM, ARG...] or url: URL")
	case env != nil && !hasCmd:
		p.add(env.kpos, "mcp.env is for a command; this server has a url (use headers)")
	case headers != nil && !hasURL:
		p.add(headers.kpos, "mcp.headers are for a url; this server is a command (use env)")
	}
	return m
}

// envMap reads environment variables for an MCP server's command: names
// of variables, values that may hold ${NAME}.
func (p *parser) envMap(n *yaml.Node, what string) map[string]string {
	return p.strMap(n, what, func(k Position, key string) bool {
		if !envNameRE.MatchString(key) {
			p.add(k, "%s: %s is not an environment variable name", what, quote(key))
			return false
		}
		return true
	}, func(v *yaml.Node) (string, bool) { return p.expandable(v, "a value of "+what) })
}

// headerMap reads HTTP headers for an MCP server's url: names of
// headers, one-line values that may hold ${NAME}.
func (p *parser) headerMap(n *yaml.Node, what string) map[string]string {
	return p.strMap(n, what, func(k Position, key string) bool {
		if !headerRE.MatchString(key) {
			p.add(k, "%s: %s is not an HTTP header name", what, quote(key))
			return false
		}
		return true
	}, func(v *yaml.Node) (string, bool) {
		s, ok := p.expandable(v, "a value of "+what)
		if ok && strings.ContainsAny(s, "\r\n") {
			p.add(pos(v), "a value of %s holds a line break", what)
			return "", false
		}
		return s, ok
	})
}

func keysOf(fields []field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.key
	}
	return out
}

// checkURL says what is wrong with an MCP endpoint, or "".
func checkURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http or https URL"
	case u.Host == "":
		return "has no host"
	case u.User != nil:
		return "holds credentials; send them in headers, from the environment with ${NAME}"
	}
	return ""
}

// expandable reads a string that may hold ${NAME} references.
func (p *parser) expandable(n *yaml.Node, what string) (string, bool) {
	s, ok := p.str(n, what, maxString)
	if !ok {
		return "", false
	}
	if _, bad := expand(s, func(string) (string, bool) { return "", true }); bad != "" {
		p.add(pos(n), "%s: %s", what, bad)
		return "", false
	}
	return s, true
}

// expand replaces each ${NAME} of s with lookup(NAME). It returns what
// is wrong with s's references, or "": a "${" without a valid name and
// a closing brace, or a variable lookup does not know.
func expand(s string, lookup func(string) (string, bool)) (string, string) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), ""
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", "\"${\" without a closing \"}\"; write ${NAME}"
		}
		name := s[i+2 : i+end]
		if !envNameRE.MatchString(name) {
			return "", fmt.Sprintf("%s is not an environment variable name; write ${NAME}", quote(name))
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Sprintf("environment variable %s is not set", name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// strMap reads a map of strings.
func (p *parser) strMap(n *yaml.Node, what string, key func(Position, string) bool, val func(*yaml.Node) (string, bool)) map[string]string {
	if n.Kind != yaml.MappingNode {
		p.add(pos(n), "%s must be a map, not %s", what, kind(n))
		return nil
	}
	out := map[string]string{}
	for _, fl := range p.mapping(n, what, nil) {
		if !key(fl.kpos, fl.key) {
			continue
		}
		if v, ok := val(fl.val); ok {
			out[fl.key] = v
		}
	}
	return out
}

// rename reads a rename map, from → to.
func (p *parser) rename(n *yaml.Node, at map[string]Position) map[string]string {
	out := map[string]string{}
	targets := map[string]bool{}
	for _, fl := range p.mapping(n, "rename", nil) {
		if fl.key == "" || len(fl.key) > maxNameBytes {
			p.add(fl.kpos, "rename: a tool name must be 1 to %d bytes", maxNameBytes)
			continue
		}
		to, ok := p.str(fl.val, "a new name", maxString)
		if !ok {
			continue
		}
		if !toolNameRE.MatchString(to) {
			p.add(pos(fl.val), "rename: %s is not a valid tool name (1 to 64 letters, digits, '_' or '-')", quote(to))
			continue
		}
		if targets[to] {
			p.add(pos(fl.val), "rename: two tools are renamed to %s", quote(to))
			continue
		}
		targets[to] = true
		out[fl.key] = to
		at["rename:"+fl.key] = fl.kpos
	}
	return out
}

// cache reads a cache policy: true, or a map.
func (p *parser) cache(n *yaml.Node) *Cache {
	c := &Cache{}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		if b, ok := p.boolean(n, "cache"); ok && b {
			return c
		}
		return nil
	}
	for _, fl := range p.mapping(n, "cache", cacheKeys) {
		switch fl.key {
		case "ttl":
			c.TTL, _ = p.duration(fl.val, "cache.ttl", time.Millisecond, 30*24*time.Hour)
		case "maxEntries":
			c.MaxEntries, _ = p.integer(fl.val, "cache.maxEntries", 1, 1_000_000)
		case "scope":
			if s, ok := p.str(fl.val, "cache.scope", maxString); ok {
				switch s {
				case "process":
					c.Scope = toolset.CacheProcess
				case "run":
					c.Scope = toolset.CacheRun
				default:
					p.add(pos(fl.val), "cache.scope must be process or run, not %s", quote(s))
				}
			}
		}
	}
	return c
}

// rateLimit reads a rate limit.
func (p *parser) rateLimit(n *yaml.Node) *RateLimit {
	r := &RateLimit{}
	fields := p.mapping(n, "rateLimit", rateKeys)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for _, fl := range fields {
		switch fl.key {
		case "calls":
			r.Calls, _ = p.integer(fl.val, "rateLimit.calls", 1, 1_000_000)
		case "per":
			r.Per, _ = p.duration(fl.val, "rateLimit.per", time.Millisecond, 24*time.Hour)
		case "burst":
			r.Burst, _ = p.integer(fl.val, "rateLimit.burst", 1, 1_000_000)
		case "reject":
			r.Reject, _ = p.boolean(fl.val, "rateLimit.reject")
		}
	}
	keys := keysOf(fields)
	if !contains(keys, "calls") || !contains(keys, "per") {
		p.add(pos(n), "rateLimit needs calls and per, as in {calls: 10, per: 1m}")
	}
	return r
}

// values reads configuration values by key; at records their positions
// under prefix+key.
func (p *parser) values(n *yaml.Node, what, prefix string, at map[string]Position) map[string]any {
	out := map[string]any{}
	for _, fl := range p.mapping(n, what, nil) {
		if fl.key == "" || len(fl.key) > maxNameBytes {
			p.add(fl.kpos, "%s: a key must be 1 to %d bytes", what, maxNameBytes)
			continue
		}
		if v, ok := p.value(fl.val, 1); ok {
			out[fl.key] = v
			at[prefix+fl.key] = fl.kpos
		}
	}
	return out
}

// toolValues reads configuration values by tool, then key.
func (p *parser) toolValues(n *yaml.Node, what string, at map[string]Position) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, fl := range p.mapping(n, what, nil) {
		if fl.key == "" || len(fl.key) > maxNameBytes {
			p.add(fl.kpos, "%s: a tool name must be 1 to %d bytes", what, maxNameBytes)
			continue
		}
		at["tools:"+fl.key] = fl.kpos
		out[fl.key] = p.values(fl.val, what+"."+fl.key, "tools:"+fl.key+":", at)
	}
	return out
}

// exclude reads the excluded tools.
func (p *parser) exclude(n *yaml.Node, at map[string]Position) []string {
	names, where, _ := p.strList(n, "exclude", func(c *yaml.Node) (string, bool) { return p.name(c, "an excluded tool") })
	for i, s := range names {
		at["exclude:"+s] = where[i]
	}
	return names
}

// value converts a configuration value to Go: string, int64, float64,
// bool, nil, []any or map[string]any, at most MaxDepth deep.
func (p *parser) value(n *yaml.Node, depth int) (any, bool) {
	if depth > MaxDepth {
		p.add(pos(n), "a configuration value is nested more than %d levels deep", MaxDepth)
		return nil, false
	}
	if !p.tick(n) {
		return nil, false
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			if len(n.Value) > maxString {
				p.add(pos(n), "a configuration value is %d bytes long; at most %d are allowed", len(n.Value), maxString)
				return nil, false
			}
			return n.Value, true
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				p.add(pos(n), "a configuration value is a number that does not fit 64 bits")
				return nil, false
			}
			return i, true
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				p.add(pos(n), "a configuration value is not a number Go can hold")
				return nil, false
			}
			return f, true
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, false
			}
			return b, true
		case "!!null":
			return nil, true
		}
		p.add(pos(n), "a configuration value of type %s is not supported; quote it to make it a string", tagName(n.Tag))
		return nil, false
	case yaml.SequenceNode:
		if len(n.Content) > MaxItems {
			p.add(pos(n), "a configuration list has %d items; at most %d are allowed", len(n.Content), MaxItems)
			return nil, false
		}
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, ok := p.value(p.resolve(c), depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case yaml.MappingNode:
		out := map[string]any{}
		for _, fl := range p.mapping(n, "a configuration map", nil) {
			v, ok := p.value(fl.val, depth+1)
			if !ok {
				return nil, false
			}
			out[fl.key] = v
		}
		return out, true
	}
	p.add(pos(n), "a configuration value must be a string, number, boolean, list or map")
	return nil, false
}

// toolsetConfigs merges the platform's per-agent toolset configurations
// into the package entries they name.
func (p *parser) toolsetConfigs(f *File, n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		p.add(pos(n), "toolsetConfigs must be a list, not %s", kind(n))
		return
	}
	if len(n.Content) > MaxToolsets {
		p.add(pos(n), "toolsetConfigs has %d items; at most %d are allowed", len(n.Content), MaxToolsets)
		return
	}
	for _, c := range n.Content {
		c = p.resolve(c)
		if !p.tick(c) {
			return
		}
		fields := p.mapping(c, "a toolset configuration", tsConfigKeys)
		if c.Kind != yaml.MappingNode {
			continue
		}
		var target *Entry
		at := map[string]Position{}
		var values map[string]map[string]any
		var excluded []string
		named := false
		for _, fl := range fields {
			switch fl.key {
			case "toolset":
				named = true
				if fl.val.Kind == yaml.ScalarNode && fl.val.Tag == "!!str" && isBuiltinGroup(fl.val.Value) {
					if name, ok := p.name(fl.val, "a toolset's name"); ok {
						p.warn(pos(fl.val), "toolsetConfigs of SAM's built-in group %s are not acted on: the group is not provided here", quote(name))
					}
					continue
				}
				name, ok := p.packageName(fl.val)
				if !ok {
					continue
				}
				for i := range f.Toolsets {
					if e := &f.Toolsets[i]; e.Package != nil && e.Package.Name == name {
						target = e
						break
					}
				}
				if target == nil {
					p.add(pos(fl.val), "toolsetConfigs configures %s, which is not one of the agent's toolsets", quote(name))
				}
			case "configValues":
				values = p.toolValues(fl.val, "configValues", at)
			case "excludedTools":
				excluded = p.exclude(fl.val, at)
			}
		}
		if !named {
			p.add(pos(c), "a toolset configuration needs toolset: NAME")
		}
		if target == nil {
			continue
		}
		mergeToolValues(p, target, values, at)
		target.Package.Config.Exclude = append(target.Package.Config.Exclude, excluded...)
	}
}

// mergeToolValues merges configuration values by tool into a package
// entry, a key set twice a problem, and the positions at of their parts
// into the entry's.
func mergeToolValues(p *parser, target *Entry, values map[string]map[string]any, at map[string]Position) {
	cfg := &target.Package.Config
	if cfg.Tools == nil && len(values) > 0 {
		cfg.Tools = map[string]map[string]any{}
	}
	for _, tool := range sortedKeys(values) {
		if cfg.Tools[tool] == nil {
			cfg.Tools[tool] = map[string]any{}
		}
		for _, k := range sortedKeys(values[tool]) {
			if _, dup := cfg.Tools[tool][k]; dup {
				p.add(at["tools:"+tool+":"+k], "tool %s: %s is configured twice", quote(tool), quote(k))
				continue
			}
			cfg.Tools[tool][k] = values[tool][k]
		}
	}
	for k, v := range at {
		if _, ok := target.pos[k]; !ok {
			target.pos[k] = v
		}
	}
}
