package toolpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
)

// ToolInfo is one tool found by discovery.
type ToolInfo struct {
	// Name is the tool's name inside the package; the model sees
	// <toolset>__<name>.
	Name string `json:"name"`
	// Executable is the key of the manifest entry that exposes the tool.
	Executable string `json:"executable"`
	// Description is what the model reads.
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments.
	Parameters json.RawMessage `json:"parameters"`
	// Config lists the per-agent configuration the tool takes.
	Config []ConfigField `json:"config_schema,omitempty"`
	// TimeoutSeconds is the call timeout: the tool's own, else the
	// manifest entry's.
	TimeoutSeconds int `json:"timeout_seconds"`
	// ArtifactParams are the parameters that take artifact names, which
	// the runtime loads into input/ before a call (artifact_params).
	ArtifactParams map[string]ArtifactParam `json:"artifact_params,omitempty"`
	// Auth is the schema's auth entry, as declared: a tool that declares
	// one is passed the run's credentials (see [Auth]).
	Auth json.RawMessage `json:"auth,omitempty"`
	// Instructions is text for the system prompt while the tool is
	// available ([Toolset.Instructions]).
	Instructions string `json:"instructions,omitempty"`
	// Effects are what the schema's annotations declare the tool's calls
	// do, MCP's hints read with MCP's defaults for those left out; nil
	// when the schema has no annotations.
	Effects *toolset.Effects `json:"effects,omitempty"`
}

// schemaAnnotations are a tool schema's annotations: MCP's hints.
type schemaAnnotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint"`
	DestructiveHint *bool `json:"destructiveHint"`
	IdempotentHint  *bool `json:"idempotentHint"`
	OpenWorldHint   *bool `json:"openWorldHint"`
}

// effects reads the hints as MCP does: not read-only, destructive, not
// idempotent and open world unless they say otherwise.
func (a *schemaAnnotations) effects() *toolset.Effects {
	e := toolset.UnknownEffects
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&e.ReadOnly, a.ReadOnlyHint)
	set(&e.Destructive, a.DestructiveHint)
	set(&e.Idempotent, a.IdempotentHint)
	set(&e.OpenWorld, a.OpenWorldHint)
	return &e
}

// Timeout returns the call timeout.
func (t ToolInfo) Timeout() time.Duration { return time.Duration(t.TimeoutSeconds) * time.Second }

// ConfigField is one per-agent configuration value a tool takes.
type ConfigField struct {
	Key         string `json:"key"`
	Type        string `json:"type"` // string, integer or boolean
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	// Secret values never appear in errors or logs.
	Secret  bool `json:"secret,omitempty"`
	Default any  `json:"default,omitempty"`
}

// ReservedConfigKeys are configuration keys the platform format keeps for
// itself: a tool may not declare them, and the toolset's values and an
// agent's overlay give them their meaning (hil, required_scopes and auth;
// see [Config]).
var ReservedConfigKeys = []string{"auth", "hil", "required_scopes"}

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// What a package's --schema output may hold, beyond the cap on its size.
const (
	// MaxTools bounds the tools a package exposes, all executables
	// together: each is listed to the model every turn.
	MaxTools = 1000
	// MaxDescriptionBytes bounds a tool's description, which the model
	// reads every turn.
	MaxDescriptionBytes = 32 << 10
	// MaxConfigFields bounds the entries of a tool's config_schema.
	MaxConfigFields = 64
	// MaxConfigKeyBytes bounds a configuration key.
	MaxConfigKeyBytes = 128
	// MaxConfigDefaultBytes bounds the text of a configuration default
	// (each secret one is searched for in everything the tools return).
	MaxConfigDefaultBytes = 4096
	// MaxSecretBytes bounds the secret configuration keys and their
	// defaults, all tools of a package together: each is searched for in
	// everything the tools return.
	MaxSecretBytes = 256 << 10
	// MaxToolDefinitionBytes bounds the definitions of a package's
	// tools, all executables together, as JSON: the store keeps them in
	// the toolset's state.json and reads them back at each Open.
	MaxToolDefinitionBytes = 16 << 20
)

// schemaDoc is the --schema output.
type schemaDoc struct {
	Tools json.RawMessage `json:"tools"`
}

type schemaTool struct {
	Description    *string         `json:"description"`
	Parameters     json.RawMessage `json:"parameters"`
	ConfigSchema   json.RawMessage `json:"config_schema"`
	TimeoutSeconds *json.Number    `json:"timeout_seconds"`
	ArtifactParams json.RawMessage `json:"artifact_params"`
	Auth           json.RawMessage `json:"auth"`
	Instructions   *string         `json:"instructions"`
	Annotations    json.RawMessage `json:"annotations"`
}

// parseSchemaOutput parses and checks the --schema output of the executable
// e. It returns the tools it could accept and one message per problem.
// Unknown fields are ignored, so that output made for a newer version of the
// format still loads.
func parseSchemaOutput(e Executable, out []byte) ([]ToolInfo, []string) {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, cutProblem(fmt.Sprintf(format, args...))) }
	var doc schemaDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, []string{fmt.Sprintf("--schema printed invalid JSON (%v); output starts %s", err, quoteStart(out, 120))}
	}
	names, raws, err := orderedObject(doc.Tools)
	if err != nil {
		return nil, []string{fmt.Sprintf(`--schema output: "tools" must be an object mapping tool names to their schemas (%v)`, err)}
	}
	if len(names) == 0 {
		return nil, []string{`--schema output lists no tools`}
	}
	if len(names) > MaxTools {
		return nil, []string{fmt.Sprintf("--schema output lists %d tools; a package may expose at most %d", len(names), MaxTools)}
	}
	var tools []ToolInfo
	for i, name := range names {
		if !toolNamePattern.MatchString(name) {
			add("tool %s: invalid name; tool names must match ^[a-zA-Z0-9_-]{1,64}$", quoteShort(name))
			continue
		}
		var st schemaTool
		dec := json.NewDecoder(bytes.NewReader(raws[i]))
		dec.UseNumber()
		if err := dec.Decode(&st); err != nil {
			add("tool %q: invalid schema entry: %v", name, err)
			continue
		}
		ti := ToolInfo{Name: name, Executable: e.Key, TimeoutSeconds: e.TimeoutSeconds}
		n := len(probs)
		switch {
		case st.Description == nil || strings.TrimSpace(*st.Description) == "":
			add("tool %q: description is empty; the model needs one to know when to use the tool", name)
		case len(*st.Description) > MaxDescriptionBytes:
			add("tool %q: description is %d bytes; at most %d are allowed", name, len(*st.Description), MaxDescriptionBytes)
		default:
			ti.Description = *st.Description
		}
		params, err := checkParameters(st.Parameters)
		if err != nil {
			add("tool %q: parameters: %v", name, err)
		}
		ti.Parameters = params
		if st.TimeoutSeconds != nil {
			t, err := st.TimeoutSeconds.Int64()
			if err != nil || t <= 0 || t > 1<<31 {
				add("tool %q: timeout_seconds must be a positive integer, got %s", name, strings.Trim(quoteShort(st.TimeoutSeconds.String()), `"`))
			} else {
				ti.TimeoutSeconds = int(t)
			}
		}
		if st.Instructions != nil {
			if len(*st.Instructions) > MaxDescriptionBytes {
				add("tool %q: instructions are %d bytes; at most %d are allowed", name, len(*st.Instructions), MaxDescriptionBytes)
			} else {
				ti.Instructions = strings.TrimSpace(strings.ToValidUTF8(*st.Instructions, "\uFFFD"))
			}
		}
		cfg, cprobs := parseConfigSchema(st.ConfigSchema)
		for _, p := range cprobs {
			add("tool %q: config_schema: %s", name, p)
		}
		ti.Config = cfg
		ap, aprobs := parseArtifactParams(st.ArtifactParams)
		for _, p := range aprobs {
			add("tool %q: artifact_params: %s", name, p)
		}
		ti.ArtifactParams = ap
		if a := bytes.TrimSpace(st.Auth); len(a) > 0 && string(a) != "null" && string(a) != "false" {
			if len(a) > maxAuthSchemaBytes {
				add("tool %q: auth is %d bytes; at most %d are allowed", name, len(a), maxAuthSchemaBytes)
			} else {
				ti.Auth = json.RawMessage(a)
			}
		}
		if a := bytes.TrimSpace(st.Annotations); len(a) > 0 && string(a) != "null" {
			var ann schemaAnnotations
			if err := json.Unmarshal(a, &ann); err != nil {
				add("tool %q: annotations must be an object of boolean hints (readOnlyHint, destructiveHint, idempotentHint, openWorldHint): %v", name, err)
			} else {
				ti.Effects = ann.effects()
			}
		}
		if len(probs) == n {
			tools = append(tools, ti)
		}
	}
	return tools, probs
}

// checkParameters checks that raw is a JSON Schema for an arguments
// object, and returns it (an empty object schema when absent).
func checkParameters(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("must be a JSON Schema object (%v)", err)
	}
	if t, ok := top["type"]; ok && t != "object" {
		return nil, fmt.Errorf(`the arguments must be an object ("type": "object"), got "type": %v`, compactJSON(t))
	}
	// The core parses and compiles it as it will every call's arguments:
	// references outside the document refused, nesting, pattern sizes and
	// validation cost bounded, so that a hostile package's schema cannot
	// make discovery, or any later call, slow.
	s, err := toolset.ParseSchema(raw)
	if err != nil {
		return nil, err
	}
	if err := toolset.NewRawTool("parameters", "", s, refuseAll).Err(); err != nil {
		return nil, errors.Unwrap(err) // the schema's problem, without the stand-in tool's name
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// refuseAll is the handler of the tool checkParameters compiles a schema
// with; it is never called.
func refuseAll(context.Context, json.RawMessage) (any, error) {
	return nil, errors.New("not a tool")
}

func parseConfigSchema(raw json.RawMessage) ([]ConfigField, []string) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, []string{fmt.Sprintf("must be a list of {key, type, ...} entries (%v)", err)}
	}
	if len(entries) > MaxConfigFields {
		return nil, []string{fmt.Sprintf("has %d entries; at most %d are allowed", len(entries), MaxConfigFields)}
	}
	var out []ConfigField
	var probs []string
	seen := map[string]bool{}
	for i, e := range entries {
		var f ConfigField
		dec := json.NewDecoder(bytes.NewReader(e))
		dec.UseNumber()
		if err := dec.Decode(&f); err != nil {
			probs = append(probs, fmt.Sprintf("entry %d: %v", i, err))
			continue
		}
		where := fmt.Sprintf("entry %d", i)
		if f.Key != "" {
			where = "key " + quoteShort(f.Key)
		}
		switch {
		case f.Key == "":
			probs = append(probs, where+": key is empty")
			continue
		case len(f.Key) > MaxConfigKeyBytes:
			probs = append(probs, fmt.Sprintf("%s: the key is %d bytes; at most %d are allowed", where, len(f.Key), MaxConfigKeyBytes))
			continue
		case contains(ReservedConfigKeys, f.Key):
			probs = append(probs, fmt.Sprintf("%s is reserved (%s are reserved keys)", where, strings.Join(ReservedConfigKeys, ", ")))
			continue
		case seen[f.Key]:
			probs = append(probs, where+": declared twice")
			continue
		}
		seen[f.Key] = true
		switch f.Type {
		case "string", "integer", "boolean":
		default:
			probs = append(probs, fmt.Sprintf("%s: type %s is not supported; use string, integer or boolean", where, quoteShort(f.Type)))
			continue
		}
		if d, ok := f.Default.(string); ok && len(d) > MaxConfigDefaultBytes {
			probs = append(probs, fmt.Sprintf("%s: the default is %d bytes; at most %d are allowed", where, len(d), MaxConfigDefaultBytes))
			continue
		}
		if f.Default != nil {
			v, msg := convertConfigValue(f, f.Default)
			if msg != "" {
				probs = append(probs, fmt.Sprintf("%s: default %s", where, msg))
				continue
			}
			f.Default = v
		}
		out = append(out, f)
	}
	return out, probs
}

// maxProblemBytes bounds one discovery problem: its text may come from
// a package's output.
const maxProblemBytes = 8192

// maxProblems bounds the discovery problems kept for a toolset.
const maxProblems = 100

// cutProblem cuts a problem to maxProblemBytes.
func cutProblem(p string) string {
	if len(p) <= maxProblemBytes {
		return p
	}
	kept := textcut.Prefix(p, maxProblemBytes)
	return kept + fmt.Sprintf("%s [%d bytes cut]", textcut.Ellipsis, len(p)-len(kept))
}

// capProblems keeps the first maxProblems problems and counts the rest.
func capProblems(probs []string) []string {
	if len(probs) <= maxProblems {
		return probs
	}
	return append(probs[:maxProblems:maxProblems], fmt.Sprintf("and %d more problems", len(probs)-maxProblems))
}

// orderedObject decodes a JSON object, keeping its keys' order.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("got %v", tok)
	}
	var keys []string
	var vals []json.RawMessage
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if seen[k] {
			return nil, nil, fmt.Errorf("key %s appears twice", quoteShort(k))
		}
		seen[k] = true
		keys, vals = append(keys, k), append(vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("trailing data after the object")
	}
	return keys, vals, nil
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// quoteStart quotes the first n bytes of b for an error message.
func quoteStart(b []byte, n int) string {
	if len(b) == 0 {
		return "(nothing)"
	}
	if len(b) > n {
		return fmt.Sprintf("%q...", b[:n])
	}
	return fmt.Sprintf("%q", b)
}
