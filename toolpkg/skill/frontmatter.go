package skill

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/gotoolset/toolset/toolpkg"
)

// Bounds of SKILL.md and its front matter.
const (
	// MaxNameLen bounds a skill's name (characters, all ASCII).
	MaxNameLen = 64
	// MaxDescriptionLen bounds a skill's description, in characters.
	MaxDescriptionLen = 1024
	// MaxCompatibilityLen bounds the compatibility field, in characters.
	MaxCompatibilityLen = 500
	// MaxLicenseLen bounds the license field, in characters.
	MaxLicenseLen = 1024
	// MaxMetadataEntries bounds the entries of the metadata map.
	MaxMetadataEntries = 64
	// MaxMetadataKeyLen and MaxMetadataValueLen bound each entry of the
	// metadata map, in characters.
	MaxMetadataKeyLen   = 128
	MaxMetadataValueLen = 1024
	// MaxAllowedTools bounds the names of allowed-tools, and
	// MaxAllowedToolLen each of them.
	MaxAllowedTools   = 64
	MaxAllowedToolLen = 128
	// MaxFrontMatterBytes bounds the front matter, the YAML between the
	// "---" lines.
	MaxFrontMatterBytes = 64 << 10
	// DefaultMaxSkillFileBytes is the default bound of SKILL.md as a
	// whole; see [Limits].
	DefaultMaxSkillFileBytes = 128 << 10
)

// maxProblems bounds the problems of one front matter; the rest are
// counted.
const maxProblems = 100

// FrontMatter is the YAML front matter of SKILL.md, in the agentskills.io
// format.
type FrontMatter struct {
	// Name names the skill: 1 to 64 lowercase letters, digits and
	// hyphens, neither beginning nor ending with a hyphen, without two in
	// a row. The model calls the skill's tools <name>__<tool>.
	Name string `json:"name"`
	// Description says what the skill does and when to use it: not
	// blank, at most 1,024 characters. The model sees it before it loads
	// the skill.
	Description string `json:"description"`
	// License is the skill's license, or the name of a file of the skill
	// that holds it.
	License string `json:"license,omitempty"`
	// Compatibility says what the skill needs of its environment, in at
	// most 500 characters.
	Compatibility string `json:"compatibility,omitempty"`
	// Metadata is free text by key, for the application.
	Metadata map[string]string `json:"metadata,omitempty"`
	// AllowedTools are the tools the skill may use, as its front matter
	// lists them (a space-separated string, or a list); this package
	// records them and enforces nothing.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// Warnings name the fields this package does not know, which it
	// ignores.
	Warnings []toolpkg.FieldProblem `json:"warnings,omitempty"`
}

// FrontMatterError lists every problem of a SKILL.md, each naming its
// field and line.
type FrontMatterError struct {
	Problems []toolpkg.FieldProblem
}

// Error implements error.
func (e *FrontMatterError) Error() string {
	var b strings.Builder
	b.WriteString("skill: invalid " + SkillFile + ":")
	for _, p := range e.Problems {
		b.WriteString("\n  - " + p.String())
	}
	return b.String()
}

// SkillFile is the name of a skill's main file, at its root.
const SkillFile = "SKILL.md"

var namePattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// CheckName reports whether name can name a skill: 1 to 64 lowercase
// letters, digits and hyphens, neither beginning nor ending with a hyphen,
// without two hyphens in a row (the agentskills.io rule). Such a name is
// a valid toolset name too ([toolpkg.CheckName]), so the skill's tools are
// <name>__<tool>.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("skill: a skill needs a name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("skill: name %q is %d characters; at most %d are allowed", name[:MaxNameLen]+"...", len(name), MaxNameLen)
	case !namePattern.MatchString(name):
		return fmt.Errorf("skill: invalid name %q: use lowercase letters, digits and single hyphens, neither first nor last", quoted(name))
	}
	return nil
}

// ParseSkillFile parses SKILL.md: the YAML front matter between a first
// line "---" and the next line "---", then the Markdown body, which it
// returns as it is (a leading blank line dropped). Every problem is
// reported at once in a *FrontMatterError; fields it does not know are
// [FrontMatter.Warnings]. It refuses more than max bytes (0:
// [DefaultMaxSkillFileBytes]), more than [MaxFrontMatterBytes] of front
// matter, text that is not UTF-8, and YAML aliases and anchors, so that
// no front matter costs more to check than its size.
func ParseSkillFile(data []byte, max int) (*FrontMatter, string, error) {
	if max <= 0 {
		max = DefaultMaxSkillFileBytes
	}
	p := &fmParser{}
	if len(data) > max {
		p.add("", 0, "%d bytes; at most %d are allowed: move details to references/", len(data), max)
		return nil, "", p.err()
	}
	if !utf8.Valid(data) {
		p.add("", 0, "not UTF-8 text")
		return nil, "", p.err()
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	yamlText, body, ok := splitFrontMatter(string(data))
	if !ok {
		p.add("", 1, "no front matter: %s must begin with a line \"---\", the YAML fields (name, description), and a line \"---\"", SkillFile)
		return nil, "", p.err()
	}
	if len(yamlText) > MaxFrontMatterBytes {
		p.add("", 2, "the front matter is %d bytes; at most %d are allowed", len(yamlText), MaxFrontMatterBytes)
		return nil, "", p.err()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(yamlText), &doc); err != nil {
		p.add("", 0, "the front matter is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, "", p.err()
	}
	fm := &FrontMatter{}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.add("", 2, "the front matter is empty; it needs name and description")
		return nil, "", p.err()
	}
	if p.aliases(doc.Content[0]) {
		return nil, "", p.err()
	}
	p.frontMatter(fm, doc.Content[0])
	if err := p.err(); err != nil {
		return nil, "", err
	}
	fm.Warnings = p.warnings
	return fm, body, nil
}

// splitFrontMatter cuts text into its front matter and body. The front
// matter's lines keep their numbers: the YAML begins on line 2.
func splitFrontMatter(text string) (yamlText, body string, ok bool) {
	first, rest, found := strings.Cut(text, "\n")
	if !found || strings.TrimRight(first, "\r \t") != "---" {
		return "", "", false
	}
	off := 0
	for off <= len(rest) {
		line, after, more := strings.Cut(rest[off:], "\n")
		if t := strings.TrimRight(line, "\r \t"); t == "---" || t == "..." {
			body = strings.TrimLeft(after, "\r\n")
			if !more {
				body = ""
			}
			return rest[:off], body, true
		}
		if !more {
			break
		}
		off += len(line) + 1
	}
	return "", "", false
}

type fmParser struct {
	problems []toolpkg.FieldProblem
	warnings []toolpkg.FieldProblem
	dropped  int
}

// line maps a line of the YAML to its line in SKILL.md.
func line(n *yaml.Node) int {
	if n == nil || n.Line == 0 {
		return 0
	}
	return n.Line + 1
}

func (p *fmParser) add(field string, line int, format string, args ...any) {
	if len(p.problems) >= maxProblems {
		p.dropped++
		return
	}
	p.problems = append(p.problems, toolpkg.FieldProblem{Field: field, Line: line, Message: fmt.Sprintf(format, args...)})
}

func (p *fmParser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	sort.SliceStable(p.problems, func(i, j int) bool {
		li, lj := p.problems[i].Line, p.problems[j].Line
		return li != 0 && (lj == 0 || li < lj)
	})
	if p.dropped > 0 {
		p.problems = append(p.problems, toolpkg.FieldProblem{Message: fmt.Sprintf("and %d more problems", p.dropped)})
	}
	return &FrontMatterError{Problems: p.problems}
}

// aliases reports, as a problem, each YAML anchor and alias: front matter
// is a few plain fields, and an alias could make it costly to walk.
func (p *fmParser) aliases(n *yaml.Node) bool {
	found := false
	stack := []*yaml.Node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			p.add("", line(n), "YAML anchors and aliases are not allowed in front matter")
			found = true
			continue
		}
		stack = append(stack, n.Content...)
	}
	return found
}

var knownFields = []string{"name", "description", "license", "compatibility", "metadata", "allowed-tools"}

func (p *fmParser) frontMatter(fm *FrontMatter, root *yaml.Node) {
	if root.Kind != yaml.MappingNode {
		p.add("", line(root), "the front matter must be a map of fields, not %s", kind(root))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.add("", line(k), "expected a field name, got %s", kind(k))
			continue
		}
		field := quoted(k.Value)
		if seen[k.Value] {
			p.add(field, line(k), "duplicate field")
			continue
		}
		seen[k.Value] = true
		switch k.Value {
		case "name":
			if s, ok := p.text("name", v, MaxNameLen); ok {
				if err := CheckName(s); err != nil {
					p.add("name", line(v), "%s", strings.TrimPrefix(err.Error(), "skill: "))
				}
				fm.Name = s
			}
		case "description":
			if s, ok := p.text("description", v, MaxDescriptionLen); ok {
				if strings.TrimSpace(s) == "" {
					p.add("description", line(v), "blank; say what the skill does and when to use it")
				}
				fm.Description = s
			}
		case "license":
			fm.License, _ = p.text("license", v, MaxLicenseLen)
		case "compatibility":
			fm.Compatibility, _ = p.text("compatibility", v, MaxCompatibilityLen)
		case "metadata":
			fm.Metadata = p.metadata(v)
		case "allowed-tools":
			fm.AllowedTools = p.allowedTools(v)
		default:
			if len(p.warnings) < maxProblems {
				p.warnings = append(p.warnings, toolpkg.FieldProblem{Field: field, Line: line(k),
					Message: "unknown field, ignored; known fields: " + strings.Join(knownFields, ", ")})
			}
		}
	}
	if !seen["name"] {
		p.add("name", 0, "required: the skill's name, lowercase letters, digits and hyphens")
	}
	if !seen["description"] {
		p.add("description", 0, "required: what the skill does and when to use it")
	}
}

// text returns the string value of a field of at most max characters.
func (p *fmParser) text(field string, n *yaml.Node, max int) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.add(field, line(n), "expected text, got %s", kind(n))
		return "", false
	}
	if c := utf8.RuneCountInString(n.Value); c > max {
		p.add(field, line(n), "%d characters; at most %d are allowed", c, max)
		return "", false
	}
	return n.Value, true
}

func (p *fmParser) metadata(n *yaml.Node) map[string]string {
	if n.Kind != yaml.MappingNode {
		p.add("metadata", line(n), "expected a map of text by key, got %s", kind(n))
		return nil
	}
	if c := len(n.Content) / 2; c > MaxMetadataEntries {
		p.add("metadata", line(n), "%d entries; at most %d are allowed", c, MaxMetadataEntries)
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key, ok := p.text("metadata", k, MaxMetadataKeyLen)
		if !ok {
			continue
		}
		field := "metadata." + quoted(key)
		if _, dup := out[key]; dup {
			p.add(field, line(k), "duplicate key")
			continue
		}
		if val, ok := p.text(field, v, MaxMetadataValueLen); ok {
			out[key] = val
		}
	}
	return out
}

func (p *fmParser) allowedTools(n *yaml.Node) []string {
	var names []string
	var lines []int
	switch n.Kind {
	case yaml.ScalarNode:
		for _, f := range strings.Fields(n.Value) {
			names, lines = append(names, f), append(lines, line(n))
		}
	case yaml.SequenceNode:
		for _, e := range n.Content {
			if s, ok := p.text("allowed-tools", e, MaxAllowedToolLen); ok {
				names, lines = append(names, strings.TrimSpace(s)), append(lines, line(e))
			}
		}
	default:
		p.add("allowed-tools", line(n), "expected space-separated tool names, or a list of them, got %s", kind(n))
		return nil
	}
	if len(names) > MaxAllowedTools {
		p.add("allowed-tools", line(n), "%d tools; at most %d are allowed", len(names), MaxAllowedTools)
		return nil
	}
	for i, s := range names {
		if s == "" || utf8.RuneCountInString(s) > MaxAllowedToolLen {
			p.add("allowed-tools", lines[i], "a tool name of 1 to %d characters expected, got %q", MaxAllowedToolLen, quoted(s))
		}
	}
	return names
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing (null)"
		}
		return "the value " + quoted(n.Value)
	}
	return "nothing"
}

// maxQuoted bounds a value quoted in a problem.
const maxQuoted = 64

// quoted cuts s for a problem's message.
func quoted(s string) string {
	return textcut.Clip(s, maxQuoted)
}
