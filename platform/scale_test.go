package platform

import (
	"fmt"
	"net/http"
	"sync"
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
	// Created side by side: each Create waits on the disk.
	var wg sync.WaitGroup
	names := make(chan string)
	for range 16 {
		wg.Go(func() {
			for name := range names {
				_, err := e.store.Create(name)
				assert.NoError(t, err)
			}
		})
	}
	for i := range toolsets {
		names <- fmt.Sprintf("ts%03d", i)
	}
	close(names)
	wg.Wait()
	require.False(t, t.Failed())
	// Agents stored as the server keeps them (putting 20000 files
	// through the API would test the disk, not the lookup). Each names
	// the same perAgent-1 other toolsets and one of the listed ones: a
	// search for a toolset's users goes through every name of every
	// agent all the same, and the index has few, large entries.
	lists := make([][]string, toolsets)
	for i := range lists {
		pkgs := make([]string, perAgent)
		for j := range perAgent - 1 {
			pkgs[j] = fmt.Sprintf("other%02d", j)
		}
		pkgs[perAgent-1] = fmt.Sprintf("ts%03d", i)
		lists[i] = pkgs
	}
	now := time.Now()
	e.srv.agents.mu.Lock()
	for i := range agents {
		e.srv.agents.set(fmt.Sprintf("agent%05d", i), agentRec{packages: lists[i%toolsets], updated: now})
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
