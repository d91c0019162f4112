package toolpkg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
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
// itself; a tool may not declare them and an agent may not set them.
var ReservedConfigKeys = []string{"auth", "hil", "required_scopes"}

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// schemaDoc is the --schema output.
type schemaDoc struct {
	Tools json.RawMessage `json:"tools"`
}

type schemaTool struct {
	Description    *string         `json:"description"`
	Parameters     json.RawMessage `json:"parameters"`
	ConfigSchema   json.RawMessage `json:"config_schema"`
	TimeoutSeconds *json.Number    `json:"timeout_seconds"`
}

// parseSchemaOutput parses and checks the --schema output of the executable
// e. It returns the tools it could accept and one message per problem.
// Unknown fields are ignored, so that output made for a newer version of the
// format still loads.
func parseSchemaOutput(e Executable, out []byte) ([]ToolInfo, []string) {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
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
	var tools []ToolInfo
	for i, name := range names {
		if !toolNamePattern.MatchString(name) {
			add("tool %q: invalid name; tool names must match ^[a-zA-Z0-9_-]{1,64}$", name)
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
		if st.Description == nil || strings.TrimSpace(*st.Description) == "" {
			add("tool %q: description is empty; the model needs one to know when to use the tool", name)
		} else {
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
				add("tool %q: timeout_seconds must be a positive integer, got %s", name, st.TimeoutSeconds.String())
			} else {
				ti.TimeoutSeconds = int(t)
			}
		}
		cfg, cprobs := parseConfigSchema(st.ConfigSchema)
		for _, p := range cprobs {
			add("tool %q: config_schema: %s", name, p)
		}
		ti.Config = cfg
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
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft2020)
	if err := c.AddResource("mem:///parameters.json", doc); err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %v", err)
	}
	if _, err := c.Compile("mem:///parameters.json"); err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %v", err)
	}
	if _, err := schemaFromJSON(raw); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func parseConfigSchema(raw json.RawMessage) ([]ConfigField, []string) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, []string{fmt.Sprintf("must be a list of {key, type, ...} entries (%v)", err)}
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
			where = fmt.Sprintf("key %q", f.Key)
		}
		switch {
		case f.Key == "":
			probs = append(probs, where+": key is empty")
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
			probs = append(probs, fmt.Sprintf("%s: type %q is not supported; use string, integer or boolean", where, f.Type))
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
			return nil, nil, fmt.Errorf("key %q appears twice", k)
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

// schemaFromJSON converts a JSON Schema document into a *jsonschema.Schema
// that encodes back to the same document: keywords the struct has no field
// for (and a "type" given as a list) are kept in Extras, and the order of
// properties is kept.
func schemaFromJSON(raw json.RawMessage) (*jsonschema.Schema, error) {
	return convertSchema(raw, 0)
}

const maxSchemaDepth = 64

var (
	singleSchemaKeys = map[string]func(*jsonschema.Schema, *jsonschema.Schema){
		"not":                  func(s, v *jsonschema.Schema) { s.Not = v },
		"if":                   func(s, v *jsonschema.Schema) { s.If = v },
		"then":                 func(s, v *jsonschema.Schema) { s.Then = v },
		"else":                 func(s, v *jsonschema.Schema) { s.Else = v },
		"items":                func(s, v *jsonschema.Schema) { s.Items = v },
		"contains":             func(s, v *jsonschema.Schema) { s.Contains = v },
		"additionalProperties": func(s, v *jsonschema.Schema) { s.AdditionalProperties = v },
		"propertyNames":        func(s, v *jsonschema.Schema) { s.PropertyNames = v },
		"contentSchema":        func(s, v *jsonschema.Schema) { s.ContentSchema = v },
	}
	listSchemaKeys = map[string]func(*jsonschema.Schema, []*jsonschema.Schema){
		"allOf":       func(s *jsonschema.Schema, v []*jsonschema.Schema) { s.AllOf = v },
		"anyOf":       func(s *jsonschema.Schema, v []*jsonschema.Schema) { s.AnyOf = v },
		"oneOf":       func(s *jsonschema.Schema, v []*jsonschema.Schema) { s.OneOf = v },
		"prefixItems": func(s *jsonschema.Schema, v []*jsonschema.Schema) { s.PrefixItems = v },
	}
	mapSchemaKeys = map[string]func(*jsonschema.Schema, map[string]*jsonschema.Schema){
		"$defs":             func(s *jsonschema.Schema, v map[string]*jsonschema.Schema) { s.Definitions = v },
		"dependentSchemas":  func(s *jsonschema.Schema, v map[string]*jsonschema.Schema) { s.DependentSchemas = v },
		"patternProperties": func(s *jsonschema.Schema, v map[string]*jsonschema.Schema) { s.PatternProperties = v },
	}
	// plainKeys are the keywords of jsonschema.Schema that hold no schema.
	plainKeys = map[string]bool{
		"$schema": true, "$id": true, "$anchor": true, "$ref": true, "$dynamicRef": true, "$comment": true,
		"enum": true, "const": true, "multipleOf": true, "maximum": true, "exclusiveMaximum": true,
		"minimum": true, "exclusiveMinimum": true, "maxLength": true, "minLength": true, "pattern": true,
		"maxItems": true, "minItems": true, "uniqueItems": true, "maxContains": true, "minContains": true,
		"maxProperties": true, "minProperties": true, "required": true, "dependentRequired": true,
		"format": true, "contentEncoding": true, "contentMediaType": true, "title": true,
		"description": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
		"examples": true,
	}
)

func convertSchema(raw json.RawMessage, depth int) (*jsonschema.Schema, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxSchemaDepth)
	}
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		t := *jsonschema.TrueSchema
		return &t, nil
	case "false":
		f := *jsonschema.FalseSchema
		return &f, nil
	}
	keys, vals, err := orderedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("a schema must be an object or a boolean (%v)", err)
	}
	s := &jsonschema.Schema{}
	plain := map[string]json.RawMessage{}
	for i, k := range keys {
		v := vals[i]
		switch {
		case k == "type":
			var t string
			if json.Unmarshal(v, &t) == nil {
				s.Type = t
			} else {
				setExtra(s, k, v)
			}
		case k == "properties":
			names, subs, err := orderedObject(v)
			if err != nil {
				return nil, fmt.Errorf("properties: %v", err)
			}
			om := orderedmap.New[string, *jsonschema.Schema]()
			for j, name := range names {
				sub, err := convertSchema(subs[j], depth+1)
				if err != nil {
					return nil, fmt.Errorf("properties.%s: %w", name, err)
				}
				om.Set(name, sub)
			}
			s.Properties = om
		case singleSchemaKeys[k] != nil:
			sub, err := convertSchema(v, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			singleSchemaKeys[k](s, sub)
		case listSchemaKeys[k] != nil:
			var items []json.RawMessage
			if err := json.Unmarshal(v, &items); err != nil {
				return nil, fmt.Errorf("%s: must be a list of schemas", k)
			}
			list := make([]*jsonschema.Schema, len(items))
			for j, it := range items {
				if list[j], err = convertSchema(it, depth+1); err != nil {
					return nil, fmt.Errorf("%s[%d]: %w", k, j, err)
				}
			}
			listSchemaKeys[k](s, list)
		case mapSchemaKeys[k] != nil:
			var m map[string]json.RawMessage
			if err := json.Unmarshal(v, &m); err != nil {
				return nil, fmt.Errorf("%s: must be an object of schemas", k)
			}
			out := make(map[string]*jsonschema.Schema, len(m))
			for name, it := range m {
				if out[name], err = convertSchema(it, depth+1); err != nil {
					return nil, fmt.Errorf("%s.%s: %w", k, name, err)
				}
			}
			mapSchemaKeys[k](s, out)
		case plainKeys[k]:
			plain[k] = v
		default:
			setExtra(s, k, v)
		}
	}
	if len(plain) > 0 {
		b, err := json.Marshal(plain)
		if err != nil {
			return nil, err
		}
		// Decode into a copy so that the subschemas set above stay.
		var p jsonschema.Schema
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("invalid keyword value: %v", err)
		}
		copyPlain(s, &p)
	}
	return s, nil
}

func setExtra(s *jsonschema.Schema, k string, v json.RawMessage) {
	if s.Extras == nil {
		s.Extras = map[string]any{}
	}
	s.Extras[k] = v
}

// copyPlain copies the keywords that hold no schema from p to s.
func copyPlain(s, p *jsonschema.Schema) {
	s.Version, s.ID, s.Anchor, s.Ref, s.DynamicRef, s.Comments = p.Version, p.ID, p.Anchor, p.Ref, p.DynamicRef, p.Comments
	s.Enum, s.Const, s.MultipleOf, s.Maximum, s.ExclusiveMaximum = p.Enum, p.Const, p.MultipleOf, p.Maximum, p.ExclusiveMaximum
	s.Minimum, s.ExclusiveMinimum, s.MaxLength, s.MinLength, s.Pattern = p.Minimum, p.ExclusiveMinimum, p.MaxLength, p.MinLength, p.Pattern
	s.MaxItems, s.MinItems, s.UniqueItems, s.MaxContains, s.MinContains = p.MaxItems, p.MinItems, p.UniqueItems, p.MaxContains, p.MinContains
	s.MaxProperties, s.MinProperties, s.Required, s.DependentRequired = p.MaxProperties, p.MinProperties, p.Required, p.DependentRequired
	s.Format, s.ContentEncoding, s.ContentMediaType, s.Title, s.Description = p.Format, p.ContentEncoding, p.ContentMediaType, p.Title, p.Description
	s.Default, s.Deprecated, s.ReadOnly, s.WriteOnly, s.Examples = p.Default, p.Deprecated, p.ReadOnly, p.WriteOnly, p.Examples
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
