package toolset

import (
	"context"
)

// Validate checks toolsets at start-up, before any run: it materialises
// them as BuildTools would, and reports every tool that cannot be used,
// every name conflict, and every missing environment variable of every
// tool, including tools a filter hides in this context.
func Validate(ctx context.Context, entries ...Toolset) error {
	s, _, err := buildSnapshot(ctx, "", entries, nil)
	if err != nil {
		return err
	}
	if err := checkNames(s, nil, namedRoot{}, "", true); err != nil {
		return err
	}
	var missing []MissingEnv
	for _, i := range s.index().env {
		missing = missingEnv(missing, s.tools[i])
	}
	if len(missing) > 0 {
		return &EnvError{Missing: missing}
	}
	return nil
}
