package platform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/gotoolset/toolset/internal/atomicfile"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg"
	"go.yaml.in/yaml/v3"
)

// Secrets are write-only. A configuration value an agent file gives for
// a secret key (one a tool of the toolset's serving version declares
// secret, auth, or any key of a toolset whose tools are not known yet) is
// kept apart from the file, in <store>/.platform/secrets/<agent>.json
// (0600), and the stored file holds toolpkg.RedactedValue in its place.
// A file put again with RedactedValue at the same place keeps the stored
// value; a value so kept stays secret even when its key no longer is, as
// the store does with the toolset's own configuration.

// secretAddr is where an agent file sets a value: a toolset, a tool ("":
// the toolset-level value of the agent) and a key.
type secretAddr struct{ toolset, tool, key string }

// String is the address as the secrets file keys it: TOOLSET/TOOL/KEY
// (TOOLSET//KEY for a toolset-level value).
func (a secretAddr) String() string { return a.toolset + "/" + a.tool + "/" + a.key }

// maxSecretFile bounds a stored secrets file: the values come from an
// agent file, itself bounded.
const maxSecretFile = 4 << 20

// secretStore keeps each agent's secret values in a file of its own.
type secretStore struct{ dir string }

func openSecrets(dir string) (*secretStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("platform: secrets: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("platform: secrets: %w", err)
	}
	return &secretStore{dir: dir}, nil
}

func (s *secretStore) path(agent string) string { return filepath.Join(s.dir, agent+".json") }

// load returns the agent's stored secrets by address; none is not an
// error.
func (s *secretStore) load(agent string) (map[string]any, error) {
	f, err := os.OpenFile(s.path(agent), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the secrets of agent %q are not a regular file", agent)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSecretFile {
		return nil, fmt.Errorf("the secrets of agent %q are larger than %d bytes", agent, maxSecretFile)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// The error would quote the file, which holds secrets: not wrapped.
	if dec.Decode(&m) != nil {
		return nil, fmt.Errorf("the secrets of agent %q do not parse", agent)
	}
	for k, v := range m {
		m[k] = fromJSON(v)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// fromJSON turns the numbers a decoder with UseNumber gives back into
// the agent file's types: int64 when whole, else float64.
func fromJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = fromJSON(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = fromJSON(x[k])
		}
	}
	return v
}

// save replaces the agent's stored secrets (none: the file is removed).
func (s *secretStore) save(agent string, m map[string]any) error {
	if len(m) == 0 {
		return s.remove(agent)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return errors.New("the secrets could not be encoded")
	}
	return atomicfile.Write(s.dir, ".secrets-*", agent+".json", data, 0o600)
}

func (s *secretStore) remove(agent string) error {
	if err := os.Remove(s.path(agent)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// secretKeys returns the keys of the toolset whose values are secret, as
// its serving version declares them (auth always); known is false when no
// version's tools are known, or a later upload is pending or failed (the
// agent's entries are not checked then, and that version may declare
// more secrets), and every value is then secret.
func (s *Server) secretKeys(toolset string) (keys map[string]bool, known bool) {
	keys = map[string]bool{"auth": true}
	info, err := s.store.Info(toolset)
	if err != nil || info.Serving == 0 || info.Status != toolpkg.StatusReady {
		return keys, false
	}
	for _, t := range info.Tools {
		for _, f := range t.Config {
			if f.Secret {
				keys[f.Key] = true
			}
		}
	}
	return keys, true
}

// secretPolicy says which values of an agent file are secret, by toolset,
// as the store has them now; sealed are the addresses whose values were
// kept apart before, secret whatever the schema says.
type secretPolicy struct {
	s      *Server
	cache  map[string]secretKeySet
	sealed map[string]bool
}

type secretKeySet struct {
	keys  map[string]bool
	known bool
}

func (s *Server) newSecretPolicy(sealed map[string]bool) *secretPolicy {
	return &secretPolicy{s: s, cache: map[string]secretKeySet{}, sealed: sealed}
}

func (p *secretPolicy) secret(a secretAddr) bool {
	if p.sealed[a.String()] {
		return true
	}
	ks, ok := p.cache[a.toolset]
	if !ok {
		ks.keys, ks.known = p.s.secretKeys(a.toolset)
		p.cache[a.toolset] = ks
	}
	return !ks.known || ks.keys[a.key]
}

// configValues calls fn for every configuration value the file's package
// entries set, by address.
func configValues(f *agentfile.File, fn func(e *agentfile.Entry, a secretAddr, v any)) {
	for i := range f.Toolsets {
		e := &f.Toolsets[i]
		if e.Package == nil {
			continue
		}
		cfg := e.Package.Config
		for _, k := range sortedMapKeys(cfg.Toolset) {
			fn(e, secretAddr{e.Package.Name, "", k}, cfg.Toolset[k])
		}
		for _, tool := range sortedMapKeys(cfg.Tools) {
			for _, k := range sortedMapKeys(cfg.Tools[tool]) {
				fn(e, secretAddr{e.Package.Name, tool, k}, cfg.Tools[tool][k])
			}
		}
	}
}

// setConfigValue sets the value at an address of the file's first
// package entry of that toolset.
func setConfigValue(f *agentfile.File, a secretAddr, v any) {
	for i := range f.Toolsets {
		e := &f.Toolsets[i]
		if e.Package == nil || e.Package.Name != a.toolset {
			continue
		}
		if a.tool == "" {
			if _, ok := e.Package.Config.Toolset[a.key]; ok {
				e.Package.Config.Toolset[a.key] = v
				return
			}
			continue
		}
		if m, ok := e.Package.Config.Tools[a.tool]; ok {
			if _, ok := m[a.key]; ok {
				m[a.key] = v
				return
			}
		}
	}
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isRedacted(v any) bool {
	s, ok := v.(string)
	return ok && s == toolpkg.RedactedValue
}

// restoreSecrets puts the stored value in place of each RedactedValue the
// file gives, and returns the addresses so restored. A RedactedValue with
// no stored value behind it is a problem: there is nothing to keep.
func restoreSecrets(f *agentfile.File, stored map[string]any) (restored map[string]bool, problems []agentfile.Problem) {
	restored = map[string]bool{}
	var sets []secretAddr
	configValues(f, func(e *agentfile.Entry, a secretAddr, v any) {
		if !isRedacted(v) {
			return
		}
		if _, ok := stored[a.String()]; !ok {
			pos, _ := e.ConfigPosition(a.tool, a.key)
			problems = append(problems, agentfile.Problem{File: f.Filename, Line: pos.Line, Column: pos.Column,
				Message: fmt.Sprintf("%s: %s keeps a stored secret, but this agent has none stored there: give the value", describeAddr(a), toolpkg.RedactedValue)})
			return
		}
		sets = append(sets, a)
	})
	for _, a := range sets {
		setConfigValue(f, a, stored[a.String()])
		restored[a.String()] = true
	}
	return restored, problems
}

// describeAddr names an address for a message: never its value.
func describeAddr(a secretAddr) string {
	if a.tool == "" {
		return fmt.Sprintf("toolset %q: configuration key %q", a.toolset, a.key)
	}
	return fmt.Sprintf("toolset %q: tool %q: configuration key %q", a.toolset, a.tool, a.key)
}

// errRedaction is a file whose secrets could not be taken out of its text.
type errRedaction struct{ msg string }

func (e *errRedaction) Error() string { return e.msg }

// redactAgent replaces in the file's text each value the policy says is
// secret by RedactedValue, and returns the new text with the values
// taken out, by address. A file with no secret comes back as it is; one
// with secrets is written again from its YAML tree (comments kept,
// layout normalised). A secret under a YAML anchor or given by an alias
// is refused: its text would be in the file twice.
func redactAgent(data []byte, f *agentfile.File, policy *secretPolicy) ([]byte, map[string]any, error) {
	type target struct {
		addr secretAddr
		val  any
	}
	targets := map[agentfile.Position]target{}
	found := map[string]any{}
	var missing, twice []secretAddr
	configValues(f, func(e *agentfile.Entry, a secretAddr, v any) {
		if !policy.secret(a) {
			return
		}
		if _, dup := found[a.String()]; dup {
			// Another entry of the toolset: one secret is kept per
			// address, and the other would be lost.
			twice = append(twice, a)
			return
		}
		found[a.String()] = v
		if isRedacted(v) {
			// Already a placeholder in the text (a value restored from
			// the store is in f, not in data): nothing to take out.
			if pos, ok := e.ConfigPosition(a.tool, a.key); ok {
				targets[pos] = target{a, v}
			}
			return
		}
		pos, ok := e.ConfigPosition(a.tool, a.key)
		if !ok {
			missing = append(missing, a)
			return
		}
		targets[pos] = target{a, v}
	})
	if len(twice) > 0 {
		return nil, nil, &errRedaction{fmt.Sprintf("%s: a secret is given by two entries of the toolset; the platform keeps one per toolset, tool and key: give it in one entry", describeAddr(twice[0]))}
	}
	if len(missing) > 0 {
		return nil, nil, &errRedaction{fmt.Sprintf("%s: the secret's place in the file is not known, so it cannot be kept apart", describeAddr(missing[0]))}
	}
	if len(targets) == 0 {
		return data, found, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, &errRedaction{"the file could not be read again to take its secrets out"}
	}
	done := map[agentfile.Position]bool{}
	var walkErr error
	var walk func(n *yaml.Node, anchored bool)
	walk = func(n *yaml.Node, anchored bool) {
		if n == nil || walkErr != nil {
			return
		}
		anchored = anchored || n.Anchor != ""
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				t, ok := targets[agentfile.Position{Line: k.Line, Column: k.Column}]
				if !ok {
					continue
				}
				if anchored || v.Anchor != "" || v.Kind == yaml.AliasNode || k.Kind == yaml.AliasNode {
					walkErr = &errRedaction{fmt.Sprintf("%s: a secret value may not be under a YAML anchor nor be an alias", describeAddr(t.addr))}
					return
				}
				n.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: toolpkg.RedactedValue, Style: yaml.DoubleQuotedStyle}
				// The value's comments go with it: they may repeat it.
				done[agentfile.Position{Line: k.Line, Column: k.Column}] = true
			}
		}
		for _, c := range n.Content {
			walk(c, anchored)
		}
	}
	walk(&root, false)
	if walkErr != nil {
		return nil, nil, walkErr
	}
	// A comment that repeats a secret (api_key: x # x) goes too.
	var texts []string
	for _, t := range targets {
		collectText(t.val, &texts)
	}
	dropComments(&root, texts)
	for pos, t := range targets {
		if !done[pos] {
			return nil, nil, &errRedaction{fmt.Sprintf("%s: the secret could not be found in the file's text, so it cannot be kept apart", describeAddr(t.addr))}
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, nil, &errRedaction{"the file could not be written again without its secrets"}
	}
	if err := enc.Close(); err != nil {
		return nil, nil, &errRedaction{"the file could not be written again without its secrets"}
	}
	out := b.Bytes()
	// What is stored must hold no secret: the text is read again and
	// every secret place must hold the placeholder.
	g, err := agentfile.Parse(out, f.Filename)
	if err != nil {
		return nil, nil, &errRedaction{"the file written again without its secrets does not parse"}
	}
	var leak *secretAddr
	configValues(g, func(_ *agentfile.Entry, a secretAddr, v any) {
		if _, ok := found[a.String()]; ok && !isRedacted(v) && leak == nil {
			leak = &a
		}
	})
	if leak != nil {
		return nil, nil, &errRedaction{fmt.Sprintf("%s: the secret could not be taken out of the file", describeAddr(*leak))}
	}
	return out, found, nil
}

// collectText appends the texts of a value's scalars.
func collectText(v any, out *[]string) {
	switch x := v.(type) {
	case nil:
	case []any:
		for _, c := range x {
			collectText(c, out)
		}
	case map[string]any:
		for _, c := range x {
			collectText(c, out)
		}
	default:
		if s := fmt.Sprint(x); s != "" && s != toolpkg.RedactedValue {
			*out = append(*out, s)
		}
	}
}

// dropComments removes every comment of the tree that holds one of the
// texts.
func dropComments(n *yaml.Node, texts []string) {
	if n == nil || len(texts) == 0 {
		return
	}
	for _, c := range []*string{&n.HeadComment, &n.LineComment, &n.FootComment} {
		for _, t := range texts {
			if strings.Contains(*c, t) {
				*c = ""
				break
			}
		}
	}
	for _, c := range n.Content {
		dropComments(c, texts)
	}
}

// keptSecrets are the values of found that are real (not the
// placeholder): what the secrets file holds.
func keptSecrets(found map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range found {
		if !isRedacted(v) {
			out[k] = v
		}
	}
	return out
}
