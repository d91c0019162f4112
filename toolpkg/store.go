package toolpkg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
)

// ErrNotFound is returned for a toolset name the store does not know.
var ErrNotFound = errors.New("toolpkg: no such toolset")

// ErrClosed is returned by a closed store.
var ErrClosed = errors.New("toolpkg: store is closed")

// ErrStoreInUse is returned by [Open] when another process (or another
// [Store] of this one) holds the directory: a store has one owner at a
// time. A platform serving the store is the usual owner; talk to it
// through its API instead.
var ErrStoreInUse = errors.New("toolpkg: store is in use by another process (or another Store)")

// Store keeps toolset packages in a directory: one folder per toolset,
// holding state.json (status, discovery results and history),
// config.json (the stored configuration, see [Store.SetConfig]), and a
// folder and the zip of its latest and its serving version (v<N>,
// v<N>.zip). Uploads are extracted into a temporary folder of the store
// and renamed into place, so a crash mid-upload leaves the previous
// version intact. A version that is neither latest nor serving stays on
// disk until no call uses it.
//
// A Store is safe for concurrent use. One process at a time owns a store
// directory (Open takes an exclusive lock); a new process sees what earlier
// ones persisted.
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger
	sb   *sandbox
	lock *os.File
	// artifacts are Options.Artifacts with their defaults.
	artifacts ArtifactOptions

	pyOnce sync.Once
	py     *interpreter
	pyErr  error

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
	busy    sync.WaitGroup // uploads and calls in flight
	// trashSeq names the old versions moved aside.
	trashSeq int

	// bgCtx is canceled by Close: it ends the discoveries running in
	// the background, tracked by bg.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	done     chan struct{} // closed by Close
	bg       sync.WaitGroup
	// discovering holds a token for each discovery running.
	discovering chan struct{}
	// maxToolDefs is MaxToolDefinitionBytes; tests lower it, before any
	// upload, to check the bound without megabytes of schemas.
	maxToolDefs int
}

type entry struct {
	// up is held (a token in it) by an upload from its start to the end
	// of its discovery, and by Remove: it serialises them.
	up chan struct{}
	// wmu is held by whoever changes rec or config, from reading them to
	// publishing the change: it writes state.json or config.json with
	// wmu held and Store.mu released, so that a write of one toolset
	// holds up no reader of the store, and the writes of one toolset
	// land on disk in the order they are published. A change is
	// published, under Store.mu, once its file is written: a reader
	// never sees a record or a configuration that is not on disk. Taken
	// after up, before Store.mu.
	wmu sync.Mutex
	// The rest is guarded by Store.mu; rec and config are changed only
	// with wmu held too.
	rec  record
	refs map[int]int
	gone map[int]bool
	// changed is closed, and replaced, when rec changes.
	changed chan struct{}
	// cancel cancels the discovery running, if any.
	cancel context.CancelFunc
	// removing counts the Removes waiting for e.up: a discovery that
	// starts meanwhile is canceled at once.
	removing int
	// removedUpTo is the last version of the toolset when it was last
	// removed: a call of a version up to it is a call of the removed
	// toolset, which gets no scratch directory.
	removedUpTo int
	// config is the stored configuration; configGen counts its changes.
	config    map[string]any
	configGen uint64
	// sealed are the keys of config whose value stays hidden, whatever
	// the serving version declares.
	sealed map[string]bool
}

// known reports whether the toolset was ever created: an upload of a
// new name makes its entry before it records anything, and may fail.
func (e *entry) known() bool { return e.rec.Status != "" }

// known returns the entry of a toolset the store has had; s.mu is held.
func (s *Store) known(name string) (*entry, bool) {
	e, ok := s.entries[name]
	if !ok || !e.known() {
		return nil, false
	}
	return e, true
}

func newEntry(rec record) *entry {
	return &entry{up: make(chan struct{}, 1), rec: rec, refs: map[int]int{}, gone: map[int]bool{}, changed: make(chan struct{})}
}

// setRec changes the record in memory and wakes those waiting for it;
// s.mu is held.
func (e *entry) setRec(rec record) {
	e.rec = rec
	close(e.changed)
	e.changed = make(chan struct{})
}

// lockUp takes e.up, waiting for the upload or removal holding it; ctx
// and Close end the wait.
func (s *Store) lockUp(ctx context.Context, e *entry) error {
	select {
	case e.up <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return ErrClosed
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		<-e.up
		return ErrClosed
	}
	return nil
}

func (e *entry) unlockUp() { <-e.up }

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$`)

// CheckName reports whether name can name a toolset: 1 to 64 letters,
// digits, '_' or '-', not starting with '_' or '-', without "__" and not
// ending with '_'. The model sees a tool as <toolset>__<tool>, so the
// first "__" of such a name must end the toolset's: "a__b__echo" could
// otherwise be tool "b__echo" of toolset "a" as well as tool "echo" of
// toolset "a__b", and a call for one be served by the other.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("toolpkg: invalid toolset name %q: use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit", name)
	}
	if strings.Contains(name, "__") || strings.HasSuffix(name, "_") {
		return fmt.Errorf("toolpkg: invalid toolset name %q: \"__\" separates a toolset's name from its tools' (<toolset>__<tool>), so a toolset name may not hold it, nor end with '_'", name)
	}
	return nil
}

// Open opens (creating it if needed) the store in dir. It cleans up what a
// crashed process left behind: temporary folders, work directories, and
// versions neither latest nor serving. A toolset left pending (the
// process stopped during its discovery) is discovered again, in the
// background.
func Open(dir string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.DiscoveryTimeout <= 0 {
		o.DiscoveryTimeout = DefaultDiscoveryTimeout
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	o.Limits = o.Limits.withDefaults()
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.KillGrace == 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.MaxParallelDiscovery <= 0 {
		o.MaxParallelDiscovery = DefaultMaxParallelDiscovery
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("toolpkg: store %s: %w", dir, unprefixed{err})
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("toolpkg: store %s: %w", dir, unprefixed{err})
	}
	lock, err := os.OpenFile(filepath.Join(abs, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("toolpkg: store %s: %w", dir, unprefixed{err})
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrStoreInUse, dir, unprefixed{err})
	}
	s := &Store{dir: abs, opts: o, log: o.Logger, lock: lock, entries: map[string]*entry{},
		done: make(chan struct{}), discovering: make(chan struct{}, o.MaxParallelDiscovery),
		maxToolDefs: MaxToolDefinitionBytes}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	fail := func(err error) (*Store, error) {
		s.bgCancel()
		s.unlock()
		return nil, err
	}
	s.sb, err = newSandbox(o.Sandbox, o.Logger)
	if err != nil {
		return fail(err)
	}
	if !searchable(abs, s.sb.runAs) && searchable(filepath.Dir(abs), s.sb.runAs) {
		// The store's own directory (perhaps from os.MkdirTemp) may be
		// private: let the tools' user through, not read it.
		if fi, err := os.Stat(abs); err == nil {
			_ = os.Chmod(abs, fi.Mode().Perm()|0o001)
		}
	}
	if !searchable(abs, s.sb.runAs) {
		return fail(fmt.Errorf("toolpkg: store %s: tools run as uid %d when this process runs as root (sandbox mode %s), and that user cannot reach the store: "+
			"let others search its directory and those above it (chmod o+x), or put the store elsewhere", dir, ToolUID, s.sb.mode))
	}
	for _, d := range []string{".tmp", ".calls"} {
		p := filepath.Join(abs, d)
		if err := removeAll(p); err != nil {
			return fail(fmt.Errorf("toolpkg: store %s: cleaning %s: %w", dir, d, unprefixed{err}))
		}
		err := os.Mkdir(p, 0o711)
		if err == nil {
			err = os.Chmod(p, 0o711) // whatever the umask
		}
		if err != nil {
			return fail(fmt.Errorf("toolpkg: store %s: %w", dir, unprefixed{err}))
		}
	}
	if o.Artifacts != nil {
		s.artifacts = *o.Artifacts
	}
	s.artifacts = s.artifacts.withDefaults()
	if s.artifacts.Store == nil {
		as, err := NewDirArtifactStore(filepath.Join(abs, ".artifacts"), s.artifacts.MaxArtifactBytes)
		if err != nil {
			return fail(err)
		}
		s.artifacts.Store = as
	}
	if err := s.load(); err != nil {
		return fail(err)
	}
	s.resume()
	return s, nil
}

// Close cancels the discoveries running in the background (their
// toolsets stay pending on disk, and are discovered again by the next
// Open), waits for them, for uploads and for calls in flight, then
// releases the store's directory. Closing twice is safe.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.bgCancel()
	s.busy.Wait()
	s.bg.Wait()
	return s.unlock()
}

// unlock releases the store's directory. The lock is dropped before its
// file is closed: a process that another goroutine forks holds a copy
// of the descriptor until it executes its program, and with it the
// lock, which would keep an Open right after Close out.
func (s *Store) unlock() error {
	_ = syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
	return s.lock.Close()
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Sandbox returns the sandbox mode tools run in.
func (s *Store) Sandbox() Mode { return s.sb.mode }

// begin registers an operation in flight.
func (s *Store) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.busy.Add(1)
	return nil
}

func (s *Store) entry(name string) *entry {
	e := s.entries[name]
	if e == nil {
		e = newEntry(record{Info: Info{Name: name}})
		s.entries[name] = e
	}
	return e
}
