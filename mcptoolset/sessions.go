package mcptoolset

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxSessionRuns is the default bound on the runs a [Server] keeps
// for its live sessions; see [WithMaxSessionRuns].
const DefaultMaxSessionRuns = 1024

// sessionRuns keeps one run per live MCP session: the run whose
// bookkeeping (failures, reveals, approvals, run-scoped caches) every
// request of the session shares, each request being one of its turns.
//
// At most max sessions have a run; beyond that the least recently used
// session's run is ended, and that session starts a new run at its next
// request. A session's run is ended when the session ends.
type sessionRuns struct {
	max    int
	logger *slog.Logger
	ended  func(*mcp.ServerSession) // called when a session with an entry ends

	mu      sync.Mutex
	m       map[*mcp.ServerSession]*sessionRun
	owners  map[*toolset.RunContext]*sessionRun // the session of each run held
	runs    list.List                           // of *sessionRun holding a run, most recently used first
	dropped uint64                              // runs dropped beyond the bound
}

type sessionRun struct {
	ss   *mcp.ServerSession
	rc   *toolset.RunContext // the run; nil once dropped
	elem *list.Element       // in sessionRuns.runs while rc is set

	// turn is held by a request of the session from the Turn it begins
	// until it has built its tools: a turn older than the run's latest
	// cannot build them, so concurrent requests take their turns in turn.
	turn turnLock
}

// turnLock is a lock that a request holds from the Turn it begins until
// it has built its tools. It is a channel rather than a [sync.Mutex] so
// that a request waiting for it gives up when its context ends: the
// request holding it may be slow to build (a toolset listing a slow MCP
// server), and one whose client has gone must not wait on.
type turnLock chan struct{}

func newTurnLock() turnLock { return make(turnLock, 1) }

// lock takes l, or returns the error of ctx once it ends first.
func (l turnLock) lock(ctx context.Context) error {
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcptoolset: waiting while another request of the run builds its tools: %w", ctx.Err())
	}
}

// unlock releases l, which the caller holds.
func (l turnLock) unlock() { <-l }

// errSharedRun reports a run that the run context function returned for
// two sessions.
var errSharedRun = errors.New("mcptoolset: the run context function returned a run that is already the run of another session: begin a new run (toolset.NewRun) for each session")

// run returns the run of session ss, starting it with start when the
// session has none (its first request, or one after its run was dropped),
// and the lock its requests hold from their Turn until they have built
// their tools. start runs without the lock held; if another request of the
// session started a run meanwhile, the one start made is ended and the
// other kept. A run that another session holds is refused, and left alone.
func (s *sessionRuns) run(ss *mcp.ServerSession, start func() (*toolset.RunContext, error)) (*toolset.RunContext, turnLock, error) {
	if rc, e := s.current(ss); rc != nil {
		return rc, e.turn, nil
	}
	rc, err := start()
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(ss)
	if e.rc != nil {
		if rc != e.rc {
			rc.End()
		}
		s.runs.MoveToFront(e.elem)
		return e.rc, e.turn, nil
	}
	if s.owners[rc] != nil {
		return nil, nil, errSharedRun
	}
	if s.owners == nil {
		s.owners = make(map[*toolset.RunContext]*sessionRun)
	}
	s.owners[rc] = e
	e.rc = rc
	e.elem = s.runs.PushFront(e)
	for s.runs.Len() > max(s.max, 1) {
		old := s.runs.Remove(s.runs.Back()).(*sessionRun)
		s.dropped++
		if s.dropped&(s.dropped-1) == 0 { // the 1st, 2nd, 4th, 8th...: a flood of sessions is not a flood of logs
			s.logger.Warn("mcptoolset: too many MCP sessions with a run: ending the least recently used one's run",
				"session", old.ss.ID(), "run", old.rc.ID(), "max", s.max, "dropped", s.dropped)
		}
		delete(s.owners, old.rc)
		old.rc.End()
		old.rc, old.elem = nil, nil
	}
	return rc, e.turn, nil
}

// current returns the run of ss, marking it the most recently used, or
// nil, and the entry of ss.
func (s *sessionRuns) current(ss *mcp.ServerSession) (*toolset.RunContext, *sessionRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(ss)
	if e.rc != nil {
		s.runs.MoveToFront(e.elem)
	}
	return e.rc, e
}

// entry returns the entry of ss, making it (and watching the session) on
// first use. s.mu is held.
func (s *sessionRuns) entry(ss *mcp.ServerSession) *sessionRun {
	if s.m == nil {
		s.m = make(map[*mcp.ServerSession]*sessionRun)
	}
	e := s.m[ss]
	if e == nil {
		e = &sessionRun{ss: ss, turn: newTurnLock()}
		s.m[ss] = e
		go s.watch(e)
	}
	return e
}

// watch forgets e's session, and ends its run, when it ends.
func (s *sessionRuns) watch(e *sessionRun) {
	_ = e.ss.Wait()
	if s.ended != nil {
		s.ended(e.ss)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[e.ss] == e {
		delete(s.m, e.ss)
	}
	if e.elem != nil {
		s.runs.Remove(e.elem)
		delete(s.owners, e.rc)
		e.rc.End()
		e.rc, e.elem = nil, nil
	}
}

// len returns the number of sessions with a run.
func (s *sessionRuns) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs.Len()
}

// randomID returns 16 random hexadecimal digits.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}
