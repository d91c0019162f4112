package toolset

import (
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
