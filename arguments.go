package toolset

import (
	"unsafe"

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

// The engine's Problem and ArgumentProblem are the same struct: this
// conversion compiles only while they are, which argumentError relies on.
var _ = ArgumentProblem(schema.Problem{})

// argumentError returns the engine's problems as an *ArgumentError,
// reusing the slice rather than copying it (see above): refusing arguments
// allocates no more than the engine does.
func argumentError(problems []schema.Problem) *ArgumentError {
	out := unsafe.Slice((*ArgumentProblem)(unsafe.Pointer(unsafe.SliceData(problems))), len(problems))
	return &ArgumentError{Problems: out}
}

// compile compiles the full validator, once; it returns the schema's
// problem as check would.
func (v *validator) compile() error {
	return publicSchemaError((*schema.Validator)(v).Compile())
}
