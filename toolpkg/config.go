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

// configFor checks config against the config schema of every tool and
// returns the tool_config of each tool (its declared keys, defaults
// applied) and the secrets to hide from what the tools return: the values
// and defaults of every key that any tool of the package declares secret.
func configFor(name string, tools []ToolInfo, config map[string]any) (map[string]map[string]any, *secrets, error) {
	var probs []string
	declared := map[string]ConfigField{}
	sec := &secrets{keys: map[string]bool{}}
	for _, t := range tools {
		for _, f := range t.Config {
			if _, ok := declared[f.Key]; !ok || f.Secret {
				declared[f.Key] = f
			}
			if f.Secret {
				sec.keys[f.Key] = true
			}
		}
	}
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, ok := declared[k]
		switch {
		case contains(ReservedConfigKeys, k):
			probs = append(probs, fmt.Sprintf("%q is reserved (%s) and not supported by this runtime", k, strings.Join(ReservedConfigKeys, ", ")))
		case !ok:
			probs = append(probs, fmt.Sprintf("%q is not a configuration key of any tool; known keys: %s", k, knownKeys(declared)))
		case sec.keys[k]:
			// Hide it even when it turns out to be of the wrong type.
			sec.add(config[k])
		}
	}
	out := make(map[string]map[string]any, len(tools))
	reported := map[string]bool{}
	for _, t := range tools {
		tc := map[string]any{}
		for _, f := range t.Config {
			// A key one tool declares secret is secret for all of them.
			f.Secret = f.Secret || sec.keys[f.Key]
			v, ok := config[f.Key]
			if !ok || v == nil {
				switch {
				case f.Default != nil:
					tc[f.Key] = f.Default
					if f.Secret {
						sec.add(f.Default)
					}
				case f.Required && !reported[f.Key]:
					reported[f.Key] = true
					probs = append(probs, fmt.Sprintf("%q is required by tool %q: %s%s", f.Key, t.Name, f.Type, describe(f.Description)))
				}
				continue
			}
			cv, msg := convertConfigValue(f, v)
			if msg != "" {
				if !reported[f.Key] {
					reported[f.Key] = true
					probs = append(probs, fmt.Sprintf("%q: %s", f.Key, msg))
				}
				continue
			}
			tc[f.Key] = cv
		}
		out[t.Name] = tc
	}
	if len(probs) > 0 {
		sort.Strings(probs)
		return nil, nil, &ConfigError{Toolset: name, Problems: probs}
	}
	return out, sec, nil
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
