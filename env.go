package toolset

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// WithRequiredEnv declares environment variables the tool needs, such as an
// API key. BuildTools fails while any of them is missing or empty for a
// tool shown this turn, and [Validate] checks every tool at start-up; both
// report every missing variable of every tool at once.
func WithRequiredEnv(vars ...string) ToolOption {
	return func(t *Tool) { t.core.env = append(t.core.env, vars...) }
}

// EnvError reports environment variables that tools need and that are
// missing or empty.
type EnvError struct {
	// Missing lists each missing variable with the tool that needs it.
	Missing []MissingEnv
}

// MissingEnv is one missing environment variable.
type MissingEnv struct {
	// Tool is the name of the tool that declared the variable.
	Tool string
	// Var is the variable that is missing or empty.
	Var string
}

// Error implements error.
func (e *EnvError) Error() string {
	var b strings.Builder
	b.WriteString("toolset: missing or empty environment variables:")
	for _, m := range e.Missing {
		fmt.Fprintf(&b, "\n  - %s (needed by tool %q)", m.Var, m.Tool)
	}
	return b.String()
}

// missingEnv appends the variables tool t needs and lacks.
func missingEnv(dst []MissingEnv, t Tool) []MissingEnv {
	for _, v := range t.core.env {
		if os.Getenv(v) == "" {
			dst = append(dst, MissingEnv{Tool: t.Name, Var: v})
		}
	}
	return dst
}

// Validate checks toolsets at start-up, before any run: it materialises
// them as BuildTools would, and reports every tool that cannot be used,
// every name conflict, and every missing environment variable of every
// tool, including tools a filter hides in this context.
func Validate(ctx context.Context, entries ...Toolset) error {
	s, _, err := buildSnapshot(ctx, "", entries)
	if err != nil {
		return err
	}
	if err := checkNames(s, nil, "", "", true); err != nil {
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
