package toolpkg

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// ConfigError reports per-agent configuration values that do not match the
// config schema of a toolset's tools: unknown keys, missing required keys,
// values of the wrong type. Secret values never appear in it.
type ConfigError struct {
	// Toolset is the toolset's name.
	Toolset string
	// Problems lists every problem, sorted.
	Problems []string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("toolpkg: toolset %q: invalid configuration:\n  - %s", e.Toolset, strings.Join(e.Problems, "\n  - "))
}

// Config is the configuration of a packaged toolset for one agent, as the
// platform models it: the toolset's shared defaults, the agent's overlay
// nested by tool name, and the tools the agent does not get.
//
// Configuration reaches a tool through tool_config, and its reserved keys
// through the call's policies. [Store.ToolsetWithConfig] takes a
// [Config] as the platform models it ([Store.Toolset] takes the first
// part alone):
//
//   - Config.Toolset, the toolset's values (the platform's spec.config):
//     flat, each key declared by at least one tool, given to every tool
//     that declares it;
//   - Config.Tools, the agent's overlay (configValues), by tool name (the
//     name in the package), then key: each tool named must exist, each
//     key must be declared by that tool;
//   - Config.Exclude, tools the agent does not get (each must exist).
//
// Under both lies the store's own configuration of the toolset, set with
// [Store.SetConfig] (the platform's PATCH of a toolset's config): flat,
// the same keys as Config.Toolset, shared by every Toolset of the store,
// and picked up on the next turn. It is checked when set, against the
// serving version's config schemas (a key no tool declares, or a value
// of the wrong type, is a *ConfigError, and nothing changes; before any
// version is discovered it is kept unchecked), and again when a
// version is discovered: a version it does not fit fails, and the
// previous one serves on. It is bounded ([MaxStoredConfigBytes],
// [MaxStoredConfigDepth]) and kept in <toolset>/config.json, readable by
// the store's user alone. [Store.SetConfig] and [Store.Config] return it
// with each secret value (a key the schemas mark secret, and auth) shown
// as [RedactedValue]; sent back, that value keeps the stored secret. A
// value written while its key was secret, or before any version said,
// stays hidden (and is hidden as a secret in what tools return) until
// it is written again, whatever later versions declare; hil and
// required_scopes are never hidden once a version serves.
//
// Each tool gets the keys its own config_schema declares, with the
// overlay's value, else the toolset's, else the store's, else the
// schema's default (a nil
// value counts as unset). A value must be of the key's type: an integer
// may be any Go integer, a json.Number or an integral float64, and text,
// as forms send it, is converted ("7" for an integer, "true" for a
// boolean; [ParseConfigValue]). A tool missing a required value is left
// out of the list, with a warning in the store's log and the reason in
// [Toolset.Unavailable], and the other tools stay; when no tool is left,
// GetTools fails with a [*ConfigError]. Unknown keys and tools, wrong
// types and bad reserved values are a *ConfigError too, listing missing
// values as well. The configuration is checked when a version's tools are
// first built, and again when the store's configuration changes. Secret keys are passed like the others (see
// Secrets below).
//
// The reserved keys ([ReservedConfigKeys]), which no tool may declare,
// are read for each tool: auth from the overlay, else the toolset's
// values, else the store's; hil and required_scopes from all three, so
// that an agent may add approval and scopes but never lift those of a
// lower layer (hil is on when any sets it, and a run needs the scopes of
// every one):
//
//   - hil (true or false, or their text): the tool requires a human's
//     approval of each call through the core's approval policy
//     ([toolset.WithApprovalRequired]): a call returns a
//     [*toolset.ApprovalRequiredError] until the run records a decision;
//   - required_scopes (a list of names, or its text: a JSON list, or
//     names separated by commas or spaces; at most 64): the tool is shown
//     only in turns of runs that carry every one of them in the run value
//     [Scopes] (a []string, by key or by the name "scopes");
//   - auth: credentials for the tool, passed in tool_oauth_token and
//     tool_auth_headers: true or "run" passes the run's [Auth] value (a
//     *[Credentials], by key or by the name "auth"); an object
//     {"oauth_token": "...", "headers": {"Name": "value"}, "from_run":
//     true} gives the deployer's credentials, with the run's over them
//     when from_run is set. A tool whose schema declares auth gets the
//     run's credentials too. At most 64 headers and 16 KB; header names
//     must be valid and values hold no line break. Every credential is a
//     secret: hidden in what the tool returns and in errors, never logged.
//     A tool whose auth (its own, or the toolset's) and schema ask for
//     none gets none.
//
// Secrets: A configuration key that any tool of the package declares secret is
// secret for all of them. Its values, given to [Store.Toolset] or taken
// from defaults, are hidden, replaced by "[secret]", wherever a tool's
// output reaches the host: in a [*Result] (status, message, data and
// data_objects, and so [Result.ModelText]), in a [*ToolFailure]'s message,
// and in a [*ExecError]'s standard error and its preview of a malformed
// result.json; in what --schema --config prints (the tools' names,
// descriptions, instructions and parameters, and its standard error when
// it fails); and an artifact whose name holds one is not saved (the model
// is shown the names). They are found raw or JSON-escaped (once or twice); in JSON
// output, a member whose key is secret is hidden whatever its type (a
// boolean has no text to search for). A secret value never appears in a
// [*ConfigError], in [ParseConfigValue]'s errors or in the store's log.
// [Info.Tools] holds the declared defaults, secret ones included: hide
// them before showing an Info to someone who may not read them.
//
// The limits: values shorter than 3 bytes, and encodings a tool may
// choose (base64, hex, ...), are not found: hiding stops a tool that
// leaks by accident, not a package that means to reveal what it was
// given. Hiding costs time linear in the output, and the secret keys
// and defaults of a package are bounded ([MaxSecretBytes]). A tool reads
// its secrets from runner_args.json, which only its user can read; but
// outside bwrap every call's tools run as one user, so a tool of another
// package can read them (note 3 of [Mode]).
type Config struct {
	// Toolset holds the toolset-level values (the platform's
	// spec.config): flat, each given to every tool that declares its key.
	Toolset map[string]any
	// Tools is the agent's overlay (the platform's configValues): values
	// by tool name (the name in the package, without the toolset's
	// prefix), then by key. It wins over Toolset, which wins over the
	// schema's default.
	Tools map[string]map[string]any
	// Exclude names tools of the package the agent does not get.
	Exclude []string
}

// clone copies c deeply enough that the caller's maps can change.
func (c Config) clone() Config {
	out := Config{Toolset: make(map[string]any, len(c.Toolset)), Tools: make(map[string]map[string]any, len(c.Tools)),
		Exclude: append([]string(nil), c.Exclude...)}
	for k, v := range c.Toolset {
		out.Toolset[k] = v
	}
	for tool, m := range c.Tools {
		cm := make(map[string]any, len(m))
		for k, v := range m {
			cm[k] = v
		}
		out.Tools[tool] = cm
	}
	return out
}

// toolConfig is what the configuration gives one tool.
type toolConfig struct {
	values map[string]any // tool_config
	hil    bool           // calls need a human's approval
	scopes []string       // the run must carry every one
	auth   authConfig
}

// resolvedConfig is a toolset's configuration, checked, for one version.
type resolvedConfig struct {
	tools map[string]*toolConfig // by tool name; excluded and unavailable tools have none
	// unavailable says, by tool name, why a tool is left out: a required
	// key that has no value.
	unavailable map[string]string
	// missing lists, by tool name, the required keys without a value of
	// each tool left out.
	missing  map[string][]string
	excluded map[string]bool
	secrets  *secrets
}

// resolveConfig checks c against the config schema of every tool and
// returns each tool's configuration (precedence: the agent's overlay,
// then the toolset's values, then the schema's default; text given for
// an integer or a boolean is converted) and the secrets to hide from what
// the tools return: the values and defaults of every key that any tool of
// the package declares secret, and the credentials of auth.
//
// Unknown keys, overlays or exclusions naming no tool, and values of the
// wrong type are a *ConfigError. A tool missing a required value is left
// out, the others stay; when every tool is left out, that is a
// *ConfigError too.
//
// stored is the store's configuration of the toolset: the lowest layer,
// under c.Toolset, checked the same way; the values of its sealed keys
// are secrets whatever the tools declare.
func resolveConfig(name string, tools []ToolInfo, c Config, stored map[string]any, sealed map[string]bool) (*resolvedConfig, error) {
	var probs []string
	declared := map[string]ConfigField{}
	byTool := map[string]ToolInfo{}
	sec := &secrets{keys: map[string]bool{}}
	for _, t := range tools {
		byTool[t.Name] = t
		for _, f := range t.Config {
			if _, ok := declared[f.Key]; !ok || f.Secret {
				declared[f.Key] = f
			}
			if f.Secret {
				sec.keys[f.Key] = true
			}
		}
	}
	for k := range sealed {
		if _, ok := stored[k]; ok {
			sec.keys[k] = true
		}
	}
	rc := &resolvedConfig{tools: map[string]*toolConfig{}, unavailable: map[string]string{}, missing: map[string][]string{}, excluded: map[string]bool{}, secrets: sec}
	for _, k := range sortedKeys(stored) {
		_, ok := declared[k]
		switch {
		case contains(ReservedConfigKeys, k):
		case !ok:
			probs = append(probs, fmt.Sprintf("the store's configuration: %s is not a configuration key of any tool; known keys: %s", quoteShort(k), knownKeys(declared)))
		case sec.keys[k]:
			sec.add(stored[k])
		}
	}
	for _, k := range sortedKeys(c.Toolset) {
		_, ok := declared[k]
		switch {
		case contains(ReservedConfigKeys, k):
		case !ok:
			probs = append(probs, fmt.Sprintf("%q is not a configuration key of any tool; known keys: %s", k, knownKeys(declared)))
		case sec.keys[k]:
			// Hide it even when it turns out to be of the wrong type.
			sec.add(c.Toolset[k])
		}
	}
	for _, tool := range sortedKeys(c.Tools) {
		t, ok := byTool[tool]
		if !ok {
			probs = append(probs, fmt.Sprintf("the agent's configuration names tool %s, which the toolset does not have; its tools: %s", quoteShort(tool), toolNames(tools)))
			continue
		}
		own := map[string]bool{}
		for _, f := range t.Config {
			own[f.Key] = true
		}
		for _, k := range sortedKeys(c.Tools[tool]) {
			switch {
			case contains(ReservedConfigKeys, k):
			case !own[k]:
				probs = append(probs, fmt.Sprintf("tool %q: %s is not one of its configuration keys; its keys: %s", tool, quoteShort(k), fieldKeys(t.Config)))
			case sec.keys[k]:
				sec.add(c.Tools[tool][k])
			}
		}
	}
	for _, tool := range c.Exclude {
		if _, ok := byTool[tool]; !ok {
			probs = append(probs, fmt.Sprintf("the agent excludes tool %s, which the toolset does not have; its tools: %s", quoteShort(tool), toolNames(tools)))
			continue
		}
		rc.excluded[tool] = true
	}
	reported := map[string]bool{}
	report := func(key, msg string) {
		if !reported[key] {
			reported[key] = true
			probs = append(probs, msg)
		}
	}
	for _, t := range tools {
		if rc.excluded[t.Name] {
			continue
		}
		overlay := c.Tools[t.Name]
		pick := func(k string) (any, string) {
			if v, ok := overlay[k]; ok && v != nil {
				return v, fmt.Sprintf("tool %q: %q", t.Name, k)
			}
			if v, ok := c.Toolset[k]; ok && v != nil {
				return v, fmt.Sprintf("%q", k)
			}
			if v, ok := stored[k]; ok && v != nil {
				return v, fmt.Sprintf("the store's configuration: %q", k)
			}
			return nil, ""
		}
		tc := &toolConfig{values: map[string]any{}}
		var missing, missingKeys []string
		for _, f := range t.Config {
			// A key one tool declares secret is secret for all of them.
			f.Secret = f.Secret || sec.keys[f.Key]
			v, where := pick(f.Key)
			if v == nil {
				switch {
				case f.Default != nil:
					tc.values[f.Key] = f.Default
					if f.Secret {
						sec.add(f.Default)
					}
				case f.Required:
					missing = append(missing, fmt.Sprintf("%q is required by tool %q: %s%s", f.Key, t.Name, f.Type, describe(f.Description)))
					missingKeys = append(missingKeys, f.Key)
				}
				continue
			}
			cv, msg := coerceConfigValue(f, v)
			if msg != "" {
				report(where, fmt.Sprintf("%s: %s", where, msg))
				continue
			}
			if f.Secret {
				sec.add(cv)
			}
			tc.values[f.Key] = cv
		}
		// hil and required_scopes are read from both layers: the
		// agent's overlay may add approval and scopes, never lift those
		// of the toolset's configuration.
		type layer struct {
			v     any
			where string
		}
		layers := func(k string) []layer {
			var out []layer
			if v, ok := stored[k]; ok && v != nil {
				out = append(out, layer{v, fmt.Sprintf("the store's configuration: %q", k)})
			}
			if v, ok := c.Toolset[k]; ok && v != nil {
				out = append(out, layer{v, fmt.Sprintf("%q", k)})
			}
			if v, ok := overlay[k]; ok && v != nil {
				out = append(out, layer{v, fmt.Sprintf("tool %q: %q", t.Name, k)})
			}
			return out
		}
		for _, l := range layers("hil") {
			b, msg := reservedBool(l.v)
			if msg != "" {
				report(l.where, l.where+": "+msg)
			}
			tc.hil = tc.hil || b
		}
		for _, l := range layers("required_scopes") {
			scopes, msg := reservedScopes(l.v)
			if msg != "" {
				report(l.where, l.where+": "+msg)
			}
			for _, sc := range scopes {
				if !contains(tc.scopes, sc) {
					tc.scopes = append(tc.scopes, sc)
				}
			}
		}
		if v, where := pick("auth"); v != nil {
			a, msg := parseAuth(v, sec)
			if msg != "" {
				report(where, where+": "+msg)
			}
			tc.auth = a
		}
		tc.auth.fromRun = tc.auth.fromRun || len(t.Auth) > 0
		if len(missing) > 0 {
			rc.unavailable[t.Name] = strings.Join(missing, "; ")
			rc.missing[t.Name] = missingKeys
			continue
		}
		rc.tools[t.Name] = tc
	}
	// Missing values leave their tools out; when the configuration is
	// refused anyway, or no tool is left, they are problems too.
	if len(probs) > 0 || (len(rc.tools) == 0 && len(rc.unavailable) > 0) {
		for _, tool := range sortedKeys(rc.unavailable) {
			probs = append(probs, rc.unavailable[tool])
		}
	}
	if len(probs) > 0 {
		sort.Strings(probs)
		return nil, &ConfigError{Toolset: name, Problems: probs}
	}
	return rc, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func toolNames(tools []ToolInfo) string {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, strconv.Quote(t.Name))
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func fieldKeys(fs []ConfigField) string {
	if len(fs) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(fs))
	for _, f := range fs {
		keys = append(keys, strconv.Quote(f.Key))
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// coerceConfigValue is convertConfigValue for values that may come from
// a form as text: a string given for an integer or a boolean is parsed.
func coerceConfigValue(f ConfigField, v any) (any, string) {
	if s, ok := v.(string); ok && f.Type != "string" {
		cv, err := ParseConfigValue(f, s)
		if err != nil {
			if f.Secret {
				return nil, fmt.Sprintf("expected %s, got a secret value (not shown)", f.Type)
			}
			return nil, fmt.Sprintf("expected %s, got string %s", f.Type, quoteShort(s))
		}
		return cv, ""
	}
	return convertConfigValue(f, v)
}

// reservedBool reads hil: a boolean, or its text.
func reservedBool(v any) (bool, string) {
	switch x := v.(type) {
	case bool:
		return x, ""
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		if err == nil {
			return b, ""
		}
	}
	return false, fmt.Sprintf("expected true or false, got %s %s", jsonKind(v), quoteShort(compactJSON(v)))
}

// maxScopes bounds required_scopes.
const maxScopes = 64

// reservedScopes reads required_scopes: a list of strings, or text
// (a JSON list, or names separated by commas or spaces).
func reservedScopes(v any) ([]string, string) {
	var list []string
	switch x := v.(type) {
	case []string:
		list = x
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Sprintf("expected a list of scope names, got a list holding %s", jsonKind(e))
			}
			list = append(list, s)
		}
	case string:
		if t := strings.TrimSpace(x); strings.HasPrefix(t, "[") {
			if err := json.Unmarshal([]byte(t), &list); err != nil {
				return nil, fmt.Sprintf("expected a JSON list of scope names: %v", err)
			}
		} else {
			list = strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
		}
	default:
		return nil, fmt.Sprintf("expected a list of scope names, got %s", jsonKind(v))
	}
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) > maxScopes {
		return nil, fmt.Sprintf("lists %d scopes; at most %d are allowed", len(out), maxScopes)
	}
	return out, ""
}

func describe(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func knownKeys(declared map[string]ConfigField) string {
	if len(declared) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(declared))
	for k := range declared {
		keys = append(keys, strconv.Quote(k))
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// convertConfigValue checks v against the field's type and returns it in
// its JSON form (string, int64 or bool). The message never shows a secret
// value.
func convertConfigValue(f ConfigField, v any) (any, string) {
	show := func() string {
		if f.Secret {
			return "a secret value (not shown)"
		}
		return fmt.Sprintf("%s %s", jsonKind(v), compactJSON(v))
	}
	switch f.Type {
	case "string":
		if s, ok := v.(string); ok {
			return s, ""
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b, ""
		}
	case "integer":
		if i, ok := toInt(v); ok {
			return i, ""
		}
	}
	return nil, fmt.Sprintf("expected %s, got %s", f.Type, show())
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
		return 0, false
	case float32:
		return toInt(float64(x))
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rv.Uint() <= math.MaxInt64 {
			return int64(rv.Uint()), true
		}
	}
	return 0, false
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// ParseConfigValue converts the text form of a value (from a command line
// or an environment variable) to the type of the field: integers and
// booleans are parsed, strings kept. The error never shows a secret value.
func ParseConfigValue(f ConfigField, s string) (any, error) {
	switch f.Type {
	case "integer":
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			if f.Secret {
				return nil, fmt.Errorf("%q: expected an integer (value not shown: secret)", f.Key)
			}
			return nil, fmt.Errorf("%q: expected an integer, got %q", f.Key, s)
		}
		return i, nil
	case "boolean":
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			if f.Secret {
				return nil, fmt.Errorf("%q: expected true or false (value not shown: secret)", f.Key)
			}
			return nil, fmt.Errorf("%q: expected true or false, got %q", f.Key, s)
		}
		return b, nil
	}
	return s, nil
}
