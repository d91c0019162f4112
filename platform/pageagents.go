package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/gotoolset/toolset/toolpkg"
	"go.yaml.in/yaml/v3"
)

// pageAgentRow is an agent as the agents page lists it.
type pageAgentRow struct {
	AgentSummary
	NeedsRedeploy bool
	Problems      int
}

// pageAttach is the second step of the attach form: a toolset's tools
// and their configuration fields.
type pageAttach struct {
	Toolset string
	Tools   []pageAttachTool
}

type pageAttachTool struct {
	Name   string
	Fields []pageField
}

// pageField is one configuration key of a tool, as the attach form
// shows it. A secret field's value is never filled back: Stored says
// that a value is kept.
type pageField struct {
	Name, Key, Type, Description, Value, Default string
	Required, Secret, Stored                     bool
}

// GET /agents: the agents, with their deploy state.
func (s *Server) pageAgents(w http.ResponseWriter, r *http.Request) {
	d := &pageData{Title: "Agents", Agents: []pageAgentRow{}}
	s.agents.mu.RLock()
	names := make([]string, 0, len(s.agents.agents))
	for name := range s.agents.agents {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rec := s.agents.agents[name]
		row := pageAgentRow{AgentSummary: s.summaryOf(name, rec)}
		if data, _, err := s.agents.read(name); err == nil {
			det := s.agentDetail(name, rec, s.inspect(r.Context(), name, data))
			row.NeedsRedeploy, row.Problems = det.NeedsRedeploy, len(det.Problems)
		}
		d.Agents = append(d.Agents, row)
	}
	s.agents.mu.RUnlock()
	s.render(w, r, http.StatusOK, "agents", d)
}

// pageAgentName is the {name} of an agent's page; on a bad or unknown
// name it has rendered the error page.
func (s *Server) pageAgentName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	if err := checkName(name); err != nil {
		s.render(w, r, http.StatusBadRequest, "error", &pageData{Title: "Invalid name", Error: err.Error(), Back: "/agents"})
		return "", false
	}
	return name, true
}

func (s *Server) pageNoAgent(w http.ResponseWriter, r *http.Request, name string) {
	s.render(w, r, http.StatusNotFound, "error", &pageData{Title: "Not found", Error: "There is no agent " + quotePath(name) + ".", Back: "/agents"})
}

// agentView fills d with an agent's detail and why it cannot be
// deployed; false when there is no such agent. The caller holds the
// agents' lock.
func (s *Server) agentView(ctx context.Context, name string, d *pageData) bool {
	rec, ok := s.agents.agents[name]
	if !ok {
		return false
	}
	data, _, err := s.agents.read(name)
	if err != nil {
		s.log.Error("platform: reading an agent failed", "agent", name, "error", err)
		d.Error = "The agent could not be read; the server's log says why."
		d.Reasons = []Problem{{Message: "the agent could not be read"}}
		det := AgentDetail{AgentSummary: s.summaryOf(name, rec)}
		d.Agent = &det
		return true
	}
	in := s.inspect(ctx, name, data)
	det := s.agentDetail(name, rec, in)
	d.Agent = &det
	d.Reasons = in.notDeployable
	for _, info := range s.list(false) {
		if info.Status == toolpkg.StatusReady {
			d.ReadyToolsets = append(d.ReadyToolsets, info.Name)
		}
	}
	return true
}

// GET /agents/{name}: one agent.
func (s *Server) pageAgent(w http.ResponseWriter, r *http.Request) {
	name, ok := s.pageAgentName(w, r)
	if !ok {
		return
	}
	d := &pageData{Title: name}
	s.agents.mu.RLock()
	found := s.agentView(r.Context(), name, d)
	s.agents.mu.RUnlock()
	if !found {
		s.pageNoAgent(w, r, name)
		return
	}
	for _, t := range d.Agent.Toolsets {
		if t.Status == toolpkg.StatusPending {
			d.Refresh = s.refreshSeconds()
		}
	}
	s.render(w, r, http.StatusOK, "agent", d)
}

// POST /agents/{name}/deploy → 303 to the agent's page, or why not.
func (s *Server) pageDeploy(w http.ResponseWriter, r *http.Request) {
	name, ok := s.pageAgentName(w, r)
	if !ok {
		return
	}
	s.agents.mu.Lock()
	_, _, ref := s.deployLocked(r.Context(), name)
	s.agents.mu.Unlock()
	if ref != nil {
		s.render(w, r, ref.status, "error", &pageData{Title: "Deploy refused", Error: "The agent cannot be deployed: " + ref.msg, Problems: ref.problems, Back: "/agents/" + name})
		return
	}
	http.Redirect(w, r, "/agents/"+name, http.StatusSeeOther)
}

// attachSchema is a ready toolset's configuration fields by tool and
// key.
func (s *Server) attachSchema(toolset string) (map[string]map[string]toolpkg.ConfigField, []toolpkg.ToolInfo, error) {
	if checkName(toolset) != nil {
		return nil, nil, errors.New("choose a toolset")
	}
	info, err := s.info(toolset)
	if err != nil || info.Status != toolpkg.StatusReady || info.Serving == 0 {
		return nil, nil, fmt.Errorf("there is no ready toolset %s: choose one that is ready", quotePath(toolset))
	}
	schema := map[string]map[string]toolpkg.ConfigField{}
	for _, t := range info.Tools {
		m := map[string]toolpkg.ConfigField{}
		for _, f := range t.Config {
			m[f.Key] = f
		}
		schema[t.Name] = m
	}
	return schema, info.Tools, nil
}

// storedValues are the values the stored agent file gives the toolset's
// tools: secrets as the placeholder, never their value.
func storedValues(data []byte, name, toolset string) map[string]map[string]any {
	f, err := parseAgent(data, name)
	if err != nil {
		return nil
	}
	for _, e := range f.Toolsets {
		if e.Package != nil && e.Package.Name == toolset {
			return e.Package.Config.Tools
		}
	}
	return nil
}

// GET /agents/{name}/attach?toolset=T: the configuration fields of the
// toolset's tools, to attach it to the agent or change its values.
func (s *Server) pageAttachForm(w http.ResponseWriter, r *http.Request) {
	name, ok := s.pageAgentName(w, r)
	if !ok {
		return
	}
	toolset := r.URL.Query().Get("toolset")
	if len(toolset) > maxFormField {
		toolset = ""
	}
	_, tools, err := s.attachSchema(toolset)
	if err != nil {
		s.render(w, r, http.StatusBadRequest, "error", &pageData{Title: "Attach refused", Error: sentence(err), Back: "/agents/" + name})
		return
	}
	s.agents.mu.RLock()
	_, found := s.agents.agents[name]
	var stored map[string]map[string]any
	if found {
		if data, _, err := s.agents.read(name); err == nil {
			stored = storedValues(data, name, toolset)
		}
	}
	s.agents.mu.RUnlock()
	if !found {
		s.pageNoAgent(w, r, name)
		return
	}
	att := &pageAttach{Toolset: toolset}
	for _, t := range tools {
		pt := pageAttachTool{Name: t.Name}
		for _, f := range t.Config {
			pf := pageField{Name: "v:" + t.Name + ":" + f.Key, Key: f.Key, Type: f.Type, Description: f.Description, Required: f.Required, Secret: f.Secret}
			if f.Default != nil && !f.Secret {
				pf.Default = fmt.Sprint(f.Default)
			}
			if v, ok := stored[t.Name][f.Key]; ok && v != nil {
				if isRedacted(v) {
					// Kept apart: a secret, or a value once secret.
					pf.Secret, pf.Stored = true, true
				} else if !f.Secret {
					pf.Value = fmt.Sprint(v)
				}
			}
			pt.Fields = append(pt.Fields, pf)
		}
		att.Tools = append(att.Tools, pt)
	}
	s.render(w, r, http.StatusOK, "attach", &pageData{Title: "Attach " + toolset + " to " + name, AgentName: name, Attach: att})
}

// maxAttachForm bounds the body of the attach form: room for the empty
// fields of a toolset of many tools.
const maxAttachForm = 1 << 20

// POST /agents/{name}/attach (toolset, v:TOOL:KEY=value...) → 303 to the
// agent's page: the toolset is in the agent's spec.toolsets and the
// values in its toolsetConfigs, stored as a PUT of the file would.
func (s *Server) pageAttach(w http.ResponseWriter, r *http.Request) {
	name, ok := s.pageAgentName(w, r)
	if !ok {
		return
	}
	fail := func(status int, msg string, probs []Problem) {
		s.render(w, r, status, "error", &pageData{Title: "Attach refused", Error: msg, Problems: probs, Back: "/agents/" + name})
	}
	r.Body = s.bodyLimit(w, r, maxAttachForm)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			w.Header().Set("Connection", "close")
			fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("The form is larger than %d bytes.", maxAttachForm), nil)
		case timedOut(err):
			w.Header().Set("Connection", "close")
			fail(http.StatusRequestTimeout, "The form did not arrive in time.", nil)
		default:
			fail(http.StatusBadRequest, "The form could not be read.", nil)
		}
		return
	}
	form := r.PostForm
	toolset := form.Get("toolset")
	if len(form["toolset"]) != 1 || len(toolset) > maxFormField {
		fail(http.StatusBadRequest, "Choose one toolset.", nil)
		return
	}
	schema, _, err := s.attachSchema(toolset)
	if err != nil {
		fail(http.StatusBadRequest, sentence(err), nil)
		return
	}
	// Every field is checked before anything changes.
	values := map[string]map[string]any{}
	keep := map[string]map[string]bool{}
	var probs []Problem
	for field, vs := range form {
		if field == "toolset" {
			continue
		}
		rest, ok := strings.CutPrefix(field, "v:")
		tool, key, ok2 := strings.Cut(rest, ":")
		f, known := schema[tool][key]
		shown := field
		if len(shown) > 64 {
			shown = strings.ToValidUTF8(shown[:64], "") + "..."
		}
		switch {
		case !ok || !ok2 || !known:
			probs = append(probs, Problem{Message: fmt.Sprintf("the form has a field %q that no tool of %s declares", shown, toolset)})
			continue
		case len(vs) != 1:
			probs = append(probs, Problem{Message: fmt.Sprintf("%s: %q is given %d times", tool, key, len(vs))})
			continue
		case len(vs[0]) > maxFormField:
			probs = append(probs, Problem{Message: fmt.Sprintf("%s: the value of %q is longer than %d bytes", tool, key, maxFormField)})
			continue
		}
		v := vs[0]
		if v == "" || (f.Secret && v == toolpkg.RedactedValue) {
			if keep[tool] == nil {
				keep[tool] = map[string]bool{}
			}
			keep[tool][key] = true
			continue
		}
		pv, err := toolpkg.ParseConfigValue(f, v)
		if err != nil {
			// Not the value: a secret may have been typed in the wrong
			// field.
			probs = append(probs, Problem{Message: fmt.Sprintf("%s: %q: expected %s (the value given is not shown)", tool, key, typeWord(f.Type))})
			continue
		}
		if values[tool] == nil {
			values[tool] = map[string]any{}
		}
		values[tool][key] = pv
	}
	if len(probs) > 0 {
		sortProblemMessages(probs)
		fail(http.StatusBadRequest, "The values are invalid; nothing was changed:", probs)
		return
	}
	s.agents.mu.Lock()
	defer s.agents.mu.Unlock()
	if _, ok := s.agents.agents[name]; !ok {
		s.pageNoAgent(w, r, name)
		return
	}
	data, _, err := s.agents.read(name)
	if err != nil {
		s.log.Error("platform: reading an agent failed", "agent", name, "error", err)
		fail(http.StatusInternalServerError, "The agent could not be read; the server's log says why.", nil)
		return
	}
	next, err := attachToolset(data, toolset, schema, values, keep, storedValues(data, name, toolset))
	if err != nil {
		fail(http.StatusUnprocessableEntity, sentence(err), nil)
		return
	}
	if _, _, _, ref := s.storeAgentLocked(r.Context(), name, next); ref != nil {
		fail(ref.status, "The agent was not changed: "+ref.msg, ref.problems)
		return
	}
	http.Redirect(w, r, "/agents/"+name, http.StatusSeeOther)
}

// sentence is an error as the page says it: a capital, a full stop.
func sentence(err error) string {
	msg := err.Error()
	if msg == "" {
		return msg
	}
	msg = strings.ToUpper(msg[:1]) + msg[1:]
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

func typeWord(t string) string {
	switch t {
	case "integer":
		return "an integer"
	case "boolean":
		return "true or false"
	}
	return "a " + t
}

func sortProblemMessages(ps []Problem) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Message < ps[j].Message })
}

// attachToolset edits an agent file (as stored: secrets as the
// placeholder): the toolset joins its toolsets unless it is there, and
// its toolsetConfigs entry gets, for each key of the schema, the value
// given, the placeholder where the field was left empty and a value is
// kept apart, or no value. Keys the schema lacks stay as they are. The
// file keeps its shape: SAM's (under spec) or the project's.
func attachToolset(data []byte, toolset string, schema map[string]map[string]toolpkg.ConfigField, values map[string]map[string]any, keep map[string]map[string]bool, stored map[string]map[string]any) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the stored agent file cannot be edited here: put it again with the API")
	}
	root := doc.Content[0]
	box := root
	if spec := mapValue(root, "spec"); spec != nil {
		if spec.Kind != yaml.MappingNode {
			return nil, errors.New("the agent's spec is not a mapping: put the file again with the API")
		}
		box = spec
	}
	toolsets := mapValue(box, "toolsets")
	if toolsets == nil {
		toolsets = &yaml.Node{Kind: yaml.SequenceNode}
		setMapValue(box, "toolsets", toolsets)
	}
	if toolsets.Kind != yaml.SequenceNode {
		return nil, errors.New("the agent's toolsets are not a list: put the file again with the API")
	}
	present := false
	for _, n := range toolsets.Content {
		if (n.Kind == yaml.ScalarNode && n.Value == toolset) || (n.Kind == yaml.MappingNode && scalarValue(n, "package") == toolset) {
			present = true
		}
	}
	if !present {
		toolsets.Style &^= yaml.FlowStyle
		toolsets.Content = append(toolsets.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: toolset})
	}
	configs := mapValue(box, "toolsetConfigs")
	if configs == nil {
		configs = &yaml.Node{Kind: yaml.SequenceNode}
		setMapValue(box, "toolsetConfigs", configs)
	}
	if configs.Kind != yaml.SequenceNode {
		return nil, errors.New("the agent's toolsetConfigs are not a list: put the file again with the API")
	}
	var entry *yaml.Node
	for _, n := range configs.Content {
		if n.Kind == yaml.MappingNode && scalarValue(n, "toolset") == toolset {
			entry = n
			break
		}
	}
	if entry == nil {
		entry = &yaml.Node{Kind: yaml.MappingNode}
		setMapValue(entry, "toolset", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: toolset})
		configs.Style &^= yaml.FlowStyle
		configs.Content = append(configs.Content, entry)
	}
	cv := mapValue(entry, "configValues")
	if cv == nil {
		cv = &yaml.Node{Kind: yaml.MappingNode}
		setMapValue(entry, "configValues", cv)
	}
	if cv.Kind != yaml.MappingNode {
		return nil, errors.New("the toolset's configValues are not a mapping: put the file again with the API")
	}
	tools := make([]string, 0, len(schema))
	for t := range schema {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for _, tool := range tools {
		tn := mapValue(cv, tool)
		if tn == nil {
			tn = &yaml.Node{Kind: yaml.MappingNode}
		}
		if tn.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("the values of tool %q are not a mapping: put the file again with the API", tool)
		}
		keys := make([]string, 0, len(schema[tool]))
		for k := range schema[tool] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, key := range keys {
			deleteMapKey(tn, key)
			var vn yaml.Node
			switch v, ok := values[tool][key]; {
			case ok:
				if err := vn.Encode(v); err != nil {
					return nil, fmt.Errorf("the value of %q cannot be written: %w", key, err)
				}
			case keep[tool][key] && isRedacted(stored[tool][key]):
				vn = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: toolpkg.RedactedValue}
			default:
				continue
			}
			setMapValue(tn, key, &vn)
		}
		deleteMapKey(cv, tool)
		if len(tn.Content) > 0 {
			tn.Style &^= yaml.FlowStyle
			setMapValue(cv, tool, tn)
		}
	}
	cv.Style &^= yaml.FlowStyle
	if len(cv.Content) == 0 {
		cv.Style |= yaml.FlowStyle
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("the agent file cannot be written: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("the agent file cannot be written: %w", err)
	}
	return buf.Bytes(), nil
}

// mapValue is the value of a mapping's key; nil when absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalarValue(m *yaml.Node, key string) string {
	if v := mapValue(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func setMapValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func deleteMapKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}
