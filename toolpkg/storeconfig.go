package toolpkg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/gotoolset/toolset/internal/atomicfile"
)

// Bounds of a toolset's stored configuration ([Store.SetConfig]).
const (
	// MaxStoredConfigBytes bounds the stored configuration, and a patch,
	// as JSON.
	MaxStoredConfigBytes = 64 << 10
	// MaxStoredConfigDepth bounds how deep values nest (a flat object of
	// strings is depth 1; auth's headers are depth 3).
	MaxStoredConfigDepth = 8
)

// RedactedValue replaces each secret value in what [Store.SetConfig] and
// [Store.Config] return. Given back in a patch for a secret key, it
// keeps the stored value.
const RedactedValue = "<REDACTED>"

// configFile is the stored configuration's file in a toolset's folder.
const configFile = "config.json"

func (s *Store) configPath(name string) string { return filepath.Join(s.dir, name, configFile) }

// configFileData is config.json: the values, and the keys whose value
// stays hidden whatever the serving version declares (see
// [Store.SetConfig]).
type configFileData struct {
	Values json.RawMessage `json:"values"`
	Sealed []string        `json:"sealed"`
}

// maxConfigFile bounds config.json: the values, and at most as many
// bytes again for the list of their sealed keys.
const maxConfigFile = 2*MaxStoredConfigBytes + 64

// loadConfig reads a toolset's stored configuration and its sealed keys;
// nil when there is none or it cannot be read (said in the log, without
// its content).
func (s *Store) loadConfig(name string) (map[string]any, map[string]bool) {
	data, err := readWorkFile(filepath.Join(s.dir, name), configFile, maxConfigFile+1) // and its newline
	if errors.Is(err, errNoFile) {
		return nil, nil
	}
	var cfg map[string]any
	var sealed map[string]bool
	if err == nil {
		cfg, sealed, err = decodeConfigFile(data)
	}
	if err != nil {
		// The error may quote the file, which holds secrets: not logged.
		s.log.Error("toolpkg: the stored configuration cannot be read and is ignored until it is set again", "toolset", name, "file", configFile)
		return nil, nil
	}
	return cfg, sealed
}

// decodeConfigFile decodes config.json. A file of a flat object of
// values, as written before keys were sealed, has every key sealed: no
// one can tell any more which were secret.
func decodeConfigFile(data []byte) (map[string]any, map[string]bool, error) {
	var f configFileData
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil || len(f.Values) == 0 || dec.More() {
		cfg, err := decodeStoredConfig(data)
		if err != nil {
			return nil, nil, err
		}
		sealed := make(map[string]bool, len(cfg))
		for k := range cfg {
			sealed[k] = sealable(k)
		}
		return cfg, sealed, nil
	}
	cfg, err := decodeStoredConfig(f.Values)
	if err != nil {
		return nil, nil, err
	}
	sealed := map[string]bool{}
	for _, k := range f.Sealed {
		if _, ok := cfg[k]; ok {
			sealed[k] = true
		}
	}
	return cfg, sealed, nil
}

// decodeStoredConfig decodes a JSON object of configuration values,
// numbers as json.Number, bounded in depth.
func decodeStoredConfig(data []byte) (map[string]any, error) {
	data = bytes.TrimSpace(data)
	if len(data) > MaxStoredConfigBytes {
		return nil, fmt.Errorf("%d bytes; at most %d are allowed", len(data), MaxStoredConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var cfg map[string]any
	if err := dec.Decode(&cfg); err != nil {
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	if d := depth(cfg, MaxStoredConfigDepth+1); d > MaxStoredConfigDepth {
		return nil, fmt.Errorf("values nest deeper than %d levels", MaxStoredConfigDepth)
	}
	return cfg, nil
}

// depth returns how deep v nests (a scalar is 0), stopping at limit.
func depth(v any, limit int) int {
	if limit <= 0 {
		return 0
	}
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e, limit-1))
			if d >= limit-1 {
				break
			}
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depth(e, limit-1))
			if d >= limit-1 {
				break
			}
		}
		return d + 1
	case map[string]string, []string:
		return 1
	}
	return 0
}

// SetConfig applies a JSON merge patch (RFC 7386, on a flat object: a
// nil value removes its key, any other replaces it whole, objects
// included) to the toolset's stored configuration and returns the
// result, each secret value replaced by [RedactedValue]. A patch giving
// RedactedValue for a secret key keeps the stored value, so that what
// [Store.Config] returned can be sent back.
//
// A value written while its key is secret, or before any version said
// which keys are, stays secret (sealed) until it is written again or
// removed: a later version that declares the key plain, or no longer
// declares it, does not show it. hil and required_scopes, no secrets,
// are never sealed.
//
// The result is checked against the config schemas of the serving
// version's tools: a key no tool declares (other than the reserved
// hil, required_scopes and auth) or a value of the wrong type is a
// *[ConfigError] listing every problem, and nothing changes. Before any
// version was discovered, keys are kept unchecked (every value counts as
// secret then). A version the stored configuration does not fit fails
// its discovery (the previous version serves on). The
// patch and the result are bounded: [MaxStoredConfigBytes] of JSON and
// [MaxStoredConfigDepth] levels. The configuration is kept in a file
// only the store's user can read.
//
// Every [Toolset] of the store uses the stored configuration as its
// lowest configured layer (see [Config]), from its next GetTools on. A secret never appears in
// an error or in the log.
func (s *Store) SetConfig(name string, patch map[string]any) (map[string]any, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.busy.Done()
	if d := depth(patch, MaxStoredConfigDepth+2); d > MaxStoredConfigDepth+1 {
		return nil, &ConfigError{Toolset: name, Problems: []string{fmt.Sprintf("the patch's values nest deeper than %d levels", MaxStoredConfigDepth)}}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		// The error may show a value: not quoted.
		return nil, &ConfigError{Toolset: name, Problems: []string{"the patch cannot be encoded as JSON: values must be strings, numbers, booleans, lists, objects or nil"}}
	}
	if len(data) > MaxStoredConfigBytes {
		return nil, &ConfigError{Toolset: name, Problems: []string{fmt.Sprintf("the patch is %d bytes of JSON; at most %d are allowed", len(data), MaxStoredConfigBytes)}}
	}
	patch, err = decodeStoredConfig(data)
	if err != nil {
		return nil, &ConfigError{Toolset: name, Problems: []string{"the patch: " + err.Error()}}
	}

	s.mu.Lock()
	e, ok := s.known(name)
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	// The new configuration is made and written with e.wmu held, which
	// every change of the record or the configuration holds, and
	// published under s.mu once it is on disk.
	e.wmu.Lock()
	defer e.wmu.Unlock()
	s.mu.Lock()
	rec, stored, storedSealed := e.rec, e.config, e.sealed
	s.mu.Unlock()
	if rec.Status == StatusRemoved {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	secret, known := storedSecretKeys(rec)
	cfg := make(map[string]any, len(stored)+len(patch))
	sealed := make(map[string]bool, len(stored)+len(patch))
	for k, v := range stored {
		cfg[k] = v
		sealed[k] = storedSealed[k] || ((!known || secret[k]) && sealable(k))
	}
	for _, k := range sortedKeys(patch) {
		v := patch[k]
		switch {
		case v == nil:
			delete(cfg, k)
			delete(sealed, k)
		case isRedacted(v) && (!known || secret[k] || storedSealed[k]):
			// What Config showed: the stored value stays.
		default:
			cfg[k] = v
			sealed[k] = (!known || secret[k]) && sealable(k)
		}
	}
	for k, v := range sealed {
		if !v {
			delete(sealed, k)
		}
	}
	if known {
		if probs := checkStoredConfig(rec.Tools, cfg, sealed); len(probs) > 0 {
			return nil, &ConfigError{Toolset: name, Problems: probs}
		}
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("toolpkg: toolset %q: encoding the configuration: %w", name, unprefixed{err})
	}
	if len(out) > MaxStoredConfigBytes {
		return nil, &ConfigError{Toolset: name, Problems: []string{fmt.Sprintf("the configuration would be %d bytes of JSON; at most %d are allowed", len(out), MaxStoredConfigBytes)}}
	}
	if d := depth(cfg, MaxStoredConfigDepth+1); d > MaxStoredConfigDepth {
		return nil, &ConfigError{Toolset: name, Problems: []string{fmt.Sprintf("the configuration's values nest deeper than %d levels", MaxStoredConfigDepth)}}
	}
	file, err := json.Marshal(configFileData{Values: out, Sealed: sortedKeys(sealed)})
	if err != nil {
		return nil, fmt.Errorf("toolpkg: toolset %q: encoding the configuration: %w", name, unprefixed{err})
	}
	if err := s.writeConfig(name, file); err != nil {
		return nil, err
	}
	s.mu.Lock()
	e.config, e.sealed = cfg, sealed
	e.configGen++
	s.mu.Unlock()
	return redactStored(cfg, secret, known, sealed), nil
}

// Config returns the toolset's stored configuration, each secret value
// replaced by [RedactedValue] (see [Store.SetConfig]); an empty map when
// none was set.
func (s *Store) Config(name string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.known(name)
	if !ok || e.rec.Status == StatusRemoved {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	secret, known := storedSecretKeys(e.rec)
	return redactStored(e.config, secret, known, e.sealed), nil
}

// servingKey returns, under one lock, what tells a store Toolset whether
// the tools it built last still stand: the serving version, the status
// and the generation of the stored configuration. ok is false for a name
// the store does not know. It copies nothing, so that a turn whose tools
// stand costs no allocation here.
func (s *Store) servingKey(name string) (serving int, status Status, gen uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.known(name)
	if !ok {
		return 0, "", 0, false
	}
	return e.rec.Serving, e.rec.Status, e.configGen, true
}

// servingState returns, under one lock, a toolset's record and the stored
// configuration that goes with it, so that tools are never built from one
// version and a configuration published after another.
func (s *Store) servingState(name string) (Info, map[string]any, map[string]bool, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.known(name)
	if !ok {
		return Info{}, nil, nil, 0, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return e.rec.Info.clone(), e.config, e.sealed, e.configGen, nil
}

// storedSecretKeys returns the secret keys of the serving version's
// tools, and auth; known is false when no version serves, and every key
// counts as secret.
func storedSecretKeys(rec record) (secret map[string]bool, known bool) {
	secret = map[string]bool{"auth": true}
	if rec.Serving == 0 {
		return secret, false
	}
	for _, t := range rec.Tools {
		for _, f := range t.Config {
			if f.Secret {
				secret[f.Key] = true
			}
		}
	}
	return secret, true
}

// sealable reports whether a stored key's value can be sealed: hil and
// required_scopes are no secrets, and who sets them must see them.
func sealable(k string) bool { return k != "hil" && k != "required_scopes" }

// isRedacted reports whether v is RedactedValue.
func isRedacted(v any) bool {
	s, ok := v.(string)
	return ok && s == RedactedValue
}

// redactStored copies cfg, lists and objects deeply (the caller may
// change what it gets), with each secret or sealed value replaced.
func redactStored(cfg map[string]any, secret map[string]bool, known bool, sealed map[string]bool) map[string]any {
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		if !known || secret[k] || sealed[k] {
			v = RedactedValue
		}
		out[k] = cloneValue(v)
	}
	return out
}

// cloneValue copies the lists and objects of a decoded JSON value.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

// checkStoredConfig checks a stored configuration against the config
// schemas of tools: every key must be declared by one (or be reserved),
// every value of its type. The problems, sorted, never show a secret or
// a sealed value.
func checkStoredConfig(tools []ToolInfo, cfg map[string]any, sealed map[string]bool) []string {
	declared := map[string][]ConfigField{}
	secret := map[string]bool{}
	for _, t := range tools {
		for _, f := range t.Config {
			declared[f.Key] = append(declared[f.Key], f)
			secret[f.Key] = secret[f.Key] || f.Secret
		}
	}
	known := map[string]ConfigField{}
	for k, fs := range declared {
		known[k] = fs[0]
	}
	var probs []string
	sec := &secrets{keys: map[string]bool{}}
	for _, k := range sortedKeys(cfg) {
		v := cfg[k]
		switch k {
		case "hil":
			if _, msg := reservedBool(v); msg != "" {
				probs = append(probs, fmt.Sprintf("%q: %s", k, msg))
			}
			continue
		case "required_scopes":
			if _, msg := reservedScopes(v); msg != "" {
				probs = append(probs, fmt.Sprintf("%q: %s", k, msg))
			}
			continue
		case "auth":
			if _, msg := parseAuth(v, sec); msg != "" {
				probs = append(probs, fmt.Sprintf("%q: %s", k, msg))
			}
			continue
		}
		fs, ok := declared[k]
		if !ok {
			probs = append(probs, fmt.Sprintf("%s is not a configuration key of any tool; known keys: %s", quoteShort(k), knownKeys(known)))
			continue
		}
		for _, f := range fs {
			f.Secret = secret[k] || sealed[k]
			if _, msg := coerceConfigValue(f, v); msg != "" {
				probs = append(probs, fmt.Sprintf("%q: %s", k, msg))
				break
			}
		}
	}
	sort.Strings(probs)
	return probs
}

// writeConfig writes a toolset's configuration file atomically, readable
// by the store's user alone. The caller holds the entry's wmu, never
// s.mu.
func (s *Store) writeConfig(name string, data []byte) error {
	dir := filepath.Join(s.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("toolpkg: saving the configuration of %q: %w", name, unprefixed{err})
	}
	if h := testHookWrite.Load(); h != nil {
		(*h)(dir, configFile)
	}
	if err := atomicfile.Write(dir, ".config-*.json", configFile, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("toolpkg: saving the configuration of %q: %w", name, err)
	}
	return nil
}
