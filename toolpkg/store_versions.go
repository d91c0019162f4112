package toolpkg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Remove removes a toolset: its status becomes removed, its tools are
// gone from the next turn on, and its stored configuration and zips are
// deleted. A discovery running is canceled. Calls already running finish
// first on their version, which is deleted afterwards.
func (s *Store) Remove(name string) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.busy.Done()
	s.mu.Lock()
	e, ok := s.known(name)
	if ok {
		// An upload storing its package now starts a discovery that
		// ends at once, not one Remove would wait for.
		e.removing++
		if e.cancel != nil {
			e.cancel()
		}
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	err := s.lockUp(context.Background(), e)
	s.mu.Lock()
	e.removing--
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("toolpkg: remove %q: %w", name, unprefixed{err})
	}
	defer e.unlockUp()
	e.wmu.Lock()
	defer e.wmu.Unlock()
	s.mu.Lock()
	rec := e.rec
	s.mu.Unlock()
	prev := rec.Info
	rec.Info = Info{Name: name, Status: StatusRemoved, Updated: time.Now().UTC(), Versions: prev.Versions}
	rec.Candidate = nil
	if err := s.persist(rec); err != nil {
		return err
	}
	s.mu.Lock()
	e.setRec(rec)
	e.removedUpTo = rec.LastVersion
	trash := s.retireLocked(name, e, prev.Version, prev.Serving)
	e.config, e.sealed = nil, nil
	e.configGen++
	s.trashSeq++
	scratch := filepath.Join(s.dir, ".tmp", fmt.Sprintf("old-%s-scratch-%d", name, s.trashSeq))
	s.mu.Unlock()
	// The configuration and the scratch directory go while e.wmu and
	// e.up are held: once they are released, a Create, a SetConfig or an
	// upload may make them anew for a new toolset of the same name. A
	// crash before leaves them to the next Open, which deletes them for
	// a removed toolset.
	if err := os.Remove(s.configPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("toolpkg: could not delete a removed toolset's configuration", "toolset", name, "error", err)
	}
	if err := os.Rename(s.scratchDir(name), scratch); err != nil {
		scratch = ""
		if !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("toolpkg: could not delete a removed toolset's scratch directory", "toolset", name, "error", err)
		}
	}
	s.deleteVersions(name, trash)
	if scratch != "" {
		if err := removeAll(scratch); err != nil {
			s.log.Warn("toolpkg: could not delete a removed toolset's scratch directory", "toolset", name, "error", err)
		}
	}
	s.log.Info("toolpkg: toolset removed", "toolset", name)
	return nil
}

// acquire marks version v of a toolset as in use by a call and returns its
// folder; false when that version is gone.
func (s *Store) acquire(name string, v int) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[name]
	if !ok || s.closed || e.gone[v] {
		return "", false
	}
	if e.refs[v] == 0 && !e.rec.live(v) {
		return "", false
	}
	e.refs[v]++
	s.busy.Add(1)
	return s.versionDir(name, v), true
}

// release ends a use of version v, deleting it if it is no longer current
// and no one uses it.
func (s *Store) release(name string, v int) {
	s.mu.Lock()
	e := s.entries[name]
	e.refs[v]--
	if e.refs[v] <= 0 {
		delete(e.refs, v)
	}
	trash := s.retireLocked(name, e, v)
	s.mu.Unlock()
	s.deleteVersions(name, trash)
	s.busy.Done()
}

// retireLocked retires those of the versions vs that are no longer
// live: it deletes their zips, and moves the folders no call uses aside
// (marked gone), to be deleted by deleteVersions once s.mu is released.
// Done under s.mu, so that whoever sees the new record sees the old
// versions gone.
func (s *Store) retireLocked(name string, e *entry, vs ...int) (trash []string) {
	for _, v := range vs {
		if v <= 0 || e.rec.live(v) {
			continue
		}
		if err := os.Remove(s.zipPath(name, v)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("toolpkg: could not delete an old version's zip", "toolset", name, "version", v, "error", err)
		}
		if e.refs[v] > 0 || e.gone[v] {
			continue
		}
		e.gone[v] = true
		dir := s.versionDir(name, v)
		s.trashSeq++
		aside := filepath.Join(s.dir, ".tmp", fmt.Sprintf("old-%s-v%d-%d", name, v, s.trashSeq))
		if err := os.Rename(dir, aside); err == nil {
			dir = aside
		} else if errors.Is(err, os.ErrNotExist) {
			continue
		}
		trash = append(trash, dir)
	}
	return trash
}

// deleteVersions deletes the folders retireLocked moved aside.
func (s *Store) deleteVersions(name string, trash []string) {
	for _, dir := range trash {
		if err := removeAll(dir); err != nil {
			s.log.Warn("toolpkg: could not delete an old version", "toolset", name, "folder", filepath.Base(dir), "error", err)
		}
	}
}
