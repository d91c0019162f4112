package agentfile

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// The kinds of SAM's documents [ParseDocument] reads.
const (
	KindAgent    = "agent"
	KindToolset  = "toolset"
	KindManifest = "manifest"
)

// Document is one of SAM's documents, as [ParseDocument] reads it:
// exactly one of Agent, Toolset and Manifest is set, as Kind says.
type Document struct {
	// Filename is the name problems are reported under.
	Filename string
	// Kind is KindAgent, KindToolset or KindManifest. A document in the
	// project's own format (no kind) is an agent.
	Kind string
	// Agent is a kind: agent document (or one in the project's format).
	Agent *File
	// Toolset is a kind: toolset document.
	Toolset *ToolsetDoc
	// Manifest is a kind: manifest document.
	Manifest *Manifest
	// Warnings are every warning of the document, sorted (an agent's
	// are in its File.Warnings too).
	Warnings []Problem
}

// ToolsetDoc is SAM's kind: toolset document: a toolset's name and its
// toolset-level configuration, what a [toolpkg.Store]'s SetConfig takes.
// Nothing here applies it.
type ToolsetDoc struct {
	// Pos is where the document (or the manifest's entry) begins.
	Pos Position
	// Name is the toolset's name, a valid package name.
	Name string
	// Description says what the toolset is; kept as given.
	Description string
	// Config is spec.config: flat values, each given to every tool of
	// the toolset that declares its key (Config.Toolset of
	// [toolpkg.Config], one layer below an agent's).
	Config map[string]any
}

// Manifest is SAM's kind: manifest document: the resources that
// "sam config apply" would make so. Its agents and toolsets are read as
// the documents of those kinds are; models, connectors and workflows
// are kept as they are given (bounded) and not acted on.
type Manifest struct {
	// Agents are resources.agents, each an agent document.
	Agents []*File
	// Toolsets are resources.toolsets, each a toolset document.
	Toolsets []*ToolsetDoc
	// Models, Connectors and Workflows are the lists of those names
	// under resources, as decoded values (string, int64, float64,
	// bool, nil, []any, map[string]any).
	Models, Connectors, Workflows []any
}

var (
	toolsetDocKeys  = []string{"kind", "name", "description", "spec"}
	toolsetSpecKeys = []string{"config"}
	manifestKeys    = []string{"kind", "resources"}
	resourceKeys    = []string{"models", "connectors", "toolsets", "agents", "workflows"}
)

// ParseDocument reads one of SAM's documents, of kind agent, toolset or
// manifest (or an agent file in the project's own format, which has no
// kind), with the same bounds and checks as [Parse]: every problem at
// once as a *CheckError, every warning in Document.Warnings. A file holds
// one document; a manifest gathers the resources of several. Like Parse,
// it only reads data.
func ParseDocument(data []byte, filename string) (*Document, error) {
	p := &parser{problems: problems{file: filename}}
	var d *Document
	if root := p.root(data, "a document", "a kind or a name"); root != nil {
		d = p.document(root)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	d.Filename = filename
	if d.Agent != nil {
		d.Agent.Filename = filename
	}
	d.Warnings = p.warningList()
	return d, nil
}

// document reads a document of any kind.
func (p *parser) document(root *yaml.Node) *Document {
	d := &Document{Kind: KindAgent}
	k := ""
	if root.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if key := root.Content[i]; key.Kind == yaml.ScalarNode && key.Value == "kind" {
				if v := p.resolve(root.Content[i+1]); v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
					k = strings.ToLower(v.Value)
				}
			}
		}
	}
	switch k {
	case KindToolset:
		d.Kind = KindToolset
		d.Toolset = p.toolsetDoc(root, "the toolset document")
	case KindManifest:
		d.Kind = KindManifest
		d.Manifest = p.manifest(root)
	default:
		// kind agent, none, or one the agent's reading refuses.
		start := len(p.warnings)
		d.Agent = p.file(root)
		d.Agent.Warnings = sortProblems(p.warnings[start:])
	}
	return d
}

// toolsetDoc reads a toolset document.
func (p *parser) toolsetDoc(n *yaml.Node, what string) *ToolsetDoc {
	t := &ToolsetDoc{Pos: pos(n)}
	fields := p.mapping(n, what, toolsetDocKeys)
	if n.Kind != yaml.MappingNode {
		return t
	}
	named := false
	for _, fl := range fields {
		switch fl.key {
		case "kind":
			if s, ok := p.name(fl.val, "kind"); ok && !strings.EqualFold(s, KindToolset) {
				p.add(pos(fl.val), "kind is %s; a toolset document has kind toolset", quote(s))
			}
		case "name":
			named = true
			t.Name, _ = p.packageName(fl.val)
		case "description":
			t.Description, _ = p.str(fl.val, "description", maxString)
		case "spec":
			for _, s := range p.mapping(fl.val, "spec", toolsetSpecKeys) {
				t.Config = p.values(s.val, "spec.config", "config:", map[string]Position{})
			}
		}
	}
	if !named && !p.stopped {
		p.add(pos(n), "the toolset has no name; give it name: NAME")
	}
	return t
}

// manifest reads a manifest document.
func (p *parser) manifest(root *yaml.Node) *Manifest {
	m := &Manifest{}
	for _, fl := range p.mapping(root, "the manifest", manifestKeys) {
		if fl.key != "resources" {
			continue
		}
		for _, r := range p.mapping(fl.val, "resources", resourceKeys) {
			list := r.val
			if list.Kind != yaml.SequenceNode {
				p.add(pos(list), "resources.%s must be a list, not %s", r.key, kind(list))
				continue
			}
			if len(list.Content) > MaxItems {
				p.add(pos(list), "resources.%s has %d items; at most %d are allowed", r.key, len(list.Content), MaxItems)
				continue
			}
			switch r.key {
			case "agents":
				m.Agents = p.manifestAgents(list)
			case "toolsets":
				seen := map[string]Position{}
				for _, c := range list.Content {
					c = p.resolve(c)
					if !p.tick(c) {
						break
					}
					t := p.toolsetDoc(c, "a toolset of resources.toolsets")
					if at, dup := seen[t.Name]; dup && t.Name != "" {
						p.add(t.Pos, "toolset %s is in resources.toolsets twice (first at line %d)", quote(t.Name), at.Line)
						continue
					}
					seen[t.Name] = t.Pos
					m.Toolsets = append(m.Toolsets, t)
				}
			default:
				v, ok := p.value(list, 1)
				if !ok {
					continue
				}
				items, _ := v.([]any)
				switch r.key {
				case "models":
					m.Models = items
				case "connectors":
					m.Connectors = items
				case "workflows":
					m.Workflows = items
				}
				p.warn(r.kpos, "resources.%s are kept but not acted on here", r.key)
			}
		}
	}
	return m
}

// manifestAgents reads resources.agents, each an agent document.
func (p *parser) manifestAgents(list *yaml.Node) []*File {
	var out []*File
	seen := map[string]Position{}
	for _, c := range list.Content {
		c = p.resolve(c)
		if !p.tick(c) {
			break
		}
		f := &File{Filename: p.problems.file}
		start, problems := len(p.warnings), len(p.list)+p.dropped
		if c.Kind != yaml.MappingNode {
			p.add(pos(c), "an agent of resources.agents must be a map, not %s", kind(c))
			continue
		}
		if samShape(c) || !hasKey(c, "instructions") && !hasKey(c, "toolsets") {
			p.agentDoc(c, f, "an agent of resources.agents")
		} else {
			f = p.file(c)
			f.Filename = p.problems.file
		}
		f.Warnings = sortProblems(p.warnings[start:])
		if len(p.list)+p.dropped != problems {
			continue
		}
		if at, dup := seen[f.Name]; dup {
			p.add(pos(c), "agent %s is in resources.agents twice (first at line %d)", quote(f.Name), at.Line)
			continue
		}
		seen[f.Name] = pos(c)
		out = append(out, f)
	}
	return out
}
