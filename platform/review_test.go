package platform

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Reports come from anyone who may publish on the report subject: a
// forger that sends MaxRuntimesPerToolset failed reports under made-up
// runtime IDs fills the toolset's slots, and the report of a real runtime
// that then confirms every tool is dropped: the toolset stays failed and
// no agent naming it can be deployed.
func TestReviewForgedFailedReportsCannotCrowdOutANewRuntime(t *testing.T) {
	t.Parallel()
	d := newTestDistributor()
	e := newEnv(t, &Options{Distributor: d})
	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	d.waitPublished(t, 1)

	for i := range MaxRuntimesPerToolset {
		d.send(t, SyncReport{Runtime: fmt.Sprintf("forged-%d", i), Toolset: "greeter", Version: 1, Status: SyncFailed, Errors: []string{"nope"}})
	}
	st, _ := e.status("greeter")
	require.Equal(t, "failed", st)

	// A real runtime, started after the flood, confirms every tool.
	d.send(t, SyncReport{Runtime: "rt-real", Toolset: "greeter", Version: 1, Status: SyncReady, Tools: []string{"greet"}})
	st, _ = e.status("greeter")
	assert.Equal(t, "ready", st, "a runtime that confirms every tool is ignored once forged reports filled the slots")
}
