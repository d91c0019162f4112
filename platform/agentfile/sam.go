package agentfile

import (
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gotoolset/toolset/toolpkg"
)

// Keys of SAM's agent document, and the older spellings of this package
// it still reads (apiVersion, metadata, a top-level toolsetConfigs,
// spec.name, spec.description, spec.instructions), each with a warning.
var (
	agentDocKeys   = []string{"kind", "name", "description", "spec"}
	agentDocOlder  = []string{"apiVersion", "metadata", "toolsetConfigs"}
	agentSpecKeys  = []string{"type", "systemPrompt", "modelProvider", "deploy", "toolsets", "tools", "toolsetConfigs", "skills", "inputModes", "outputModes"}
	agentSpecOlder = []string{"name", "description", "instructions"}
	metadataKeys   = []string{"name", "description", "labels", "annotations"}
	cardSkillKeys  = []string{"id", "name", "description", "tags", "examples", "inputModes", "outputModes"}
	attachedKeys   = []string{"skill"}
	samShapeKeys   = []string{"apiVersion", "kind", "metadata", "spec"}

	// The keys of a spec.tools entry, by tool_type.
	toolKeys = map[string][]string{
		"builtin":       {"tool_type", "tool_name", "tool_config", "tool_description", "required_scopes"},
		"builtin-group": {"tool_type", "group_name"},
		"mcp":           {"tool_type", "tool_name", "connection_params", "environment_variables"},
	}
	connKeys = []string{"type", "command", "args", "env", "url", "headers", "timeout"}

	skillNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$`)
)

// toolsSupported says what spec.tools takes, for the problems of the
// entries it does not.
const toolsSupported = "spec.tools takes builtin entries naming a tool of a package as TOOLSET__TOOL " +
	"(such as finance-tools__market_get_technicals) and mcp entries (connection_params type stdio or streamable-http); " +
	"builtin-group entries are noted and left out"

// samShape says whether a map is in SAM's document shape (or this
// package's older spelling of it) rather than the project's own format.
func samShape(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && contains(samShapeKeys, k.Value) {
			return true
		}
	}
	return false
}

// hasKey says whether the map n has the key key.
func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Tag == "!!str" && k.Value == key {
			return true
		}
	}
	return false
}

// isBuiltinGroup says whether a toolset's name is one of SAM's built-in
// groups (builtin_artifact_tools, ...): tools of SAM's own process, not
// a package.
func isBuiltinGroup(name string) bool { return strings.HasPrefix(name, "builtin_") }

func (p *parser) warnBuiltinGroup(at Position, name string) {
	p.warn(at, "built-in group %s is not provided here: it is one of SAM's own groups of tools, not a package; the agent runs without it", quote(name))
}

// nameAt is a name the document gives the agent, and where.
type nameAt struct {
	name string
	at   Position
}

// agentDoc reads an agent document in SAM's shape into f.
func (p *parser) agentDoc(n *yaml.Node, f *File, what string) {
	fields := p.mappingWith(n, what, agentDocKeys, agentDocOlder)
	if n.Kind != yaml.MappingNode {
		return
	}
	var names []nameAt
	var configs []*yaml.Node
	var tools *yaml.Node
	var prompt, instructions *field
	kinded := false
	for _, fl := range fields {
		switch fl.key {
		case "kind":
			kinded = true
			if s, ok := p.name(fl.val, "kind"); ok && !strings.EqualFold(s, "agent") {
				p.add(pos(fl.val), "kind is %s; an agent document has kind agent", quote(s))
			}
		case "apiVersion":
			p.name(fl.val, "apiVersion")
			p.warn(fl.kpos, "apiVersion is not SAM's: it is ignored (an older spelling of this package's); leave it out")
		case "name":
			if s, ok := p.name(fl.val, "the agent's name"); ok {
				names = append(names, nameAt{s, pos(fl.val)})
			}
		case "description":
			if s, ok := p.str(fl.val, "description", maxString); ok {
				f.Description = s
				p.warn(fl.kpos, "description is kept but not acted on here")
			}
		case "metadata":
			p.warn(fl.kpos, "metadata is an older spelling of this package's: SAM writes name and description at the top level; labels and annotations are not acted on")
			for _, m := range p.mapping(fl.val, "metadata", metadataKeys) {
				switch m.key {
				case "name":
					if s, ok := p.name(m.val, "the agent's name"); ok {
						names = append(names, nameAt{s, pos(m.val)})
					}
				case "description":
					if s, ok := p.str(m.val, "metadata.description", maxString); ok && f.Description == "" {
						f.Description = s
					}
				default:
					for _, l := range p.mapping(m.val, "metadata."+m.key, nil) {
						p.str(l.val, "metadata."+m.key+"."+l.key, maxString)
					}
				}
			}
		case "toolsetConfigs":
			p.warn(fl.kpos, "a top-level toolsetConfigs is an older spelling of this package's: SAM writes it in spec")
			configs = append(configs, fl.val)
		case "spec":
			for _, s := range p.mappingWith(fl.val, "spec", agentSpecKeys, agentSpecOlder) {
				switch s.key {
				case "name":
					p.warn(s.kpos, "spec.name is an older spelling of this package's: SAM writes name at the top level")
					if v, ok := p.name(s.val, "the agent's name"); ok {
						names = append(names, nameAt{v, pos(s.val)})
					}
				case "description":
					p.warn(s.kpos, "spec.description is an older spelling of this package's: SAM writes description at the top level; it is kept but not acted on here")
					if v, ok := p.str(s.val, "spec.description", maxString); ok && f.Description == "" {
						f.Description = v
					}
				case "systemPrompt":
					prompt = &s
					f.Instructions, _ = p.str(s.val, "spec.systemPrompt", maxInstructions)
				case "instructions":
					instructions = &s
					p.warn(s.kpos, "spec.instructions is an older spelling of this package's: SAM writes spec.systemPrompt")
					if prompt == nil {
						f.Instructions, _ = p.str(s.val, "instructions", maxInstructions)
					}
				case "type":
					if v, ok := p.name(s.val, "spec.type"); ok {
						f.Type = v
						p.warn(s.kpos, "spec.type %s is kept but not acted on: every agent here runs the same way", quote(v))
					}
				case "modelProvider":
					f.ModelProvider = p.names(s.val, "spec.modelProvider", "a model provider")
					p.warn(s.kpos, "spec.modelProvider is kept but not acted on: the program that runs the agent chooses its model")
				case "deploy":
					if b, ok := p.boolean(s.val, "spec.deploy"); ok {
						f.Deploy = &b
						p.warn(s.kpos, "spec.deploy is kept but not acted on: deploying is the platform's")
					}
				case "inputModes":
					f.InputModes = p.names(s.val, "spec.inputModes", "an input mode")
					p.warn(s.kpos, "spec.inputModes are kept but not acted on: they are the agent card's")
				case "outputModes":
					f.OutputModes = p.names(s.val, "spec.outputModes", "an output mode")
					p.warn(s.kpos, "spec.outputModes are kept but not acted on: they are the agent card's")
				case "skills":
					p.skills(s, f)
				case "toolsets":
					f.Toolsets = p.toolsets(s.val)
				case "tools":
					tools = s.val
				case "toolsetConfigs":
					configs = append(configs, s.val)
				}
			}
		}
	}
	if prompt != nil && instructions != nil {
		p.add(instructions.kpos, "spec has both systemPrompt and instructions; give systemPrompt alone")
	}
	if !kinded && what == "the agent document" {
		p.warn(pos(n), "the document has no kind; it is read as kind: agent")
	}
	for _, nm := range names[min(1, len(names)):] {
		if nm.name != names[0].name {
			p.add(nm.at, "the agent is named %s here and %s at line %d; give it one name", quote(nm.name), quote(names[0].name), names[0].at.Line)
		}
	}
	if len(names) > 0 {
		f.Name = names[0].name
	} else if !p.stopped && len(p.list) == 0 {
		p.add(pos(n), "the agent has no name; give it name: NAME")
	}
	if tools != nil {
		p.tools(tools, f)
	}
	for _, c := range configs {
		p.toolsetConfigs(f, c)
	}
	if len(f.Toolsets) > MaxToolsets {
		p.add(pos(n), "the agent has %d toolsets; at most %d are allowed", len(f.Toolsets), MaxToolsets)
	}
	for i := range f.Toolsets {
		e := &f.Toolsets[i]
		if e.Package == nil {
			continue
		}
		for _, o := range e.Only {
			tool := strings.TrimPrefix(o, e.Package.Name+"__")
			if contains(e.Package.Config.Exclude, tool) {
				p.add(e.position("exclude:"+tool), "tool %s is listed in spec.tools and excluded; leave one out", quote(o))
			}
		}
	}
}

// names reads a list of names, or one name alone.
func (p *parser) names(n *yaml.Node, what, item string) []string {
	if n.Kind == yaml.ScalarNode {
		if s, ok := p.name(n, what); ok {
			return []string{s}
		}
		return nil
	}
	out, _, _ := p.strList(n, what, func(c *yaml.Node) (string, bool) { return p.name(c, item) })
	return out
}

// skills reads a list of skills: the agent card's ({id, ...}) and the
// attached ones (NAME, or {skill: NAME}), told apart by their shape.
func (p *parser) skills(fl field, f *File) {
	n := fl.val
	if n.Kind != yaml.SequenceNode {
		p.add(pos(n), "skills must be a list, not %s", kind(n))
		return
	}
	if len(n.Content) > MaxItems {
		p.add(pos(n), "skills has %d items; at most %d are allowed", len(n.Content), MaxItems)
		return
	}
	attached := map[string]bool{}
	ids := map[string]bool{}
	cards := false
	for _, c := range n.Content {
		c = p.resolve(c)
		if !p.tick(c) {
			return
		}
		switch {
		case c.Kind == yaml.ScalarNode && c.Tag == "!!str":
			p.attachedSkill(c, f, attached)
		case c.Kind == yaml.MappingNode && hasKey(c, "id") && hasKey(c, "skill"):
			p.add(pos(c), "a skill has both id and skill: an agent card's skill has an id ({id, name, description, tags}); an attached skill is NAME or {skill: NAME}, without an id")
		case c.Kind == yaml.MappingNode && hasKey(c, "id"):
			cards = true
			if s, ok := p.cardSkill(c); ok {
				if ids[s.ID] {
					p.add(s.Pos, "the agent card has two skills with id %s", quote(s.ID))
					continue
				}
				ids[s.ID] = true
				f.Card = append(f.Card, s)
			}
		case c.Kind == yaml.MappingNode && hasKey(c, "skill"):
			for _, a := range p.mapping(c, "an attached skill", attachedKeys) {
				p.attachedSkill(a.val, f, attached)
			}
		default:
			p.add(pos(c), "a skill is an agent card's skill, {id: ID, name: NAME, description: TEXT, tags: [TAG]}, or an attached skill, NAME or {skill: NAME}; this one is %s", shapeOf(c))
		}
	}
	if cards {
		p.warn(fl.kpos, "the agent card's skills (those with an id) are kept but not acted on: nothing here publishes an agent card")
	}
}

// shapeOf describes a node for the problem of a skill of neither shape.
func shapeOf(n *yaml.Node) string {
	if n.Kind == yaml.MappingNode {
		return "a map with neither id nor skill"
	}
	return kind(n)
}

// attachedSkill reads the name of an attached skill.
func (p *parser) attachedSkill(n *yaml.Node, f *File, seen map[string]bool) {
	s, ok := p.name(n, "a skill's name")
	if !ok {
		return
	}
	if !skillNameRE.MatchString(s) {
		p.add(pos(n), "skill name %s must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", quote(s))
		return
	}
	if seen[s] {
		p.add(pos(n), "skill %s is attached twice", quote(s))
		return
	}
	seen[s] = true
	f.Skills = append(f.Skills, SkillRef{Name: s, Pos: pos(n)})
}

// cardSkill reads one skill of the agent card.
func (p *parser) cardSkill(n *yaml.Node) (CardSkill, bool) {
	s := CardSkill{Pos: pos(n)}
	before := len(p.list) + p.dropped
	texts := func(v *yaml.Node, what string) []string {
		out, _, _ := p.strList(v, what, func(c *yaml.Node) (string, bool) { return p.str(c, "an item of "+what, maxString) })
		return out
	}
	for _, fl := range p.mapping(n, "a skill of the agent card", cardSkillKeys) {
		switch fl.key {
		case "id":
			s.ID, _ = p.name(fl.val, "a skill's id")
		case "name":
			s.Name, _ = p.name(fl.val, "a skill's name")
		case "description":
			s.Description, _ = p.str(fl.val, "a skill's description", maxString)
		case "tags":
			s.Tags = p.names(fl.val, "a skill's tags", "a tag")
		case "examples":
			s.Examples = texts(fl.val, "a skill's examples")
		case "inputModes":
			s.InputModes = p.names(fl.val, "a skill's inputModes", "an input mode")
		case "outputModes":
			s.OutputModes = p.names(fl.val, "a skill's outputModes", "an output mode")
		}
	}
	return s, len(p.list)+p.dropped == before && s.ID != ""
}

// tools reads spec.tools: a package's tool (builtin TOOLSET__TOOL), an
// MCP server, SAM's built-in groups (warned of and left out); every
// other entry is a problem.
func (p *parser) tools(n *yaml.Node, f *File) {
	if n.Kind != yaml.SequenceNode {
		p.add(pos(n), "spec.tools must be a list, not %s", kind(n))
		return
	}
	if len(n.Content) > MaxItems {
		p.add(pos(n), "spec.tools has %d items; at most %d are allowed", len(n.Content), MaxItems)
		return
	}
	listed := map[string]bool{}
	for _, e := range f.Toolsets {
		if e.Package != nil {
			listed[e.Package.Name] = true
		}
	}
	for _, c := range n.Content {
		c = p.resolve(c)
		if !p.tick(c) {
			return
		}
		if c.Kind != yaml.MappingNode {
			p.add(pos(c), "an entry of spec.tools must be a map, {tool_type: TYPE, ...}, not %s", kind(c))
			continue
		}
		fields := p.mapping(c, "an entry of spec.tools", nil)
		typ, typed := "", false
		byKey := map[string]field{}
		for _, fl := range fields {
			byKey[fl.key] = fl
			if fl.key == "tool_type" {
				typed = true
				typ, _ = p.name(fl.val, "tool_type")
			}
		}
		if !typed {
			p.add(pos(c), "an entry of spec.tools needs tool_type: builtin, builtin-group, mcp or openapi")
			continue
		}
		allowed, known := toolKeys[typ]
		if !known {
			if typ != "" {
				p.add(pos(byKey["tool_type"].val), "tool_type %s is not supported here: %s", quote(typ), toolsSupported)
			}
			continue
		}
		bad := false
		for _, fl := range fields {
			if !contains(allowed, fl.key) {
				p.add(fl.kpos, "%s does not go with tool_type %s; its keys: %s", quote(fl.key), typ, strings.Join(allowed, ", "))
				bad = true
			}
		}
		if bad {
			continue
		}
		switch typ {
		case "builtin":
			p.builtinTool(c, byKey, f, listed)
		case "builtin-group":
			g, ok := byKey["group_name"]
			if !ok {
				p.add(pos(c), "a builtin-group entry needs group_name: GROUP")
			} else if s, ok := p.name(g.val, "group_name"); ok {
				p.warnBuiltinGroup(pos(g.val), s)
			}
		case "mcp":
			if e, ok := p.mcpTool(c, byKey); ok {
				f.Toolsets = append(f.Toolsets, e)
			}
		}
	}
}

// builtinTool reads a builtin entry: a tool of a package, which becomes
// a package entry limited to it, or joins the entry of that package.
func (p *parser) builtinTool(c *yaml.Node, byKey map[string]field, f *File, listed map[string]bool) {
	tn, ok := byKey["tool_name"]
	if !ok {
		p.add(pos(c), "a builtin entry needs tool_name: TOOLSET__TOOL")
		return
	}
	full, ok := p.name(tn.val, "tool_name")
	if !ok {
		return
	}
	pkg, tool, ok := splitTool(full, listed)
	if !ok {
		p.add(pos(tn.val), "builtin tool %s is one of SAM's in-process tools, which are not provided here: %s", quote(full), toolsSupported)
		return
	}
	if err := toolpkg.CheckName(pkg); err != nil {
		p.add(pos(tn.val), "tool_name %s: the toolset's name is not valid: %s", quote(full), strings.TrimPrefix(err.Error(), "toolpkg: "))
		return
	}
	if !toolNameRE.MatchString(tool) {
		p.add(pos(tn.val), "tool_name %s: %s is not a valid tool name (1 to 64 letters, digits, '_' or '-')", quote(full), quote(tool))
		return
	}
	at := map[string]Position{}
	values := map[string]any{}
	if tc, ok := byKey["tool_config"]; ok {
		values = p.values(tc.val, "tool_config", "tools:"+tool+":", at)
	}
	if rs, ok := byKey["required_scopes"]; ok {
		scopes, _, ok := p.strList(rs.val, "required_scopes", func(c *yaml.Node) (string, bool) { return p.name(c, "a scope") })
		if ok {
			if _, dup := values["required_scopes"]; dup {
				p.add(rs.kpos, "required_scopes is given twice, here and in tool_config")
			} else {
				list := make([]any, len(scopes))
				for i, s := range scopes {
					list[i] = s
				}
				values["required_scopes"] = list
				at["tools:"+tool+":required_scopes"] = rs.kpos
			}
		}
	}
	if td, ok := byKey["tool_description"]; ok {
		p.str(td.val, "tool_description", maxString)
		p.warn(td.kpos, "tool_description is not acted on: a package's tool is described by its package")
	}
	var target *Entry
	for i := range f.Toolsets {
		if e := &f.Toolsets[i]; e.Package != nil && e.Package.Name == pkg {
			target = e
			break
		}
	}
	switch {
	case target == nil:
		f.Toolsets = append(f.Toolsets, Entry{Pos: pos(c), Package: &Package{Name: pkg}, Only: []string{full},
			pos: map[string]Position{"package": pos(tn.val), "only:" + full: pos(tn.val)}})
		target = &f.Toolsets[len(f.Toolsets)-1]
	case len(target.Only) == 0:
		// The entry gives every tool of the package already.
	case contains(target.Only, full):
		p.add(pos(tn.val), "tool %s is listed twice in spec.tools", quote(full))
		return
	default:
		target.Only = append(target.Only, full)
		target.pos["only:"+full] = pos(tn.val)
	}
	if len(values) > 0 {
		mergeToolValues(p, target, map[string]map[string]any{tool: values}, at)
	}
}

// splitTool splits TOOLSET__TOOL, preferring a toolset the agent lists
// when the toolset's name holds "__" too.
func splitTool(full string, listed map[string]bool) (pkg, tool string, ok bool) {
	for i := 0; i+2 < len(full); i++ {
		if full[i] == '_' && full[i+1] == '_' && i > 0 && listed[full[:i]] {
			return full[:i], full[i+2:], true
		}
	}
	pkg, tool, ok = strings.Cut(full, "__")
	return pkg, tool, ok && pkg != "" && tool != ""
}

// mcpTool reads an mcp entry: an MCP server over stdio or streamable
// HTTP, limited to tool_name when given.
func (p *parser) mcpTool(c *yaml.Node, byKey map[string]field) (Entry, bool) {
	e := Entry{Pos: pos(c), pos: map[string]Position{"mcp": pos(c)}}
	before := len(p.list) + p.dropped
	cp, ok := byKey["connection_params"]
	if !ok {
		p.add(pos(c), "an mcp entry needs connection_params: {type: stdio, command: PROGRAM, args: [ARG]} or {type: streamable-http, url: URL}")
		return e, false
	}
	m := p.connectionParams(cp.val)
	if m == nil {
		return e, false
	}
	if ev, ok := byKey["environment_variables"]; ok {
		env := p.envMap(ev.val, "environment_variables")
		if m.URL != "" {
			p.add(ev.kpos, "environment_variables are for a stdio server; this one has a url (give headers in connection_params)")
		}
		for _, k := range sortedKeys(env) {
			if _, dup := m.Env[k]; dup {
				p.add(ev.kpos, "environment variable %s is given twice, here and in connection_params.env", quote(k))
				continue
			}
			if m.Env == nil {
				m.Env = map[string]string{}
			}
			m.Env[k] = env[k]
		}
	}
	if tn, ok := byKey["tool_name"]; ok {
		if s, ok := p.name(tn.val, "tool_name"); ok {
			e.Only = []string{s}
			e.pos["only:"+s] = pos(tn.val)
		}
	}
	e.MCP = m
	return e, len(p.list)+p.dropped == before
}

// connectionParams reads an mcp entry's connection_params.
func (p *parser) connectionParams(n *yaml.Node) *MCP {
	fields := p.mapping(n, "connection_params", connKeys)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	m := &MCP{}
	typ := ""
	var command string
	var args []string
	byKey := map[string]field{}
	for _, fl := range fields {
		byKey[fl.key] = fl
		switch fl.key {
		case "type":
			typ, _ = p.name(fl.val, "connection_params.type")
		case "command":
			command, _ = p.str(fl.val, "connection_params.command", maxString)
		case "args":
			args, _, _ = p.strList(fl.val, "connection_params.args", func(c *yaml.Node) (string, bool) {
				return p.str(c, "an argument of connection_params.args", maxString)
			})
		case "env":
			m.Env = p.envMap(fl.val, "connection_params.env")
		case "url":
			if s, ok := p.str(fl.val, "connection_params.url", 2048); ok {
				if msg := checkURL(s); msg != "" {
					p.add(pos(fl.val), "connection_params.url %s %s", quote(s), msg)
				} else {
					m.URL = s
				}
			}
		case "headers":
			m.Headers = p.headerMap(fl.val, "connection_params.headers")
		case "timeout":
			p.warn(fl.kpos, "connection_params.timeout is not acted on: give the MCP client's timeouts in the program's options")
		}
	}
	only := func(want string, keys ...string) {
		for _, k := range keys {
			if fl, ok := byKey[k]; ok {
				p.add(fl.kpos, "connection_params.%s is not for a %s server", k, want)
			}
		}
	}
	switch typ {
	case "stdio":
		only("stdio", "url", "headers")
		if command == "" {
			p.add(pos(n), "a stdio server needs connection_params.command: PROGRAM")
			return nil
		}
		if len(args) > 255 {
			p.add(pos(byKey["args"].val), "connection_params.args has %d arguments; at most 255 are allowed", len(args))
			return nil
		}
		m.Command = append([]string{command}, args...)
		m.URL = ""
	case "streamable-http":
		only("streamable-http", "command", "args", "env")
		if m.URL == "" {
			if _, given := byKey["url"]; !given {
				p.add(pos(n), "a streamable-http server needs connection_params.url: URL")
			}
			return nil
		}
	case "sse":
		p.add(pos(byKey["type"].val), "connection_params.type sse is not supported here: the MCP client here speaks stdio and streamable-http")
		return nil
	case "":
		if _, given := byKey["type"]; !given {
			p.add(pos(n), "connection_params needs type: stdio or streamable-http")
		}
		return nil
	default:
		p.add(pos(byKey["type"].val), "connection_params.type %s is not supported here: give stdio or streamable-http", quote(typ))
		return nil
	}
	return m
}
