package toolset

import (
	"github.com/gotoolset/toolset/internal/schema"
	"github.com/invopop/jsonschema"
)

// validator checks tool-call arguments against a parameter schema with the
// schema engine, and words what it finds as the root's public errors. It
// is the engine's validator itself, seen through the root's methods.
type validator schema.Validator

func newValidator(s *jsonschema.Schema) *validator {
	return (*validator)(schema.NewValidator(s))
}

// check validates args. It returns nil when they are valid, the problems
// as an *ArgumentError (without the tool name) when they are not, a
// *SchemaRefError when the schema refers outside itself, and any other
// error when the schema itself cannot be compiled.
func (v *validator) check(args []byte) error {
	problems, err := (*schema.Validator)(v).Check(args)
	if err != nil {
		return publicSchemaError(err)
	}
	if problems == nil {
		return nil
	}
	return argumentError(problems)
}

// argumentError returns the engine's problems as an *ArgumentError. The
// engine's Problem and ArgumentProblem are the same struct, so each
// converts; the copy costs one allocation on the refusal path only.
func argumentError(problems []schema.Problem) *ArgumentError {
	out := make([]ArgumentProblem, len(problems))
	for i, p := range problems {
		out[i] = ArgumentProblem(p)
	}
	return &ArgumentError{Problems: out}
}

// compile compiles the full validator, once; it returns the schema's
// problem as check would.
func (v *validator) compile() error {
	return publicSchemaError((*schema.Validator)(v).Compile())
}
