package toolset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// RunStore keeps the saved state of runs, so that a run paused in one
// process (a call waiting for a human's approval, say) resumes in another:
// see [ResumeRun]. The state is opaque bytes to the store: versioned JSON
// that the run encodes and decodes itself.
//
// Saves are compare-and-swap: each saved state has a version, and Save
// replaces the state only if its version is still the one the saver last
// loaded or saved, so that two processes cannot both carry on one run.
// [NewMemoryRunStore] is the in-process implementation; one shared by
// several processes (a database, Redis) implements the same three methods.
// A RunStore must be safe for concurrent use.
//
// What the run relies on, beyond each method's own contract:
//
//   - A run's ID is any string the application gives (from a client,
//     say): binary, long. Two IDs never share a state; a store may refuse
//     an ID it cannot hold (too long for its keys) with an error.
//   - A state that expired is no state, for all three methods.
//   - The version Load returns is the one the last Save returned, and the
//     data is exactly the bytes saved (or an error: a state too large to
//     hold is refused by Save, never cut short).
//   - A conflict is a [*RunStateConflictError], which may be wrapped: the
//     run finds it with errors.As.
//   - A method called with a context that is already done returns an
//     error and changes nothing.
//
// The lease by which a process holds a run (see [WithRunLease]) is kept
// in the state itself, on the process's clock: the store needs nothing
// for it but compare-and-swap and versions that are not given twice.
//
// [github.com/gotoolset/toolset/toolsettest.TestRunStore] checks a store
// against all of this.
//
// The store is trusted as the application's code is. [ResumeRun] bounds
// the state it loads, checks its form and refuses what no run saves
// (another run's state, another version, an entry listed twice), but
// cannot tell an approval a forger wrote from one a human gave: whoever
// can write a run's state can approve its calls, and fill its cache. Give
// each application a store of its own (on a shared Redis, its own key
// prefix and an ACL user limited to it).
type RunStore interface {
	// Load returns the saved state of run id and its version. A run with
	// no saved state (never saved, deleted, or expired) gives nil data,
	// version 0 and no error. The data returned is the caller's.
	Load(ctx context.Context, id string) (data []byte, version int64, err error)
	// Save stores data as the state of run id if the state's version is
	// expectVersion (0: there must be no saved state), and returns the new
	// version, which is never 0 and differs from the versions the id had
	// before. Otherwise it stores nothing and returns a
	// [*RunStateConflictError]. A ttl above zero makes the state expire
	// that long after this save; zero keeps it until deleted. The store
	// must not keep data after Save returns.
	Save(ctx context.Context, id string, data []byte, expectVersion int64, ttl time.Duration) (version int64, err error)
	// Delete removes the saved state of run id if its version is
	// expectVersion, so that a process that no longer holds a run cannot
	// delete the state of the process that resumed it since; otherwise it
	// removes nothing and returns a [*RunStateConflictError]. With no
	// saved state it does nothing and returns nil.
	Delete(ctx context.Context, id string, expectVersion int64) error
}

// ErrRunStateConflict is what every [*RunStateConflictError] is, for
// errors.Is.
var ErrRunStateConflict = errors.New("the run's saved state was changed by another process")

// RunStateConflictError reports a run whose saved state is not the one
// this process expected: another process resumed the run, or saved it,
// since this one loaded it. The run is then unusable in this process: its
// Err returns this error, and BuildTools and calls under it fail with it.
// errors.Is(err, ErrRunStateConflict) reports true for it.
type RunStateConflictError struct {
	// ID is the run's ID.
	ID string
	// Expected is the version the saver expected (0: none), and Actual the
	// version the store has (0: none), when the store knows it.
	Expected, Actual int64
	// Reason says what happened, when more is known than the versions (a
	// run held by another process, for one).
	Reason string
}

// Error implements error.
func (e *RunStateConflictError) Error() string {
	reason := e.Reason
	if reason == "" {
		reason = fmt.Sprintf("expected version %d, found %d: another process resumed or saved it", e.Expected, e.Actual)
	}
	return fmt.Sprintf("toolset: run %q: its saved state changed: %s", boundName(e.ID), reason)
}

// Is reports whether target is [ErrRunStateConflict].
func (e *RunStateConflictError) Is(target error) bool { return target == ErrRunStateConflict }

// MemoryRunStore is a [RunStore] in the memory of one process: for tests,
// and for a single process whose runs pause and resume in different
// requests. Make one with [NewMemoryRunStore].
type MemoryRunStore struct {
	mu    sync.Mutex
	runs  map[string]memoryRun
	clock int64 // the last version given out
}

type memoryRun struct {
	data    []byte
	version int64
	expires time.Time // zero: never
}

// NewMemoryRunStore returns an empty in-memory run store.
func NewMemoryRunStore() *MemoryRunStore {
	return &MemoryRunStore{runs: make(map[string]memoryRun)}
}

// get returns the live entry of id, dropping an expired one. The caller
// holds s.mu.
func (s *MemoryRunStore) get(id string) (memoryRun, bool) {
	r, ok := s.runs[id]
	if ok && !r.expires.IsZero() && !time.Now().Before(r.expires) {
		delete(s.runs, id)
		return memoryRun{}, false
	}
	return r, ok
}

// Load implements [RunStore].
func (s *MemoryRunStore) Load(ctx context.Context, id string) ([]byte, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.get(id)
	if !ok {
		return nil, 0, nil
	}
	return slices.Clone(r.data), r.version, nil
}

// Save implements [RunStore].
func (s *MemoryRunStore) Save(ctx context.Context, id string, data []byte, expectVersion int64, ttl time.Duration) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, _ := s.get(id)
	if r.version != expectVersion {
		return 0, &RunStateConflictError{ID: id, Expected: expectVersion, Actual: r.version}
	}
	s.clock++
	r = memoryRun{data: slices.Clone(data), version: s.clock}
	if ttl > 0 {
		r.expires = time.Now().Add(ttl)
	}
	s.runs[id] = r
	return r.version, nil
}

// Delete implements [RunStore].
func (s *MemoryRunStore) Delete(ctx context.Context, id string, expectVersion int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.get(id)
	if !ok {
		return nil
	}
	if r.version != expectVersion {
		return &RunStateConflictError{ID: id, Expected: expectVersion, Actual: r.version}
	}
	delete(s.runs, id)
	return nil
}
