package toolpkg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gotoolset/toolset"
)

var _ toolset.InstructionsProvider = (*Toolset)(nil)

// configuredTools runs "<executable> --schema --config FILE" for each
// executable of a ready version whose tools were given configuration,
// FILE holding the executable's configuration (its tools' values,
// defaults applied) as a JSON object, and returns the tools as that
// output describes them: a tool may change its name, description,
// instructions, parameters and configuration schema with its
// configuration (a SQL tool naming its database). The tools of the other
// executables are returned as discovered. cfg is extended with the
// configuration of renamed tools: the executable's values of the keys
// they declare, and the approval, scopes and credentials of the
// executable's first configured tool. The configuration's secrets are
// hidden in what the executable prints.
func (t *Toolset) configuredTools(ctx context.Context, info Info, cfg *resolvedConfig, stored bool) ([]ToolInfo, error) {
	if len(t.config.Toolset) == 0 && len(t.config.Tools) == 0 && !stored {
		return info.Tools, nil
	}
	s := t.store
	pkgDir, ok := s.acquire(t.name, info.Serving)
	if !ok {
		return nil, &NotReadyError{Toolset: t.name, Status: StatusRemoved}
	}
	defer s.release(t.name, info.Serving)
	var out []ToolInfo
	for _, ex := range info.Executables {
		merged := map[string]any{}
		var base []ToolInfo
		var first *toolConfig
		for _, ti := range info.Tools {
			if ti.Executable != ex.Key {
				continue
			}
			base = append(base, ti)
			tc := cfg.tools[ti.Name]
			if tc == nil {
				continue // excluded, or left out
			}
			if first == nil {
				first = tc
			}
			for k, v := range tc.values {
				merged[k] = v
			}
		}
		if len(merged) == 0 {
			out = append(out, base...)
			continue
		}
		raw, err := s.schemaOf(ctx, pkgDir, ex, merged, cfg.secrets)
		if errors.Is(err, errNoConfigFlag) {
			// Built before the format had --config: its tools are as
			// discovered.
			warnOnce(s.log, fmt.Sprintf("toolpkg: toolset %q version %d: executable %q refuses --schema --config; its tools are shown as discovered without configuration",
				t.name, info.Serving, ex.Key))
			out = append(out, base...)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("toolpkg: toolset %q: executable %q: discovery with the configuration (--schema --config): %w", t.name, ex.Key, unprefixed{err})
		}
		found, probs := parseSchemaOutput(ex, raw)
		if len(probs) > 0 {
			return nil, fmt.Errorf("toolpkg: toolset %q: executable %q: discovery with the configuration (--schema --config):\n  - %s",
				t.name, ex.Key, strings.Join(capProblems(probs), "\n  - "))
		}
		for _, ti := range found {
			if max := s.opts.Limits.MaxTimeoutSeconds; ti.TimeoutSeconds > max {
				return nil, fmt.Errorf("toolpkg: toolset %q: tool %q: timeout_seconds asks for %d seconds; this store allows at most %d", t.name, ti.Name, ti.TimeoutSeconds, max)
			}
			if full := t.name + "__" + ti.Name; len(full) > 64 {
				return nil, fmt.Errorf("toolpkg: toolset %q: tool %q: the model would see %q, %d characters; names may have at most 64", t.name, ti.Name, full, len(full))
			}
			_, left := cfg.unavailable[ti.Name]
			if _, known := cfg.tools[ti.Name]; !known && first != nil && !cfg.excluded[ti.Name] && !left {
				// A tool renamed by its configuration takes the
				// executable's values of the keys it declares; one
				// left out for a missing value stays out.
				c := *first
				c.values = map[string]any{}
				for _, f := range ti.Config {
					if v, ok := merged[f.Key]; ok {
						c.values[f.Key] = v
					}
				}
				cfg.tools[ti.Name] = &c
			}
			out = append(out, ti)
		}
	}
	seen := map[string]bool{}
	for _, ti := range out {
		if seen[ti.Name] {
			return nil, fmt.Errorf("toolpkg: toolset %q: with its configuration, two executables expose tool %q", t.name, ti.Name)
		}
		seen[ti.Name] = true
	}
	return out, nil
}
