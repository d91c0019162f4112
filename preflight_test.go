package toolset_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewPreflightError(t *testing.T) {
	note := toolset.PreflightProblem{Tool: "a", Path: "/parameters/$schema", Problem: "$schema dropped", Lowered: true}
	assert.NoError(t, toolset.NewPreflightError("Gemini", []toolset.PreflightProblem{note}, 0), "notes alone are no error")
	assert.NoError(t, toolset.NewPreflightError("Gemini", nil, 0))

	bad := toolset.PreflightProblem{Tool: "b", Path: "/parameters/properties/x/not", Problem: "Gemini does not support not", Fix: "remove it"}
	name := toolset.PreflightProblem{Tool: "9b", Path: "/name", Problem: "the name may not start with '9'", Fix: "rename the tool"}
	err := toolset.NewPreflightError("Gemini", []toolset.PreflightProblem{note, bad, name}, 2)
	var pe *toolset.PreflightError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, []toolset.PreflightProblem{bad, name}, pe.Problems, "notes are left out")
	assert.Equal(t, 2, pe.Omitted)
	lines := strings.Split(err.Error(), "\n")
	assert.Equal(t, []string{
		"toolset: Gemini would refuse or weaken 2 tool(s), 4 problem(s):",
		`  - "b" at /parameters/properties/x/not: Gemini does not support not; fix: remove it`,
		`  - "9b" at /name: the name may not start with '9'; fix: rename the tool`,
		"  - and 2 more",
	}, lines)

	// Problems past the bound alone make an error.
	require.Error(t, toolset.NewPreflightError("OpenAI", nil, 1))
}

func TestPreflightProblemString(t *testing.T) {
	p := toolset.PreflightProblem{Tool: "t", Problem: "the schema cannot be read"}
	assert.Equal(t, `"t" at the tool: the schema cannot be read`, p.String())
}
