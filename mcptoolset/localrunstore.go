package mcptoolset

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gotoolset/toolset"
)

// DefaultMaxStoredRuns bounds the runs that the default run store of a
// [Server] (see [WithRunStore]) keeps; beyond it, the least recently saved
// is dropped.
const DefaultMaxStoredRuns = 4096

// localRunStore is the default run store of a server: a
// [toolset.MemoryRunStore] that keeps at most max runs, dropping the least
// recently saved, and drops the runs whose state expired. Any client can
// begin runs, a request without a handle each, and a MemoryRunStore
// forgets an expired run only when it is asked for it.
type localRunStore struct {
	inner *toolset.MemoryRunStore
	max   int

	mu    sync.Mutex
	m     map[string]*list.Element // of *storedRun
	order list.List                // most recently saved first
}

type storedRun struct {
	id      string
	version int64
	expires time.Time // zero: never
}

func newLocalRunStore(max int) *localRunStore {
	return &localRunStore{inner: toolset.NewMemoryRunStore(), max: max, m: make(map[string]*list.Element)}
}

// Load implements [toolset.RunStore].
func (s *localRunStore) Load(ctx context.Context, id string) ([]byte, int64, error) {
	return s.inner.Load(ctx, id)
}

// Save implements [toolset.RunStore].
func (s *localRunStore) Save(ctx context.Context, id string, data []byte, expectVersion int64, ttl time.Duration) (int64, error) {
	version, err := s.inner.Save(ctx, id, data, expectVersion, ttl)
	if err != nil {
		return 0, err
	}
	r := &storedRun{id: id, version: version}
	if ttl > 0 {
		r.expires = time.Now().Add(ttl)
	}
	s.mu.Lock()
	if e, ok := s.m[id]; ok {
		e.Value = r
		s.order.MoveToFront(e)
	} else {
		s.m[id] = s.order.PushFront(r)
	}
	drop := s.dropLocked(time.Now())
	s.mu.Unlock()
	for _, old := range drop {
		s.forget(old)
	}
	return version, nil
}

// dropLocked takes out the runs beyond the bound and the expired ones at
// the back, and returns them. s.mu is held.
func (s *localRunStore) dropLocked(now time.Time) []*storedRun {
	var drop []*storedRun
	for s.order.Len() > 0 {
		back := s.order.Back()
		r := back.Value.(*storedRun)
		if s.order.Len() <= s.max && (r.expires.IsZero() || now.Before(r.expires)) {
			break
		}
		s.order.Remove(back)
		delete(s.m, r.id)
		drop = append(drop, r)
	}
	return drop
}

// forget deletes a dropped run's state, if it is still the version
// dropped.
func (s *localRunStore) forget(r *storedRun) {
	err := s.inner.Delete(context.Background(), r.id, r.version)
	var ce *toolset.RunStateConflictError
	if err != nil && errors.As(err, &ce) {
		return // saved again since: kept, and listed again by that save
	}
}

// Delete implements [toolset.RunStore].
func (s *localRunStore) Delete(ctx context.Context, id string, expectVersion int64) error {
	if err := s.inner.Delete(ctx, id, expectVersion); err != nil {
		return err
	}
	s.mu.Lock()
	if e, ok := s.m[id]; ok && e.Value.(*storedRun).version == expectVersion {
		s.order.Remove(e)
		delete(s.m, id)
	}
	s.mu.Unlock()
	return nil
}

// len returns the number of runs the store lists.
func (s *localRunStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
