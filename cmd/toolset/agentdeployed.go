package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
)

// Bounds of an effective document a runner loads from the platform.
const (
	// maxEffectiveTools bounds its tool entries.
	maxEffectiveTools = 10_000
	// maxSecretsFile bounds the --secrets file.
	maxSecretsFile = 1 << 20
)

// The references an effective document has in place of secrets (see
// platform.AgentSecretRef and platform.ToolsetSecretRef).
const (
	agentSecretPrefix   = "${secret:agent/"
	toolsetSecretPrefix = "${secret:toolset/"
)

// platformGet sends an authenticated GET to the platform and returns the
// answer's status and body, bounded. token "" sends none.
func platformGet(ctx context.Context, base *url.URL, token string, target *url.URL) (int, []byte, error) {
	status, _, body, err := platformFetch(ctx, base, token, target, maxPlatformAnswer)
	return status, body, err
}

// platformFetch is platformGet with its bound, returning the answer's
// header too.
func platformFetch(ctx context.Context, base *url.URL, token string, target *url.URL, limit int64) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, platformCheckTimeout, fmt.Errorf("no answer within %s", platformCheckTimeout))
	defer cancel()
	c := platformClientWith(base, token)
	c.doing = "asking"
	a, err := c.doURL(ctx, http.MethodGet, target, "", nil, limit)
	if err != nil {
		return 0, nil, nil, err
	}
	return a.status, a.res.Header, a.body, nil
}

// fetchEffective reads the effective document of the deployed agent from
// the platform: GET /api/v1/platform/agents/NAME/effective.
func fetchEffective(ctx context.Context, base *url.URL, tokenFile, name string) (*platform.EffectiveAgent, *platform.EffectiveDocument, error) {
	if toolpkg.CheckName(name) != nil {
		return nil, nil, usagef("with --platform, --agent is the name of an agent deployed there (1 to 64 letters, digits, '_' or '-'), not %q", name)
	}
	token, err := platform.LoadToken(tokenFile)
	if errors.Is(err, platform.ErrNoToken) {
		token = ""
	} else if err != nil {
		return nil, nil, err
	}
	target := base.JoinPath("api/v1/platform/agents", name, "effective")
	status, body, err := platformGet(ctx, base, token, target)
	if err != nil {
		return nil, nil, err
	}
	res := &http.Response{StatusCode: status}
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		if token == "" {
			return nil, nil, fmt.Errorf("the platform at %s requires a bearer token: give --platform-token-file FILE or set $%s", base, platform.TokenEnv)
		}
		return nil, nil, fmt.Errorf("the platform at %s refused the bearer token (401 Unauthorized)", base)
	case http.StatusNotFound:
		var eb platform.ErrorBody
		if json.Unmarshal(body, &eb) == nil && eb.Error.Code == "NotDeployed" {
			return nil, nil, fmt.Errorf("agent %q is not deployed on the platform at %s: deploy it first (POST .../agents/%s/deploy)", name, base, name)
		}
		if eb.Error.Code == "NotFound" {
			return nil, nil, fmt.Errorf("the platform at %s has no agent %q", base, name)
		}
		return nil, nil, unexpectedAnswer(base, res, body)
	default:
		return nil, nil, unexpectedAnswer(base, res, body)
	}
	var ea platform.EffectiveAgent
	if json.Unmarshal(body, &ea) != nil || ea.Name != name {
		return nil, nil, unexpectedAnswer(base, res, body)
	}
	var doc platform.EffectiveDocument
	dec := yaml.NewDecoder(strings.NewReader(ea.Document))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("the effective document of agent %q from the platform at %s does not parse: %s", name, base, bounded(err.Error()))
	}
	if doc.Kind != "agent" || doc.Name != name {
		return nil, nil, fmt.Errorf("the effective document from the platform at %s is not agent %q's", base, name)
	}
	if len(doc.Spec.Tools) > maxEffectiveTools || len(doc.Spec.Toolsets) > agentfile.MaxToolsets {
		return nil, nil, fmt.Errorf("the effective document of agent %q has %d toolsets and %d tools: more than this runner takes (%d, %d)",
			name, len(doc.Spec.Toolsets), len(doc.Spec.Tools), agentfile.MaxToolsets, maxEffectiveTools)
	}
	return &ea, &doc, nil
}

// readSecrets reads a --secrets file: a JSON object whose keys are the
// references of an effective document, without ${secret: and } (such as
// agent/finance/quote/api_key), and whose values are the secrets.
func readSecrets(path string) (map[string]any, error) {
	if path == "" {
		return map[string]any{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretsFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSecretsFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxSecretsFile)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// Its error would quote the file, which holds secrets.
	if dec.Decode(&m) != nil || m == nil {
		return nil, fmt.Errorf("%s must be a JSON object of references to values", path)
	}
	for k, v := range m {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				m[k] = i
			} else {
				m[k], _ = n.Float64()
			}
		}
	}
	return m, nil
}

// deployedAgentFile makes the agent file a runner serves from an
// effective document: one package entry per toolset, configured with the
// tools' values and excluding the tools the document does not list.
// Toolset secrets are left to the runner's store or runtimes, which have
// the toolset's configuration; the agent's own secrets come from
// secrets, and one missing there is an error naming each reference.
func deployedAgentFile(base *url.URL, ea *platform.EffectiveAgent, doc *platform.EffectiveDocument, pkgs agentfile.Packages, secrets map[string]any, stderr io.Writer) (*agentfile.File, error) {
	f := &agentfile.File{Filename: base.JoinPath("api/v1/platform/agents", doc.Name, "effective").String(), Name: doc.Name, Instructions: doc.Spec.SystemPrompt}
	listed := map[string]map[string]map[string]any{}
	for _, ts := range doc.Spec.Toolsets {
		if toolpkg.CheckName(ts) != nil {
			return nil, fmt.Errorf("%s: the toolset name %q is not valid", f.Filename, bounded(ts))
		}
		if _, dup := listed[ts]; dup {
			return nil, fmt.Errorf("%s: the toolset %q is listed twice", f.Filename, ts)
		}
		listed[ts] = map[string]map[string]any{}
	}
	for _, sk := range doc.Spec.Skills {
		f.Skills = append(f.Skills, agentfile.SkillRef{Name: sk})
	}
	var missing []string
	for _, t := range doc.Spec.Tools {
		if t.ToolType != "builtin" {
			return nil, fmt.Errorf("%s: tool %q is of type %q; this runner serves builtin tools only", f.Filename, bounded(t.ToolName), bounded(t.ToolType))
		}
		ts, tool, ok := strings.Cut(t.ToolName, "__")
		if !ok || listed[ts] == nil || tool == "" {
			return nil, fmt.Errorf("%s: tool %q is not named <toolset>__<tool> after one of the agent's toolsets", f.Filename, bounded(t.ToolName))
		}
		if _, dup := listed[ts][tool]; dup {
			return nil, fmt.Errorf("%s: tool %q is listed twice", f.Filename, t.ToolName)
		}
		cfg := map[string]any{}
		for k, v := range t.ToolConfig {
			s, isText := v.(string)
			switch {
			case isText && strings.HasPrefix(s, toolsetSecretPrefix):
				// The toolset's own: the store or runtimes have it.
			case isText && strings.HasPrefix(s, agentSecretPrefix) && strings.HasSuffix(s, "}"):
				ref := strings.TrimSuffix(strings.TrimPrefix(s, "${secret:"), "}")
				// Only the tool's own key's secret: a reference to
				// another's would hand that secret to this tool.
				if s != platform.AgentSecretRef(ts, tool, k) {
					return nil, fmt.Errorf("%s: tool %q: the value of %q refers to the secret %s, not its own", f.Filename, t.ToolName, bounded(k), bounded(ref))
				}
				val, ok := secrets[ref]
				if !ok {
					missing = append(missing, ref)
					continue
				}
				cfg[k] = val
			default:
				cfg[k] = fileValue(v)
			}
		}
		listed[ts][tool] = cfg
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("%s: the agent's secrets %s are not given: put each in the --secrets file (a JSON object keyed by these references)", f.Filename, strings.Join(missing, ", "))
	}
	for _, ts := range doc.Spec.Toolsets {
		cfg := toolpkg.Config{Tools: map[string]map[string]any{}}
		for tool, values := range listed[ts] {
			if len(values) > 0 {
				cfg.Tools[tool] = values
			}
		}
		if pkgs != nil {
			info, err := pkgs.Info(ts)
			if err != nil {
				return nil, fmt.Errorf("%s: toolset %q: %w", f.Filename, ts, err)
			}
			if v := ea.Versions[ts]; v != 0 && info.Serving != v {
				fmt.Fprintf(stderr, "toolset serve: warning: toolset %q: the platform deployed version %d, this runner has version %d\n", ts, v, info.Serving)
			}
			have := map[string]bool{}
			for _, t := range info.Tools {
				have[t.Name] = true
				if _, ok := listed[ts][t.Name]; !ok {
					cfg.Exclude = append(cfg.Exclude, t.Name)
				}
			}
			for _, tool := range sortedKeys(listed[ts]) {
				if !have[tool] {
					return nil, fmt.Errorf("%s: the platform deployed tool %s__%s, which this runner's toolset %q (version %d) does not have", f.Filename, ts, tool, ts, info.Serving)
				}
			}
		}
		f.Toolsets = append(f.Toolsets, agentfile.Entry{Package: &agentfile.Package{Name: ts, Config: cfg}})
	}
	return f, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// packages returns the source's toolsets as agentfile.Packages; nil for
// neither a store nor a broker.
func (p *packageSource) packages() agentfile.Packages {
	switch {
	case p == nil:
	case p.store != nil:
		return storePackages{p.store}
	case p.mesh != nil:
		return p.mesh.packages()
	}
	return nil
}

// storePackages are a store's toolsets as agentfile.Packages.
type storePackages struct{ s *toolpkg.Store }

func (p storePackages) Info(name string) (toolpkg.Info, error) { return p.s.Info(name) }

// PackageNames implements agentfile.PackageLister.
func (p storePackages) PackageNames() []string { return agentfile.StoreNames(p.s) }

func (p storePackages) ToolsetWithConfig(name string, cfg toolpkg.Config) toolset.Toolset {
	return p.s.ToolsetWithConfig(name, cfg)
}

// fileValue gives a value decoded from YAML the types of a parsed agent
// file's: int64 for integers, at every depth.
func fileValue(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case uint64:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = fileValue(c)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			out[k] = fileValue(c)
		}
		return out
	}
	return v
}
