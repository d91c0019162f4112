package toolsettest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
)

// TestRunStore checks that the stores newStore makes keep the contract of
// [toolset.RunStore], in subtests: Load of a run with no state; Save as
// compare-and-swap, and the versions it gives (never 0, never one the run
// had before, even after a Delete); Delete as compare-and-swap; conflicts
// reported as [*toolset.RunStateConflictError]; expiry and its renewal by
// each save; data that is not kept after the call; runs that do not share
// state, whatever their IDs (empty, 64 KiB long, binary); binary and
// large data; concurrent saves of one run, of which exactly one wins;
// calls whose context has ended; and runs resumed, held and suspended
// through [toolset.ResumeRun] with the store.
//
// newStore is called once per subtest, and must return a store of its
// own, empty: a fresh key prefix, say, for a store on a shared server.
// A store may refuse an ID or data it cannot hold (too large, say) with
// an error; what it stores it must give back exactly.
//
// Run it from the backend's tests:
//
//	func TestRunStore(t *testing.T) {
//		toolsettest.TestRunStore(t, func(t *testing.T) toolset.RunStore {
//			return mystore.New(db, t.Name())
//		})
//	}
func TestRunStore(t *testing.T, newStore func(t *testing.T) toolset.RunStore, opts ...BackendOption) {
	t.Helper()
	c := newBackendConfig(opts)
	s := &runStoreSuite{backendConfig: c, newStore: newStore}
	c.run(t, "LoadNone", s.loadNone)
	c.run(t, "CompareAndSwap", s.compareAndSwap)
	c.run(t, "VersionsNotReused", s.versionsNotReused)
	c.run(t, "Delete", s.delete)
	c.run(t, "TTL", s.ttl)
	c.run(t, "DataNotKept", s.dataNotKept)
	c.run(t, "HostileIDs", s.hostileIDs)
	c.run(t, "HostileData", s.hostileData)
	c.run(t, "ConcurrentSaves", s.concurrentSaves)
	c.run(t, "ContextDone", s.contextDone)
	c.run(t, "Resume", s.resume)
}

type runStoreSuite struct {
	backendConfig
	newStore func(t *testing.T) toolset.RunStore
}

type loaded struct {
	data    []byte
	version int64
	err     error
}

type saved struct {
	version int64
	err     error
}

func (s *runStoreSuite) load(t *testing.T, st toolset.RunStore, id string) loaded {
	t.Helper()
	return within(t, fmt.Sprintf("Load(%q)", quote(id)), func(ctx context.Context) loaded {
		d, v, err := st.Load(ctx, id)
		return loaded{d, v, err}
	})
}

func (s *runStoreSuite) save(t *testing.T, st toolset.RunStore, id string, data []byte, expect int64, ttl time.Duration) saved {
	t.Helper()
	return within(t, fmt.Sprintf("Save(%q, expect %d)", quote(id), expect), func(ctx context.Context) saved {
		v, err := st.Save(ctx, id, data, expect, ttl)
		return saved{v, err}
	})
}

func (s *runStoreSuite) del(t *testing.T, st toolset.RunStore, id string, expect int64) error {
	t.Helper()
	return within(t, fmt.Sprintf("Delete(%q, expect %d)", quote(id), expect), func(ctx context.Context) error {
		return st.Delete(ctx, id, expect)
	})
}

// mustSave saves and fails t unless the save succeeds with a version
// that is not 0.
func (s *runStoreSuite) mustSave(t *testing.T, st toolset.RunStore, id string, data []byte, expect int64, ttl time.Duration) int64 {
	t.Helper()
	r := s.save(t, st, id, data, expect, ttl)
	if r.err != nil {
		t.Fatalf("Save(%q, expect %d): %v", quote(id), expect, r.err)
	}
	if r.version == 0 {
		t.Fatalf("Save(%q, expect %d) gave version 0; a saved state's version is never 0", quote(id), expect)
	}
	return r.version
}

// wantState fails t unless run id has data at version (0: no state).
func (s *runStoreSuite) wantState(t *testing.T, st toolset.RunStore, id string, data []byte, version int64) {
	t.Helper()
	r := s.load(t, st, id)
	switch {
	case r.err != nil:
		t.Fatalf("Load(%q): %v", quote(id), r.err)
	case version == 0 && (r.data != nil || r.version != 0):
		t.Fatalf("Load(%q) = %d bytes, version %d; want no state: nil data, version 0", quote(id), len(r.data), r.version)
	case version != 0 && r.version != version:
		t.Fatalf("Load(%q) gave version %d; want %d, the version of the last save", quote(id), r.version, version)
	case version != 0 && !bytes.Equal(r.data, data):
		t.Fatalf("Load(%q) gave %q; want %q, the data of the last save", quote(id), quote(string(r.data)), quote(string(data)))
	}
}

// wantConflict fails t unless err reports a conflict as the root expects.
func wantConflict(t *testing.T, what string, err error) {
	t.Helper()
	var ce *toolset.RunStateConflictError
	switch {
	case err == nil:
		t.Fatalf("%s succeeded; want a *toolset.RunStateConflictError", what)
	case !errors.As(err, &ce):
		t.Fatalf("%s: %v (%T); want a *toolset.RunStateConflictError", what, err, err)
	case !errors.Is(err, toolset.ErrRunStateConflict):
		t.Fatalf("%s: %v; errors.Is(err, toolset.ErrRunStateConflict) is false", what, err)
	}
}

func (s *runStoreSuite) loadNone(t *testing.T) {
	st := s.newStore(t)
	s.wantState(t, st, "never-saved", nil, 0)
}

func (s *runStoreSuite) compareAndSwap(t *testing.T) {
	st := s.newStore(t)
	const id = "run"
	v1 := s.mustSave(t, st, id, []byte(`{"n":1}`), 0, 0)
	s.wantState(t, st, id, []byte(`{"n":1}`), v1)

	r := s.save(t, st, id, []byte(`{"n":"other"}`), 0, 0)
	wantConflict(t, "Save expecting no state over a saved one", r.err)
	s.wantState(t, st, id, []byte(`{"n":1}`), v1)

	r = s.save(t, st, id, []byte(`{"n":"stale"}`), v1+1, 0)
	wantConflict(t, "Save expecting a version the run does not have", r.err)
	s.wantState(t, st, id, []byte(`{"n":1}`), v1)

	v2 := s.mustSave(t, st, id, []byte(`{"n":2}`), v1, 0)
	if v2 == v1 {
		t.Fatalf("a second Save gave the version of the first, %d", v1)
	}
	s.wantState(t, st, id, []byte(`{"n":2}`), v2)

	r = s.save(t, st, id, []byte(`{"n":"late"}`), v1, 0)
	wantConflict(t, "Save expecting the version before the last save", r.err)
	s.wantState(t, st, id, []byte(`{"n":2}`), v2)

	r = s.save(t, st, "never-saved", []byte(`{}`), v2, 0)
	wantConflict(t, "Save expecting a version of a run with no state", r.err)
	s.wantState(t, st, "never-saved", nil, 0)
}

// versionsNotReused saves, deletes and saves again a run, and checks that
// no version comes twice: a process still holding a version from before
// the delete must not overwrite the state saved since.
func (s *runStoreSuite) versionsNotReused(t *testing.T) {
	st := s.newStore(t)
	const id = "run"
	seen := map[int64]bool{}
	for round := range 3 {
		v := s.mustSave(t, st, id, []byte(`{}`), 0, 0)
		for old := range seen {
			if r := s.save(t, st, id, []byte(`{"stale":true}`), old, 0); r.err == nil {
				t.Fatalf("round %d: Save expecting version %d, from before a Delete, succeeded", round, old)
			}
		}
		for i := range 3 {
			if seen[v] {
				t.Fatalf("round %d, save %d: version %d given twice to one run", round, i, v)
			}
			seen[v] = true
			v = s.mustSave(t, st, id, []byte(`{}`), v, 0)
		}
		if seen[v] {
			t.Fatalf("round %d: version %d given twice to one run", round, v)
		}
		seen[v] = true
		if err := s.del(t, st, id, v); err != nil {
			t.Fatalf("Delete at the current version: %v", err)
		}
	}
}

func (s *runStoreSuite) delete(t *testing.T) {
	st := s.newStore(t)
	const id = "run"
	if err := s.del(t, st, id, 0); err != nil {
		t.Fatalf("Delete of a run with no state: %v; want nil", err)
	}
	if err := s.del(t, st, id, 42); err != nil {
		t.Fatalf("Delete of a run with no state, expecting version 42: %v; want nil", err)
	}
	v := s.mustSave(t, st, id, []byte(`{}`), 0, 0)
	wantConflict(t, "Delete expecting another version", s.del(t, st, id, v+1))
	wantConflict(t, "Delete expecting no state", s.del(t, st, id, 0))
	s.wantState(t, st, id, []byte(`{}`), v)
	if err := s.del(t, st, id, v); err != nil {
		t.Fatalf("Delete at the current version: %v", err)
	}
	s.wantState(t, st, id, nil, 0)
	if err := s.del(t, st, id, v); err != nil {
		t.Fatalf("a second Delete: %v; want nil, there is no state", err)
	}
	v2 := s.mustSave(t, st, id, []byte(`{"again":true}`), 0, 0)
	s.wantState(t, st, id, []byte(`{"again":true}`), v2)
}

func (s *runStoreSuite) ttl(t *testing.T) {
	st := s.newStore(t)
	u := s.unit
	data := []byte(`{"ttl":true}`)
	v := s.mustSave(t, st, "expires", data, 0, 4*u)
	s.mustSave(t, st, "kept", data, 0, 0)
	renewed := s.mustSave(t, st, "renewed", data, 0, 4*u)
	persisted := s.mustSave(t, st, "persisted", data, 0, 4*u)
	s.sleep(2 * u)
	s.wantState(t, st, "expires", data, v)
	renewed = s.mustSave(t, st, "renewed", data, renewed, 4*u)
	persisted = s.mustSave(t, st, "persisted", data, persisted, 0)
	if s.bubble {
		// Exactly at its TTL, a state has expired.
		s.sleep(2 * u)
	} else {
		s.sleep(2*u + u/2)
	}
	s.wantState(t, st, "expires", nil, 0)
	s.wantState(t, st, "renewed", data, renewed)
	s.wantState(t, st, "persisted", data, persisted)
	if r := s.save(t, st, "expires", data, v, 0); r.err == nil {
		t.Fatal("Save expecting the version of an expired state succeeded; the state is gone")
	}
	if err := s.del(t, st, "expires", v); err != nil {
		t.Fatalf("Delete of an expired state: %v; want nil, there is no state", err)
	}
	s.mustSave(t, st, "expires", data, 0, 0)

	s.sleep(2*u + u/2)
	s.wantState(t, st, "renewed", nil, 0)
	s.wantState(t, st, "kept", data, s.load(t, st, "kept").version)
	s.wantState(t, st, "persisted", data, persisted)
}

func (s *runStoreSuite) dataNotKept(t *testing.T) {
	st := s.newStore(t)
	data := []byte(`{"a":1}`)
	v := s.mustSave(t, st, "run", data, 0, 0)
	copy(data, `XXXXXXX`)
	s.wantState(t, st, "run", []byte(`{"a":1}`), v)
	r := s.load(t, st, "run")
	if r.err != nil {
		t.Fatal(r.err)
	}
	for i := range r.data {
		r.data[i] = 'Y'
	}
	s.wantState(t, st, "run", []byte(`{"a":1}`), v)
}

func (s *runStoreSuite) hostileIDs(t *testing.T) {
	st := s.newStore(t)
	keys := hostileKeys()
	versions := make([]int64, len(keys))
	for i, k := range keys {
		r := s.save(t, st, k.key, []byte(strconv.Itoa(i)), 0, 0)
		switch {
		case r.err != nil && errors.Is(r.err, toolset.ErrRunStateConflict):
			t.Fatalf("Save of run %s (%q): %v; another run's state is under its ID", k.name, quote(k.key), r.err)
		case r.err != nil:
			t.Logf("the store refuses the ID of run %s: %v", k.name, r.err)
			versions[i] = -1
		case r.version == 0:
			t.Fatalf("Save of run %s gave version 0", k.name)
		default:
			versions[i] = r.version
		}
	}
	for i, k := range keys {
		if versions[i] < 0 {
			continue
		}
		r := s.load(t, st, k.key)
		if r.err != nil {
			t.Fatalf("Load of run %s: %v", k.name, r.err)
		}
		if string(r.data) != strconv.Itoa(i) || r.version != versions[i] {
			t.Fatalf("run %s (%q) has data %q, version %d; want %q, version %d: runs with different IDs share state",
				k.name, quote(k.key), quote(string(r.data)), r.version, strconv.Itoa(i), versions[i])
		}
	}
	for i, k := range keys {
		if versions[i] < 0 {
			continue
		}
		if err := s.del(t, st, k.key, versions[i]); err != nil {
			t.Fatalf("Delete of run %s: %v", k.name, err)
		}
		s.wantState(t, st, k.key, nil, 0)
		for j, other := range keys[i+1:] {
			if versions[i+1+j] >= 0 {
				s.wantState(t, st, other.key, []byte(strconv.Itoa(i+1+j)), versions[i+1+j])
			}
		}
	}
}

func (s *runStoreSuite) hostileData(t *testing.T) {
	st := s.newStore(t)
	small := binaryValue(4 << 10)
	v := s.mustSave(t, st, "binary", small, 0, 0)
	s.wantState(t, st, "binary", small, v)

	empty := s.mustSave(t, st, "empty", []byte{}, 0, 0)
	r := s.load(t, st, "empty")
	if r.err != nil || len(r.data) != 0 || r.version != empty {
		t.Fatalf("Load of a state saved empty = %d bytes, version %d, %v; want 0 bytes, version %d", len(r.data), r.version, r.err, empty)
	}

	large := binaryValue(1 << 20)
	if r := s.save(t, st, "large", large, 0, 0); r.err != nil {
		t.Logf("the store refuses a state of 1 MiB: %v", r.err)
		s.wantState(t, st, "large", nil, 0)
	} else {
		s.wantState(t, st, "large", large, r.version)
	}
}

// concurrentSaves has goroutines race to save one run from the same
// version, round after round: exactly one wins each round, and the state
// is the winner's.
func (s *runStoreSuite) concurrentSaves(t *testing.T) {
	st := s.newStore(t)
	const id, workers, rounds = "contended", 8, 5
	version := int64(0)
	for round := range rounds {
		results := make([]saved, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				defer cancel()
				v, err := st.Save(ctx, id, []byte(strconv.Itoa(w)), version, 0)
				results[w] = saved{v, err}
			})
		}
		waitAll(t, &wg)
		winner := -1
		for w, r := range results {
			if r.err == nil {
				if winner >= 0 {
					t.Fatalf("round %d: saves %d and %d from version %d both succeeded", round, winner, w, version)
				}
				winner = w
				continue
			}
			wantConflict(t, fmt.Sprintf("round %d: a losing Save", round), r.err)
		}
		if winner < 0 {
			t.Fatalf("round %d: no save from version %d succeeded", round, version)
		}
		s.wantState(t, st, id, []byte(strconv.Itoa(winner)), results[winner].version)
		version = results[winner].version
	}

	// Runs of their own, saved at once, do not disturb each other.
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			id := "own-" + strconv.Itoa(w)
			v := int64(0)
			for i := range 10 {
				nv, err := st.Save(ctx, id, []byte(strconv.Itoa(i)), v, 0)
				if err != nil {
					errs <- fmt.Errorf("run %s, save %d: %w", id, i, err)
					return
				}
				v = nv
			}
			if err := st.Delete(ctx, id, v); err != nil {
				errs <- fmt.Errorf("run %s, delete: %w", id, err)
			}
		})
	}
	waitAll(t, &wg)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// contextDone calls each method with a context that has ended: each
// returns an error and changes nothing.
func (s *runStoreSuite) contextDone(t *testing.T) {
	st := s.newStore(t)
	v := s.mustSave(t, st, "run", []byte(`{"before":true}`), 0, 0)
	if err := withDone(t, "Load", func(ctx context.Context) error { _, _, err := st.Load(ctx, "run"); return err }); err == nil {
		t.Error("Load with a cancelled context succeeded; want the context's error")
	}
	if err := withDone(t, "Save", func(ctx context.Context) error {
		_, err := st.Save(ctx, "run", []byte(`{"after":true}`), v, 0)
		return err
	}); err == nil {
		t.Error("Save with a cancelled context succeeded; want the context's error")
	}
	if err := withDone(t, "Save", func(ctx context.Context) error { _, err := st.Save(ctx, "new", []byte(`{}`), 0, 0); return err }); err == nil {
		t.Error("Save of a new run with a cancelled context succeeded; want the context's error")
	}
	if err := withDone(t, "Delete", func(ctx context.Context) error { return st.Delete(ctx, "run", v) }); err == nil {
		t.Error("Delete with a cancelled context succeeded; want the context's error")
	}
	s.wantState(t, st, "run", []byte(`{"before":true}`), v)
	s.wantState(t, st, "new", nil, 0)
}

// resume runs the store under [toolset.ResumeRun]: a run held by a
// process (that crashed, say) cannot be resumed until its lease runs out,
// and a run that ends deletes its state.
func (s *runStoreSuite) resume(t *testing.T) {
	st := s.newStore(t)
	const id = "resumed"
	lease := 4 * s.unit
	type resumed struct {
		run *toolset.RunContext
		err error
	}
	resume := func(what string) resumed {
		t.Helper()
		return within(t, what, func(ctx context.Context) resumed {
			rc, err := toolset.ResumeRun(ctx, st, id, toolset.WithRunLease(lease))
			return resumed{rc, err}
		})
	}
	first := resume("ResumeRun of a new run")
	if first.err != nil {
		t.Fatalf("ResumeRun of a new run: %v", first.err)
	}
	held := s.load(t, st, id)
	if held.err != nil || held.data == nil || held.version == 0 {
		t.Fatalf("after ResumeRun, Load = %d bytes, version %d, %v; want the run's state", len(held.data), held.version, held.err)
	}
	if err := within(t, "Suspend", first.run.Suspend); err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	suspended := s.load(t, st, id)
	if suspended.err != nil || suspended.version == held.version {
		t.Fatalf("after Suspend, Load = version %d, %v; want a new version", suspended.version, suspended.err)
	}
	// Another process resumes the run and stops without a word: its
	// state says it holds the run.
	s.mustSave(t, st, id, held.data, suspended.version, 0)
	if r := resume("ResumeRun of a run another process holds"); !errors.Is(r.err, toolset.ErrRunStateConflict) {
		t.Fatalf("ResumeRun of a run another process holds: %v; want a conflict", r.err)
	}
	s.sleep(lease + s.unit)
	second := resume("ResumeRun once the holder's lease ran out")
	if second.err != nil {
		t.Fatalf("ResumeRun once the holder's lease ran out: %v", second.err)
	}
	if err := within(t, "Save", second.run.Save); err != nil {
		t.Fatalf("Save by the new holder: %v", err)
	}
	within(t, "End", func(context.Context) struct{} { second.run.End(); return struct{}{} })
	s.wantState(t, st, id, nil, 0)
}
