package platform

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
	"go.yaml.in/yaml/v3"
)

// EffectiveAgent is the answer of GET /api/v1/platform/agents/{name}/effective:
// what the agent's last deploy made, which runners load.
type EffectiveAgent struct {
	Name       string    `json:"name"`
	DeployedAt time.Time `json:"deployedAt"`
	// Versions are the toolset versions deployed, by toolset.
	Versions map[string]int `json:"versions"`
	// SkillVersions are the versions of the skills deployed, by skill
	// (never null): those GET /skills/{name}/archive served then.
	SkillVersions map[string]int `json:"skillVersions"`
	// Document is the effective document, YAML in the shape of an
	// [EffectiveDocument].
	Document string `json:"document"`
}

// EffectiveDocument is an agent's effective document: the agent in the
// reference platform's shape, each toolset it names expanded into one
// builtin tool entry per tool it gets (its excluded tools left out),
// named <toolset>__<tool> (the toolset's hyphens kept), with the tool's
// configuration resolved (the agent's value, else the toolset's, else the
// schema's default). A secret value is never in it: a reference stands
// in its place ([AgentSecretRef], [ToolsetSecretRef]), and a secret's
// schema default is left to the runtime, which has the package.
type EffectiveDocument struct {
	Kind string        `yaml:"kind" json:"kind"`
	Name string        `yaml:"name" json:"name"`
	Spec EffectiveSpec `yaml:"spec" json:"spec"`
}

// EffectiveSpec is the spec of an [EffectiveDocument].
type EffectiveSpec struct {
	Type         string          `yaml:"type" json:"type"`
	Deploy       bool            `yaml:"deploy" json:"deploy"`
	SystemPrompt string          `yaml:"systemPrompt,omitempty" json:"systemPrompt,omitempty"`
	Toolsets     []string        `yaml:"toolsets" json:"toolsets"`
	Tools        []EffectiveTool `yaml:"tools" json:"tools"`
	// Skills are the platform skills attached to the agent, by name, in
	// the file's order; a runner fetches each from
	// GET /api/v1/platform/skills/{name}/archive.
	Skills []string `yaml:"skills,omitempty" json:"skills,omitempty"`
}

// EffectiveTool is one tool entry of an [EffectiveDocument].
type EffectiveTool struct {
	// ToolType is builtin.
	ToolType string `yaml:"tool_type" json:"tool_type"`
	// ToolName is <toolset>__<tool>.
	ToolName string `yaml:"tool_name" json:"tool_name"`
	// ToolConfig is the tool's configuration; secrets are references.
	ToolConfig map[string]any `yaml:"tool_config,omitempty" json:"tool_config,omitempty"`
}

// AgentSecretRef is the reference that stands in an effective document
// for a secret the agent's file gives the tool's key (its value for the
// tool, or its toolset-level value): ${secret:agent/TOOLSET/TOOL/KEY}.
// The platform keeps the value apart and never shows it.
func AgentSecretRef(toolset, tool, key string) string {
	return "${secret:agent/" + toolset + "/" + tool + "/" + key + "}"
}

// ToolsetSecretRef is the reference that stands in an effective document
// for a secret of the toolset's own configuration:
// ${secret:toolset/TOOLSET/KEY}. The runtimes that run the toolset have
// it (the platform's Distributor publishes it to them).
func ToolsetSecretRef(toolset, key string) string {
	return "${secret:toolset/" + toolset + "/" + key + "}"
}

// renderEffective makes the effective document of a checked file;
// secrets are the file's secret values by address (only their presence
// matters). It returns nil when a toolset is not ready (which the caller
// says), and what the file misses: each required configuration value no
// layer gives a tool the agent gets of a toolset that is ready.
func (s *Server) renderEffective(f *agentfile.File, secrets map[string]any) (*deployRec, []Problem) {
	doc := EffectiveDocument{Kind: "agent", Name: f.Name, Spec: EffectiveSpec{Type: "standard", Deploy: true, SystemPrompt: f.Instructions, Toolsets: []string{}, Tools: []EffectiveTool{}}}
	rec := &deployRec{At: time.Now().UTC(), Versions: map[string]int{}, Tools: map[string]string{}}
	var missing []Problem
	incomplete := false
	for _, e := range f.Toolsets {
		if e.Package == nil || rec.Versions[e.Package.Name] != 0 {
			continue
		}
		name := e.Package.Name
		info, err := s.info(name)
		if err != nil || info.Status != toolpkg.StatusReady {
			// Said by the caller, with the toolset's status.
			incomplete = true
			continue
		}
		rec.Versions[name] = info.Serving
		doc.Spec.Toolsets = append(doc.Spec.Toolsets, name)
		stored, _ := s.store.Config(name) // secrets as RedactedValue
		secretKeys, _ := s.secretKeys(name)
		cfg := e.Package.Config
		for _, t := range info.Tools {
			if slices.Contains(cfg.Exclude, t.Name) {
				continue
			}
			full := name + "__" + t.Name
			rec.Tools[full] = fingerprint(t)
			tc := map[string]any{}
			keys := make([]string, 0, len(t.Config)+len(toolpkg.ReservedConfigKeys))
			fields := map[string]toolpkg.ConfigField{}
			for _, cf := range t.Config {
				keys = append(keys, cf.Key)
				fields[cf.Key] = cf
			}
			keys = append(keys, toolpkg.ReservedConfigKeys...)
			for _, k := range keys {
				cf, declared := fields[k]
				v, ref, ok := pickValue(name, t.Name, k, cfg, stored, secrets, secretKeys[k] || cf.Secret)
				switch {
				case ok && ref != "":
					tc[k] = ref
				case ok:
					tc[k] = v
				case declared && cf.Default != nil:
					if !cf.Secret && !secretKeys[k] {
						tc[k] = cf.Default
					}
				case declared && cf.Required:
					pos, _ := e.ConfigPosition(t.Name, k)
					if pos.Line == 0 {
						pos = e.Pos
					}
					missing = append(missing, Problem{Line: pos.Line, Column: pos.Column,
						Message: fmt.Sprintf("toolset %q: tool %q needs the configuration key %q, which has no value: give it in the agent's toolsetConfigs (configValues) or in the toolset's configuration", name, t.Name, k)})
				}
			}
			et := EffectiveTool{ToolType: "builtin", ToolName: full}
			if len(tc) > 0 {
				et.ToolConfig = tc
			}
			doc.Spec.Tools = append(doc.Spec.Tools, et)
		}
	}
	for _, ref := range f.Skills {
		sk := s.skills.get(ref.Name)
		if sk == nil {
			incomplete = true
			continue
		}
		if status, _, _ := s.skills.status(sk); status != toolpkg.StatusReady {
			// Said by the caller, with the skill's status.
			incomplete = true
			continue
		}
		if rec.SkillVersions == nil {
			rec.SkillVersions = map[string]int{}
		}
		rec.SkillVersions[ref.Name] = sk.version
		doc.Spec.Skills = append(doc.Spec.Skills, ref.Name)
	}
	if len(missing) > 0 || incomplete {
		sortProblems(missing)
		return nil, missing
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, []Problem{{Message: "the effective document could not be written"}}
	}
	rec.Document = string(out)
	return rec, nil
}

// pickValue finds the value the tool gets for key: the agent's value for
// the tool, then the agent's toolset-level value, then the toolset's
// configuration. A secret one (secret, or kept apart: in secrets) comes
// as a reference instead.
func pickValue(toolset, tool, key string, cfg toolpkg.Config, stored, secrets map[string]any, secret bool) (v any, ref string, ok bool) {
	if v, ok := cfg.Tools[tool][key]; ok && v != nil {
		if _, kept := secrets[secretAddr{toolset, tool, key}.String()]; kept || secret {
			return nil, AgentSecretRef(toolset, tool, key), true
		}
		return v, "", true
	}
	if v, ok := cfg.Toolset[key]; ok && v != nil {
		if _, kept := secrets[secretAddr{toolset, "", key}.String()]; kept || secret {
			return nil, AgentSecretRef(toolset, tool, key), true
		}
		return v, "", true
	}
	if v, ok := stored[key]; ok && v != nil {
		if secret || isRedacted(v) {
			return nil, ToolsetSecretRef(toolset, key), true
		}
		return v, "", true
	}
	return nil, "", false
}

// fingerprint sums what a tool is to a model and a deployer: its
// description, parameters and configuration schema.
func fingerprint(t toolpkg.ToolInfo) string {
	b, _ := json.Marshal(struct {
		D string                `json:"d"`
		P json.RawMessage       `json:"p"`
		C []toolpkg.ConfigField `json:"c"`
	}{t.Description, t.Parameters, t.Config})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// GET /api/v1/platform/agents/{name}/effective → 200 EffectiveAgent; 404
// NotDeployed before the agent's first deploy.
func (s *Server) getEffective(w http.ResponseWriter, r *http.Request) {
	name, ok := pathName(w, r)
	if !ok {
		return
	}
	s.agents.mu.RLock()
	defer s.agents.mu.RUnlock()
	if _, ok := s.agents.agents[name]; !ok {
		WriteError(w, http.StatusNotFound, "NotFound", "no such agent: "+quotePath(name))
		return
	}
	dep := s.agents.deploys.recs[name]
	if dep == nil {
		WriteError(w, http.StatusNotFound, "NotDeployed", fmt.Sprintf("agent %q is not deployed: POST .../agents/%s/deploy first", name, name))
		return
	}
	skills := map[string]int{}
	maps.Copy(skills, dep.SkillVersions)
	writeJSON(w, http.StatusOK, EffectiveAgent{Name: name, DeployedAt: dep.At, Versions: dep.Versions, SkillVersions: skills, Document: dep.Document})
}
