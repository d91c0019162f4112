package platform

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Many agents naming many toolsets do not make a listing cost the
// product of their numbers: who uses a toolset is looked up, not searched
// for among every agent, for each toolset listed.
func TestManyAgentsDoNotSlowTheListing(t *testing.T) {
	const toolsets, agents, perAgent = 500, 20000, 25
	e := newEnv(t, nil)
	for i := range toolsets {
		_, err := e.store.Create(fmt.Sprintf("ts%03d", i))
		require.NoError(t, err)
	}
	// Agents stored as the server keeps them (putting 20000 files
	// through the API would test the disk, not the lookup).
	e.srv.agents.mu.Lock()
	for i := range agents {
		pkgs := make([]string, perAgent)
		for j := range pkgs {
			pkgs[j] = fmt.Sprintf("other%05d", i*perAgent+j)
		}
		pkgs[perAgent-1] = fmt.Sprintf("ts%03d", i%toolsets)
		e.srv.agents.set(fmt.Sprintf("agent%05d", i), agentRec{packages: pkgs, updated: time.Now()})
	}
	e.srv.agents.mu.Unlock()

	start := time.Now()
	r := e.do("GET", "/api/v1/platform/toolsets?pageSize=500", nil)
	require.Equal(t, http.StatusOK, r.status)
	data := r.json(t)["data"].([]any)
	require.Len(t, data, toolsets)
	assert.Len(t, data[7].(map[string]any)["usedBy"], agents/toolsets)
	r = e.page("/")
	took := time.Since(start)
	require.Equal(t, http.StatusOK, r.status)
	// A search among every agent for each toolset listed would take
	// minutes; the lookup takes a tenth of a second.
	assert.Less(t, took, raceSlowdown*time.Second, "listing %d toolsets took %s", toolsets, took)
	t.Logf("took %s", took)
}
