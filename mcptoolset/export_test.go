package mcptoolset

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SetMaxPages sets the bound on the pages of one listing, for a test, and
// returns a function that restores it.
func SetMaxPages(n int) (restore func()) {
	old := maxPages
	maxPages = n
	return func() { maxPages = old }
}

// SessionRuns returns the number of sessions of s that have a run.
func SessionRuns(s *Server) int { return s.runs.len() }

// Sessions returns the sessions s keeps an entry for.
func Sessions(s *Server) []*mcp.ServerSession {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	var out []*mcp.ServerSession
	for ss := range s.runs.m {
		out = append(out, ss)
	}
	return out
}

// SetMaxResponseBytes sets the bound on an HTTP response body, for a
// test, and returns a function that restores it.
func SetMaxResponseBytes(n int64) (restore func()) {
	old := maxResponseBytes
	maxResponseBytes = n
	return func() { maxResponseBytes = old }
}

// SetRunClock sets the clock by which s mints and checks run handles.
func SetRunClock(s *Server, now func() time.Time) { s.keys.now = now }

// HandleRuns returns the number of runs of handles s is using.
func HandleRuns(s *Server) int { return s.handles.len() }

// SetApprovalClock sets the clock by which s mints and checks the
// requestState of requests for approval.
func SetApprovalClock(s *Server, now func() time.Time) { s.approvals.now = now }

// SetMinKeyRefresh sets the least time between two fetches of a
// TokenVerifier's key set, for a test, and returns a function that
// restores it.
func SetMinKeyRefresh(d time.Duration) (restore func()) {
	old := minKeyRefresh
	minKeyRefresh = d
	return func() { minKeyRefresh = old }
}

// SetCommandWaitDelay sets the WaitDelay that NewCommand gives a command
// without one, for a test, and returns a function that restores it.
func SetCommandWaitDelay(d time.Duration) (restore func()) {
	old := commandWaitDelay
	commandWaitDelay = d
	return func() { commandWaitDelay = old }
}

// CommandWaitDelay is the WaitDelay that NewCommand gives a command
// without one.
func CommandWaitDelay() time.Duration { return commandWaitDelay }
