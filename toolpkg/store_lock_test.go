package toolpkg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
)

// TestAStalledWriteOfOneToolsetHoldsUpNoOtherToolset: writing and
// syncing one toolset's state.json or config.json may take long (a busy
// disk); meanwhile every other toolset of the store must serve its
// turns and calls, and the change being written must not be seen before
// it is on disk.
func TestAStalledWriteOfOneToolsetHoldsUpNoOtherToolset(t *testing.T) {
	t.Parallel()
	pkg := demoPackage(t, demoManifest(""))
	ctx := context.Background()
	cases := []struct {
		name   string
		target string // the toolset whose file stalls
		file   string
		nth    int // which of its writes stalls
		op     func(s *Store) error
		// stalled checks what the store shows while the write stalls;
		// after, once the operation is done.
		stalled, after func(t *testing.T, s *Store)
	}{{
		name: "SetConfig", target: "b", file: configFile, nth: 1,
		op: func(s *Store) error {
			_, err := s.SetConfig("b", map[string]any{"hil": true})
			return err
		},
		stalled: func(t *testing.T, s *Store) {
			cfg, err := s.Config("b")
			require.NoError(t, err)
			assert.NotContains(t, cfg, "hil", "a configuration not yet on disk is shown")
		},
		after: func(t *testing.T, s *Store) {
			cfg, err := s.Config("b")
			require.NoError(t, err)
			assert.Equal(t, true, cfg["hil"])
		},
	}, {
		name: "Create", target: "c", file: "state.json", nth: 1,
		op: func(s *Store) error {
			_, err := s.Create("c")
			return err
		},
		stalled: func(t *testing.T, s *Store) {
			_, err := s.Info("c")
			assert.ErrorIs(t, err, ErrNotFound, "a record not yet on disk is shown")
		},
		after: func(t *testing.T, s *Store) {
			info, err := s.Info("c")
			require.NoError(t, err)
			assert.Equal(t, StatusCreated, info.Status)
		},
	}, {
		name: "Upload", target: "b", file: "state.json", nth: 1,
		op: func(s *Store) error {
			_, err := s.Upload(ctx, "b", bytes.NewReader(pkg), int64(len(pkg)))
			return err
		},
		stalled: func(t *testing.T, s *Store) {
			info, err := s.Info("b")
			require.NoError(t, err)
			assert.Equal(t, 1, info.Version, "a record not yet on disk is shown")
			_, _, err = s.Package("b", 2)
			assert.ErrorIs(t, err, ErrNotFound, "a version not yet recorded on disk is served")
		},
		after: func(t *testing.T, s *Store) {
			info, err := s.Info("b")
			require.NoError(t, err)
			assert.Equal(t, StatusReady, info.Status)
			assert.Equal(t, 2, info.Serving)
		},
	}, {
		name: "Discovery", target: "b", file: "state.json", nth: 2,
		op: func(s *Store) error {
			_, err := s.StartUpload(ctx, "b", bytes.NewReader(pkg), int64(len(pkg)))
			return err
		},
		stalled: func(t *testing.T, s *Store) {
			info, err := s.Info("b")
			require.NoError(t, err)
			assert.Equal(t, StatusPending, info.Status, "a discovery result not yet on disk is shown")
			assert.Equal(t, 1, info.Serving)
		},
		after: func(t *testing.T, s *Store) {
			info, err := s.Wait(ctx, "b")
			require.NoError(t, err)
			assert.Equal(t, StatusReady, info.Status)
			assert.Equal(t, 2, info.Serving)
		},
	}, {
		name: "Remove", target: "b", file: "state.json", nth: 1,
		op: func(s *Store) error { return s.Remove("b") },
		stalled: func(t *testing.T, s *Store) {
			info, err := s.Info("b")
			require.NoError(t, err)
			assert.Equal(t, StatusReady, info.Status, "a removal not yet on disk is shown")
		},
		after: func(t *testing.T, s *Store) {
			info, err := s.Info("b")
			require.NoError(t, err)
			assert.Equal(t, StatusRemoved, info.Status)
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, Options{Sandbox: ModeDirect})
			a := readyToolset(t, s, "a", nil)
			upload(t, s, "b", pkg)
			tools, err := toolset.BuildTools(ctx, "tester", a)
			require.NoError(t, err)

			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			unstall := func() { once.Do(func() { close(release) }) }
			defer unstall()
			var mu sync.Mutex
			n := 0
			hook := func(dir, file string) {
				if dir != filepath.Join(s.Dir(), c.target) || file != c.file {
					return
				}
				mu.Lock()
				n++
				stall := n == c.nth
				mu.Unlock()
				if stall {
					close(entered)
					<-release
				}
			}
			testHookWrite.Store(&hook)
			defer testHookWrite.Store(nil)

			opErr := make(chan error, 1)
			go func() { opErr <- c.op(s) }()
			select {
			case <-entered:
			case err := <-opErr:
				if c.nth == 1 {
					t.Fatalf("the operation ended (%v) without writing %s of %s", err, c.file, c.target)
				}
				opErr <- err
				<-entered
			case <-time.After(30 * time.Second):
				t.Fatalf("no write of %s of %s", c.file, c.target)
			}

			served := make(chan error, 1)
			go func() {
				if _, err := a.GetTools(ctx); err != nil {
					served <- err
					return
				}
				if _, err := s.Info("a"); err != nil {
					served <- err
					return
				}
				if len(s.List()) == 0 {
					served <- errors.New("List is empty")
					return
				}
				_, err := tools.Execute(ctx, toolset.ToolCall{Name: "a__echo", Args: []byte(`{"text":"x"}`)})
				served <- err
			}()
			select {
			case err := <-served:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				unstall()
				<-served
				t.Fatalf("toolset a's GetTools, Info, List and calls waited for the write of %s of toolset %s", c.file, c.target)
			}
			c.stalled(t, s)
			unstall()
			require.NoError(t, <-opErr)
			c.after(t, s)
		})
	}
}

// TestConcurrentWritesOfOneToolsetLandInOrder: saves of one toolset's
// configuration, racing each other and an upload, land on disk in the
// order they are published: a new Open shows what the store showed
// last.
func TestConcurrentWritesOfOneToolsetLandInOrder(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	pkg := demoPackage(t, demoManifest(""))
	upload(t, s, "b", pkg)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 10 {
				_, err := s.SetConfig("b", map[string]any{"required_scopes": []any{fmt.Sprintf("s-%d-%d", g, i)}})
				assert.NoError(t, err)
			}
		})
	}
	wg.Go(func() {
		info := upload(t, s, "b", pkg)
		assert.Equal(t, StatusReady, info.Status)
	})
	wg.Wait()
	cfg, err := s.Config("b")
	require.NoError(t, err)
	info, err := s.Info("b")
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Config("b")
	require.NoError(t, err)
	assert.Equal(t, cfg, got)
	reopened, err := s.Info("b")
	require.NoError(t, err)
	assert.Equal(t, info.Version, reopened.Version)
	assert.Equal(t, info.Serving, reopened.Serving)
	assert.Equal(t, info.Status, reopened.Status)
}

// TestACallStartedBeforeRemoveMakesNoScratchDirAfterIt: a call takes its
// version, then makes the toolset's scratch directory before it starts
// the tool. Removed in between, the toolset must not get a scratch
// directory back from it: it would outlive the removal, and a new
// toolset of the same name would find the removed one's state in it.
func TestACallStartedBeforeRemoveMakesNoScratchDirAfterIt(t *testing.T) {
	t.Parallel()
	pkg := demoPackage(t, demoManifest(""))
	for _, recreate := range []bool{false, true} {
		t.Run(fmt.Sprintf("recreated=%v", recreate), func(t *testing.T) {
			s := openStore(t, Options{Sandbox: ModeDirect})
			info := upload(t, s, "b", pkg)
			require.Equal(t, StatusReady, info.Status)
			// What a call's runWith does first: the version is its.
			_, ok := s.acquire("b", info.Serving)
			require.True(t, ok)
			defer s.release("b", info.Serving)

			require.NoError(t, s.Remove("b"))
			if recreate {
				_, err := s.Create("b")
				require.NoError(t, err)
				again := upload(t, s, "b", pkg)
				require.Equal(t, StatusReady, again.Status)
				require.Greater(t, again.Serving, info.Serving)
			}
			_, err := s.scratch("b", info.Serving)
			assert.ErrorIs(t, err, ErrNotFound, "a call of a removed toolset got a scratch directory")
			_, err = os.Lstat(s.scratchDir("b"))
			assert.ErrorIs(t, err, os.ErrNotExist, "a call of a removed toolset made its scratch directory anew")
		})
	}
}

// TestCloseWaitsForAStalledWrite: Close must not release the store's
// directory while a write of state.json or config.json is on its way,
// or the next Open (which deletes the temporary files a crash left)
// would run alongside it and serve what the write then changes under
// it.
func TestCloseWaitsForAStalledWrite(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"state.json", configFile} {
		t.Run(file, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := storeDir(t)
				opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
				s, err := Open(dir, opts)
				require.NoError(t, err)
				_, err = s.Create("b")
				require.NoError(t, err)

				entered, release := make(chan struct{}), make(chan struct{})
				hook := func(d, f string) {
					if d == filepath.Join(dir, "b") && f == file {
						close(entered)
						<-release
					}
				}
				testHookWrite.Store(&hook)
				defer testHookWrite.Store(nil)
				opErr := make(chan error, 1)
				go func() {
					if file == configFile {
						_, err := s.SetConfig("b", map[string]any{"hil": true})
						opErr <- err
						return
					}
					opErr <- s.Remove("b")
				}()
				<-entered
				closed := make(chan error, 1)
				go func() { closed <- s.Close() }()
				synctest.Wait()
				select {
				case err := <-closed:
					close(release)
					t.Fatalf("Close returned (%v) while a write of %s was on its way", err, file)
				default:
				}
				_, err = Open(dir, opts)
				require.Error(t, err, "a second Open got the directory while a write was on its way")
				close(release)
				require.NoError(t, <-opErr)
				require.NoError(t, <-closed)

				s, err = Open(dir, opts)
				require.NoError(t, err)
				defer s.Close()
				if file == configFile {
					cfg, err := s.Config("b")
					require.NoError(t, err)
					assert.Contains(t, cfg, "hil", "the configuration saved before Close is lost")
				} else {
					info, err := s.Info("b")
					require.NoError(t, err)
					assert.Equal(t, StatusRemoved, info.Status)
				}
			})
		})
	}
}

// TestAVersionLeftUnrecordedByACrashIsNotServedNorInTheWay: the folder
// and the zip of a new version are moved into place before the record
// naming it is written. A crash in between leaves them with no record:
// the next Open deletes them, and the next upload, which takes the same
// number, stores and serves its own package, not the leftover.
func TestAVersionLeftUnrecordedByACrashIsNotServedNorInTheWay(t *testing.T) {
	t.Parallel()
	dir, opts := servingStore(t)
	// What the crash leaves: version 2's folder, holding something the
	// next upload does not, and its zip.
	v2 := filepath.Join(dir, "demo", "v2")
	require.NoError(t, os.Mkdir(v2, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(v2, "leftover"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "demo", "v2.zip"), []byte("not the upload"), 0o600))

	s, err := Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	assert.NoDirExists(t, v2)
	assert.NoFileExists(t, filepath.Join(dir, "demo", "v2.zip"))
	_, _, err = s.Package("demo", 2)
	assert.ErrorIs(t, err, ErrNotFound)

	pkg := scriptPackage(t, schemaEcho(greetSchema))
	info := upload(t, s, "demo", pkg)
	require.Equal(t, StatusReady, info.Status, "%v", info.Errors)
	assert.Equal(t, 2, info.Serving)
	assert.NoFileExists(t, filepath.Join(v2, "leftover"))
	f, size, err := s.Package("demo", 2)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, int64(len(pkg)), size, "the zip served is not the one uploaded")
}

// TestManyGoroutinesChangingAndReadingOneToolsetDoNotDeadlock: every
// operation that takes the locks of one toolset (its upload lock, its
// write lock, the store's lock), run at once from many goroutines, with
// calls taking and releasing versions, ends: no order of them deadlocks,
// and the store closes after.
func TestManyGoroutinesChangingAndReadingOneToolsetDoNotDeadlock(t *testing.T) {
	t.Parallel()
	dir := storeDir(t)
	opts := &Options{Sandbox: ModeDirect, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(dir, opts)
	require.NoError(t, err)
	ctx := context.Background()
	pkg := demoPackage(t, demoManifest(""))
	upload(t, s, "b", pkg)
	ops := []func(){
		func() { _, _ = s.Upload(ctx, "b", bytes.NewReader(pkg), int64(len(pkg))) },
		func() { _, _ = s.StartUpload(ctx, "b", bytes.NewReader(pkg), int64(len(pkg))) },
		func() { _, _ = s.SetConfig("b", map[string]any{"required_scopes": []any{"x"}}) },
		func() { _ = s.Remove("b") },
		func() { _, _ = s.Create("b") },
		func() {
			tools, err := toolset.BuildTools(ctx, "tester", s.Toolset("b", nil))
			if err == nil {
				_, _ = tools.Execute(ctx, toolset.ToolCall{Name: "b__echo", Args: []byte(`{"text":"x"}`)})
			}
		},
		func() { _, _ = s.Info("b"); _ = s.List(); _, _ = s.Config("b") },
		func() {
			if f, _, err := s.Package("b", 0); err == nil {
				f.Close()
			}
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for g := range 2 * len(ops) {
			wg.Go(func() {
				for i := range 4 {
					ops[(g+i)%len(ops)]()
				}
			})
		}
		wg.Wait()
		assert.NoError(t, s.Close())
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the operations of one toolset, run at once, did not end: a deadlock")
	}
}
