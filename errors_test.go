package toolset_test

import (
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
)

// A ToolError names the tool and says the package prefix once, even when
// it wraps an error of this package or nothing at all.
func TestToolErrorMessage(t *testing.T) {
	assert.EqualError(t, &toolset.ToolError{Tool: "flaky", Err: toolset.NewModelError("try again")}, `toolset: tool "flaky": retry requested: try again`)
	assert.EqualError(t, &toolset.ToolError{Tool: "flaky"}, `toolset: tool "flaky" failed`)
}
