package mcptoolset

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxSessionRuns is the default bound on the runs a [Server] keeps
// for its live sessions; see [WithMaxSessionRuns].
const DefaultMaxSessionRuns = 1024

// sessionRuns keeps one run per live MCP session: the RunContext whose
// bookkeeping (failures, reveals, approvals, run-scoped caches) every
// request of the session shares, and the session's step counter.
//
// At most max sessions have a run; beyond that the least recently used
// session's run is dropped, and that session starts a new run at its next
// request. A session's entry goes when the session ends.
type sessionRuns struct {
	max    int
	logger *slog.Logger

	mu      sync.Mutex
	m       map[*mcp.ServerSession]*sessionRun
	runs    list.List // of *sessionRun holding a run, most recently used first
	dropped uint64    // runs dropped beyond the bound
}

type sessionRun struct {
	ss   *mcp.ServerSession
	rc   *toolset.RunContext // the run; nil once dropped
	step int                 // the step of the session's next request
	elem *list.Element       // in sessionRuns.runs while rc is set
}

// next returns the run context of the next request of session ss: a copy,
// at the session's next step, of the session's run. The session starts a
// new run, with bookkeeping of its own, when it has none yet or when req
// names another run (a RunID other than the run's). An empty req.RunID is
// the run's, or for a new run the session's ID, or an ID made up for the
// session. The request's fields (Agent, Values, Deps, StableToolList) are
// those of req: a run's bookkeeping and step belong to the session, what
// the client may see is decided per request. Only the exported fields of
// req are read, so no two sessions share a run's bookkeeping whatever req
// carries.
func (s *sessionRuns) next(ss *mcp.ServerSession, req *toolset.RunContext) *toolset.RunContext {
	f := fieldsOf(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[*mcp.ServerSession]*sessionRun)
	}
	e := s.m[ss]
	if e == nil {
		e = &sessionRun{ss: ss}
		s.m[ss] = e
		go s.watch(e)
	}
	if f.RunID == "" {
		if e.rc != nil {
			f.RunID = e.rc.RunID
		} else if f.RunID = ss.ID(); f.RunID == "" {
			f.RunID = "mcp-" + randomID()
		}
	}
	if e.rc == nil || e.rc.RunID != f.RunID {
		s.start(e, f)
	} else {
		s.runs.MoveToFront(e.elem)
	}
	rc := e.rc.WithStep(e.step)
	e.step++
	rc.RunID, rc.Agent, rc.Values, rc.Deps, rc.StableToolList = f.RunID, f.Agent, f.Values, f.Deps, f.StableToolList
	return rc
}

// fieldsOf returns a RunContext with the exported fields of rc and no
// bookkeeping.
func fieldsOf(rc *toolset.RunContext) *toolset.RunContext {
	return &toolset.RunContext{RunID: rc.RunID, Agent: rc.Agent, Step: rc.Step, Values: rc.Values, Deps: rc.Deps, StableToolList: rc.StableToolList}
}

// start gives e a new run made from f, which has no bookkeeping yet, and
// drops the least recently used run beyond the bound.
func (s *sessionRuns) start(e *sessionRun, f *toolset.RunContext) {
	e.rc = f.WithStep(0) // makes the run's bookkeeping
	e.step = 0
	if e.elem != nil {
		s.runs.MoveToFront(e.elem)
	} else {
		e.elem = s.runs.PushFront(e)
	}
	for s.runs.Len() > max(s.max, 1) {
		old := s.runs.Remove(s.runs.Back()).(*sessionRun)
		s.dropped++
		if s.dropped&(s.dropped-1) == 0 { // the 1st, 2nd, 4th, 8th...: a flood of sessions is not a flood of logs
			s.logger.Warn("mcptoolset: too many MCP sessions with a run: dropping the least recently used one's run",
				"session", old.ss.ID(), "run", old.rc.RunID, "max", s.max, "dropped", s.dropped)
		}
		old.rc, old.elem = nil, nil
	}
}

// watch forgets e's session when it ends.
func (s *sessionRuns) watch(e *sessionRun) {
	_ = e.ss.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[e.ss] == e {
		delete(s.m, e.ss)
	}
	if e.elem != nil {
		s.runs.Remove(e.elem)
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
