package toolpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/atomicfile"
)

// Status is where a toolset is in its lifecycle.
type Status string

// The statuses of a toolset. created → pending → ready | failed; a
// re-upload moves ready or failed back to pending; removed ends it.
const (
	// StatusCreated: the record exists, no package was uploaded yet.
	StatusCreated Status = "created"
	// StatusPending: a package was accepted and discovery runs, or
	// waits for its turn (Options.MaxParallelDiscovery). The serving
	// version, if any, still serves.
	StatusPending Status = "pending"
	// StatusReady: every executable was discovered; agents can use it.
	StatusReady Status = "ready"
	// StatusFailed: discovery of the latest upload failed; Info.Errors
	// says why. The serving version, if any, still serves.
	StatusFailed Status = "failed"
	// StatusRemoved: the toolset was removed.
	StatusRemoved Status = "removed"
)

// Defaults of the store's options.
const (
	DefaultDiscoveryTimeout     = 30 * time.Second
	DefaultMaxOutputBytes       = 102400
	DefaultMaxParallelDiscovery = 4
)

// maxSchemaOutput caps what --schema may print.
const maxSchemaOutput = 8 << 20

// Options configure a [Store]. The zero value is ready to use.
type Options struct {
	// Limits bound the packages the store accepts.
	Limits Limits
	// Sandbox is how tools are isolated; the default, ModeAuto, picks the
	// strongest mode that works on this machine.
	Sandbox Mode
	// DiscoveryTimeout bounds each "<executable> --schema" (default 30 s).
	DiscoveryTimeout time.Duration
	// MaxParallelDiscovery is how many toolsets discover at once (default
	// DefaultMaxParallelDiscovery); the others wait, pending, for a turn.
	MaxParallelDiscovery int
	// MaxOutputBytes caps the text of a result, or of a tool's error, that
	// reaches the model (default 102,400 bytes). It is the budget of all
	// of a result a model or client is sent: the text and inline parts
	// together, and apart the structured result as JSON (see the package
	// documentation, Artifacts).
	MaxOutputBytes int
	// Logger receives the store's logs (default slog.Default()). Secret
	// configuration values never reach it.
	Logger *slog.Logger
	// Artifacts configure the artifacts calls read and write, and what
	// the model sees of a result (nil: the defaults, SAM's thresholds).
	Artifacts *ArtifactOptions

	// Python is the interpreter Python tools run with: a path, or a
	// command looked up on PATH. Default: the SAM_STR_PYTHON environment
	// variable, else python3. A wrapper (a pyenv shim) is seen through:
	// the store asks the interpreter for its sys.executable and
	// sys.prefix once, runs the former, and under bwrap shows the
	// latter read-only at the same path.
	Python string
	// PythonPath is put on a Python tool's PYTHONPATH after
	// <package>/python. Under bwrap its directories must be inside the
	// sandbox's system directories (/usr, ...).
	PythonPath []string
	// StrictManifest refuses a manifest with unknown keys or without
	// version or runtime, instead of warning (see [ParseManifestStrict]).
	StrictManifest bool
	// KillGrace is how long a tool has, between the SIGTERM sent at its
	// timeout (or when its call is canceled) and the SIGKILL that ends
	// it, to clean up and write its result (default
	// DefaultKillGrace; negative: no grace, SIGKILL at once).
	KillGrace time.Duration
	// Scratch says which tools get a persistent scratch directory of
	// their toolset (default ScratchDefault: those of the standard and
	// permissive profiles).
	Scratch ScratchPolicy
	// LLM answers the llm/call requests tools send over their IPC
	// socket (runner_args.json's ipc_socket). Without it ipc_socket is
	// empty, and the platform's SDKs tell the tool that LLM calls are
	// not available.
	LLM LLMFunc
	// Trace, when set, gives each tool the trace context of its call
	// (see [toolset.TracePropagator]): its W3C traceparent in the
	// TRACEPARENT environment variable and its tracestate, if any, in
	// TRACESTATE, in every sandbox mode. A field too long, or with a byte
	// outside printable ASCII, is left out. oteltoolset.Propagator makes
	// one from OpenTelemetry.
	Trace toolset.TracePropagator
}

// DefaultKillGrace is the default of Options.KillGrace.
const DefaultKillGrace = 3 * time.Second

// Info is the record of one toolset.
//
// Version, Uploaded, Status, Errors and Warnings describe the latest
// upload; Serving, Executables and Tools the version the store's Toolsets
// list, which a pending or failed re-upload leaves in place.
type Info struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Version counts the packages uploaded under this name; 0 before the
	// first. It is the latest upload, whatever its status.
	Version int `json:"version"`
	// Serving is the version whose tools the store's Toolsets list: the
	// latest one discovered ready; 0 when none is (nothing was uploaded,
	// every upload failed, or the toolset was removed).
	Serving int `json:"serving"`
	// Uploaded is when Version was uploaded.
	Uploaded time.Time `json:"uploaded,omitzero"`
	// Executables are the manifest's entries of the serving version, or
	// of Version when nothing serves.
	Executables []Executable `json:"executables,omitempty"`
	// Tools are the tools discovered in the serving version.
	Tools []ToolInfo `json:"tools,omitempty"`
	// Errors are the discovery errors of Version when Status is failed.
	Errors []string `json:"errors,omitempty"`
	// Warnings are what the manifest of Version holds that this runtime
	// ignored (unknown keys, each with its line).
	Warnings []string `json:"warnings,omitempty"`
	// Versions are the latest uploads, newest first: at most
	// MaxVersionHistory.
	Versions []VersionInfo `json:"versions,omitempty"`
	// Updated is when the record last changed.
	Updated time.Time `json:"updated"`
}

// VersionInfo is one upload of a toolset, in [Info.Versions].
type VersionInfo struct {
	Version  int       `json:"version"`
	Uploaded time.Time `json:"uploaded,omitzero"`
	// Status is pending, ready or failed.
	Status Status `json:"status"`
	// Tools is how many tools discovery found (0 unless ready).
	Tools int `json:"tools"`
	// Errors are the discovery errors of a failed upload: at most
	// MaxVersionErrors, each cut to a bounded length.
	Errors []string `json:"errors,omitempty"`
}

// Bounds of [Info.Versions].
const (
	// MaxVersionHistory is how many uploads Info.Versions keeps.
	MaxVersionHistory = 20
	// MaxVersionErrors is how many errors a VersionInfo keeps.
	MaxVersionErrors = 5
)

func (i Info) clone() Info {
	i.Executables = append([]Executable(nil), i.Executables...)
	i.Tools = append([]ToolInfo(nil), i.Tools...)
	i.Errors = append([]string(nil), i.Errors...)
	i.Warnings = append([]string(nil), i.Warnings...)
	vs := make([]VersionInfo, len(i.Versions))
	for j, v := range i.Versions {
		v.Errors = append([]string(nil), v.Errors...)
		vs[j] = v
	}
	i.Versions = vs
	return i
}

// record is the on-disk state of a toolset.
type record struct {
	Info
	// LastVersion is the highest version number ever used, so numbers are
	// never reused.
	LastVersion int `json:"last_version"`
	// Candidate holds the manifest's entries of Version while it is not
	// the serving version (pending or failed).
	Candidate []Executable `json:"candidate,omitempty"`
}

// live reports whether version v must stay: it is the latest upload or
// the serving one.
func (r *record) live(v int) bool {
	return v > 0 && r.Status != StatusRemoved && (v == r.Version || v == r.Serving)
}

// candidate returns the manifest's entries of Version.
func (r *record) candidate() []Executable {
	if r.Version == r.Serving {
		return r.Executables
	}
	if r.Candidate == nil && r.Serving == 0 {
		return r.Executables
	}
	return r.Candidate
}

// setVersion records what is known of version v in the history.
func (r *record) setVersion(vi VersionInfo) {
	errs := vi.Errors
	vi.Errors = nil
	for i, e := range errs {
		if i == MaxVersionErrors {
			vi.Errors = append(vi.Errors, fmt.Sprintf("and %d more", len(errs)-MaxVersionErrors))
			break
		}
		vi.Errors = append(vi.Errors, cutText(e, maxVersionErrorBytes))
	}
	for i := range r.Versions {
		if r.Versions[i].Version == vi.Version {
			r.Versions[i] = vi
			return
		}
	}
	r.Versions = append([]VersionInfo{vi}, r.Versions...)
	if len(r.Versions) > MaxVersionHistory {
		r.Versions = r.Versions[:MaxVersionHistory]
	}
}

// maxVersionErrorBytes bounds an error of [VersionInfo.Errors].
const maxVersionErrorBytes = 512

// cutText cuts s to at most n bytes, at a UTF-8 boundary, saying so.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// ErrNotFound is returned for a toolset name the store does not know.
var ErrNotFound = errors.New("toolpkg: no such toolset")

// ErrClosed is returned by a closed store.
var ErrClosed = errors.New("toolpkg: store is closed")

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
		return nil, fmt.Errorf("toolpkg: store %s is in use by another process (or another Store): %w", dir, unprefixed{err})
	}
	s := &Store{dir: abs, opts: o, log: o.Logger, lock: lock, entries: map[string]*entry{},
		done: make(chan struct{}), discovering: make(chan struct{}, o.MaxParallelDiscovery)}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	fail := func(err error) (*Store, error) {
		s.bgCancel()
		lock.Close()
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

// load reads every toolset's state.json and tidies its folder.
func (s *Store) load() error {
	des, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("toolpkg: store %s: %w", s.dir, unprefixed{err})
	}
	for _, de := range des {
		name := de.Name()
		if !de.IsDir() || CheckName(name) != nil {
			continue
		}
		s.removeLeftovers(name)
		// Read as a file a tool may have written: no link followed, no
		// pipe waited on, the size capped.
		data, err := readWorkFile(filepath.Join(s.dir, name), "state.json", maxStateFile)
		if errors.Is(err, errNoFile) {
			s.log.Warn("toolpkg: ignoring a folder without state.json", "store", s.dir, "folder", name)
			continue
		}
		var rec record
		if err == nil {
			err = json.Unmarshal(data, &rec)
		}
		if err == nil {
			rec.upgrade()
		}
		if err == nil && rec.Status != StatusRemoved {
			// Its versions must be there, or they would be deleted
			// below as old.
			for _, v := range []int{rec.Version, rec.Serving} {
				if v <= 0 {
					continue
				}
				if fi, serr := os.Lstat(s.versionDir(name, v)); serr != nil || !fi.IsDir() {
					err = fmt.Errorf("version %d has no folder", v)
					break
				}
			}
		}
		if err == nil {
			err = rec.check()
		}
		if err != nil {
			// One damaged record must not take the store down: the
			// toolset is failed, its files stay as they are, and a new
			// upload replaces the record.
			s.log.Error("toolpkg: damaged state.json; the toolset is marked failed", "store", s.dir, "toolset", name, "error", err)
			rec = record{
				Info: Info{Name: name, Status: StatusFailed, Updated: time.Now().UTC(),
					Errors: []string{fmt.Sprintf("the toolset's state.json cannot be read (%v); upload the package again", err)}},
				LastVersion: s.highestVersion(name),
			}
			e := newEntry(rec)
			e.config, e.sealed = s.loadConfig(name)
			s.entries[name] = e
			continue
		}
		rec.Name = name
		for i := range rec.Tools {
			for j, f := range rec.Tools[i].Config {
				if f.Default != nil {
					// JSON gave integers back as float64.
					rec.Tools[i].Config[j].Default, _ = convertConfigValue(f, f.Default)
				}
			}
		}
		e := newEntry(rec)
		if rec.Status != StatusRemoved {
			e.config, e.sealed = s.loadConfig(name)
		} else {
			// Left by a process that stopped during Remove: the
			// configuration holds secrets.
			if err := os.Remove(s.configPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.log.Warn("toolpkg: could not delete a removed toolset's configuration", "toolset", name, "error", err)
			}
			if err := removeAll(s.scratchDir(name)); err != nil {
				s.log.Warn("toolpkg: could not delete a removed toolset's scratch directory", "toolset", name, "error", err)
			}
		}
		s.entries[name] = e
		vs, _ := os.ReadDir(filepath.Join(s.dir, name))
		for _, v := range vs {
			n, ok := versionNumber(v.Name())
			if !ok {
				n, ok = zipNumber(v.Name())
			}
			if ok && !rec.live(n) {
				if err := removeAll(filepath.Join(s.dir, name, v.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeLeftovers deletes the temporary files a crash left in a
// toolset's folder (a configuration's hold secrets).
func (s *Store) removeLeftovers(name string) {
	des, _ := os.ReadDir(filepath.Join(s.dir, name))
	for _, de := range des {
		if n := de.Name(); !de.IsDir() && (strings.HasPrefix(n, ".config-") || strings.HasPrefix(n, ".state-")) {
			_ = os.Remove(filepath.Join(s.dir, name, n))
		}
	}
}

// upgrade fills in what a state.json written by an earlier version of
// this package lacks: the serving version (the current one, when it was
// ready; none otherwise, as no other was kept) and the history (the
// current version alone).
func (r *record) upgrade() {
	if r.Serving == 0 && r.Status == StatusReady && r.Version > 0 {
		r.Serving = r.Version
	}
	if r.Version != r.Serving && r.Candidate == nil && r.Serving == 0 {
		r.Candidate = r.Executables
	}
	if r.Uploaded.IsZero() && r.Version > 0 {
		r.Uploaded = r.Updated
	}
	if r.Versions == nil && r.Version > 0 && r.Status != StatusRemoved {
		r.setVersion(VersionInfo{Version: r.Version, Uploaded: r.Uploaded, Status: r.Status, Tools: len(r.Tools), Errors: r.Errors})
	}
}

// resume discovers again, in the background, the toolsets left pending.
func (s *Store) resume() {
	for _, name := range sortedKeys(s.entries) {
		e := s.entries[name]
		if e.rec.Status != StatusPending || e.rec.Version == 0 {
			continue
		}
		e.up <- struct{}{} // free: nothing else runs yet
		rec := e.rec
		s.log.Info("toolpkg: discovering again a toolset left pending", "toolset", name, "version", rec.Version)
		s.mu.Lock()
		ctx := s.startDiscoveryLocked(e)
		s.mu.Unlock()
		go s.discoverInBackground(ctx, name, e, rec.Version, rec.candidate(), nil)
	}
}

// maxStateFile caps the size of a state.json: the serving version's tool
// definitions (MaxToolDefinitionBytes) with room for the rest.
const maxStateFile = 64 << 20

// check refuses a record that names files outside its own package, or
// holds what discovery would never have accepted: the record is on disk,
// where it may have been damaged or tampered with.
func (r record) check() error {
	if err := checkExecutables(r.Candidate, false); err != nil {
		return err
	}
	if err := checkExecutables(r.Executables, r.Serving > 0 || r.Status == StatusReady); err != nil {
		return err
	}
	keys := map[string]bool{}
	for _, ex := range r.Executables {
		keys[ex.Key] = true
	}
	for _, t := range r.Tools {
		if !toolNamePattern.MatchString(t.Name) {
			return fmt.Errorf("tool name %s is invalid", quoteShort(t.Name))
		}
		if !keys[t.Executable] {
			return fmt.Errorf("tool %q names executable %s, which the record does not have", t.Name, quoteShort(t.Executable))
		}
		if t.TimeoutSeconds <= 0 || t.TimeoutSeconds > FormatMaxTimeoutSeconds {
			return fmt.Errorf("tool %q: timeout of %d seconds is out of range", t.Name, t.TimeoutSeconds)
		}
	}
	if r.Version < 0 || r.LastVersion < r.Version {
		return fmt.Errorf("version %d and last version %d do not go together", r.Version, r.LastVersion)
	}
	if r.Serving < 0 || r.Serving > r.Version || (r.Status == StatusReady && r.Serving != r.Version) {
		return fmt.Errorf("serving version %d and version %d (status %s) do not go together", r.Serving, r.Version, r.Status)
	}
	if len(r.Versions) > MaxVersionHistory {
		return fmt.Errorf("the history holds %d versions; at most %d are kept", len(r.Versions), MaxVersionHistory)
	}
	return nil
}

// checkExecutables checks the manifest entries of a record; discovered
// says their files were found (a file named must be where the executable
// is looked up in any case: a pending version is discovered again).
func checkExecutables(exes []Executable, discovered bool) error {
	for _, ex := range exes {
		if !keyPattern.MatchString(ex.Key) {
			return fmt.Errorf("executable key %s is invalid", quoteShort(ex.Key))
		}
		switch {
		case ex.Runtime != "" && ex.Runtime != RuntimeGo && ex.Runtime != RuntimePython:
			return fmt.Errorf("executable %q: runtime %s is unknown", ex.Key, quoteShort(string(ex.Runtime)))
		case ex.Profile != Restrictive && ex.Profile != Standard && ex.Profile != Permissive:
			return fmt.Errorf("executable %q: sandbox profile %s is unknown", ex.Key, quoteShort(string(ex.Profile)))
		case ex.Kind != "" && ex.Kind != KindNative && ex.Kind != KindPython && ex.Kind != KindScript:
			return fmt.Errorf("executable %q: kind %s is unknown", ex.Key, quoteShort(string(ex.Kind)))
		}
		if clean, msg := cleanPackagePath(ex.Path); msg != "" || clean != ex.Path {
			return fmt.Errorf("executable %q: path %s is not a path inside the package", ex.Key, quoteShort(ex.Path))
		}
		if (discovered || ex.File != "") && !contains(ex.Candidates(), ex.File) {
			return fmt.Errorf("executable %q: file %s is not where the executable is looked up", ex.Key, quoteShort(ex.File))
		}
	}
	return nil
}

// highestVersion returns the highest version folder of a toolset, so
// that a new upload never reuses its number.
func (s *Store) highestVersion(name string) int {
	vs, _ := os.ReadDir(filepath.Join(s.dir, name))
	highest := 0
	for _, v := range vs {
		if n, ok := versionNumber(v.Name()); ok && n > highest {
			highest = n
		}
	}
	return highest
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

// Create records a toolset with no package yet (status created). Creating
// a toolset that exists is an error, unless it was removed.
func (s *Store) Create(name string) (Info, error) {
	if err := CheckName(name); err != nil {
		return Info{}, err
	}
	if err := s.begin(); err != nil {
		return Info{}, err
	}
	defer s.busy.Done()
	s.mu.Lock()
	e := s.entry(name)
	s.mu.Unlock()
	e.wmu.Lock()
	defer e.wmu.Unlock()
	s.mu.Lock()
	if e.known() && e.rec.Status != StatusRemoved {
		s.mu.Unlock()
		return Info{}, fmt.Errorf("toolpkg: toolset %q already exists (status %s)", name, e.rec.Status)
	}
	rec := e.rec
	s.mu.Unlock()
	rec.Info = Info{Name: name, Status: StatusCreated, Updated: time.Now().UTC(), Versions: rec.Versions}
	rec.Candidate = nil
	if err := s.persist(rec); err != nil {
		return Info{}, err
	}
	s.mu.Lock()
	e.setRec(rec)
	s.mu.Unlock()
	return rec.Info.clone(), nil
}

// UploadFile uploads the package at path; see [Store.Upload].
func (s *Store) UploadFile(ctx context.Context, name, path string) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, fmt.Errorf("toolpkg: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Info{}, fmt.Errorf("toolpkg: %w", err)
	}
	return s.Upload(ctx, name, f, fi.Size())
}

// Upload validates the package (a zip of size bytes read through r),
// stores it as the toolset's next version and discovers its tools,
// creating the toolset if needed: it is [Store.StartUpload], then
// [Store.Wait]. A package that fails validation returns a
// *ValidationError and changes nothing. Otherwise the status is pending
// while discovery runs, then ready or failed, which the returned Info
// shows (a failed discovery is not an error of Upload: Info.Errors says
// what went wrong, and the previous version, if any, keeps serving).
// Canceling ctx ends the wait, not the discovery.
func (s *Store) Upload(ctx context.Context, name string, r io.ReaderAt, size int64) (Info, error) {
	if _, err := s.StartUpload(ctx, name, r, size); err != nil {
		return Info{}, err
	}
	return s.Wait(ctx, name)
}

// StartUpload validates the package (a zip of size bytes read through r)
// and stores it as the toolset's next version, creating the toolset if
// needed, then returns its record, status pending, while discovery runs
// in the background. A package that fails validation returns a
// *ValidationError and changes nothing.
//
// Uploads of one toolset are serialised: while an earlier upload's
// discovery runs, StartUpload waits for it to end; canceling ctx ends
// the wait with an error wrapping ctx.Err(), and nothing changes. Once
// StartUpload returns, ctx no longer matters: discovery ends with
// [Store.Close] or [Store.Remove] only. At most
// [Options.MaxParallelDiscovery] toolsets discover at once; the others
// wait, pending. [Store.Wait] waits for the result.
func (s *Store) StartUpload(ctx context.Context, name string, r io.ReaderAt, size int64) (Info, error) {
	if err := CheckName(name); err != nil {
		return Info{}, err
	}
	c, err := checkZip(r, size, s.opts.Limits, s.opts.StrictManifest)
	if err != nil {
		return Info{}, err
	}
	if err := s.begin(); err != nil {
		return Info{}, err
	}
	defer s.busy.Done()
	s.mu.Lock()
	e := s.entry(name)
	s.mu.Unlock()
	if err := s.lockUp(ctx, e); err != nil {
		return Info{}, fmt.Errorf("toolpkg: upload %q: waiting for the previous upload's discovery: %w", name, unprefixed{err})
	}
	// From here on, e.up is held: released on failure, or handed to
	// the discovery.
	handed := false
	defer func() {
		if !handed {
			e.unlockUp()
		}
	}()

	tmp, err := os.MkdirTemp(filepath.Join(s.dir, ".tmp"), name+"-")
	if err != nil {
		return Info{}, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	defer removeAll(tmp)
	pkgTmp := filepath.Join(tmp, "package")
	if err := os.Mkdir(pkgTmp, 0o755); err != nil {
		return Info{}, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	if err := extract(c, pkgTmp, s.opts.Limits); err != nil {
		return Info{}, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	// The tools may run as another user, who must read the package.
	if err := chmodDirs(pkgTmp, 0o755); err != nil {
		return Info{}, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	zipTmp := filepath.Join(tmp, "package.zip")
	if err := copyZip(zipTmp, r, size); err != nil {
		return Info{}, fmt.Errorf("toolpkg: upload %q: keeping the zip: %w", name, unprefixed{err})
	}
	exes := make([]Executable, len(c.manifest.Executables))
	// What each executable is; one this runtime cannot run fails
	// discovery.
	kindErrs := map[string]error{}
	for i, ex := range c.manifest.Executables {
		ex.File, _ = c.lookup(ex)
		if kind, err := inspectExecutable(filepath.Join(pkgTmp, filepath.FromSlash(ex.File)), ex.Runtime); err != nil {
			kindErrs[ex.Key] = err
		} else {
			ex.Kind = kind
		}
		exes[i] = ex
	}
	err = os.MkdirAll(filepath.Join(s.dir, name), 0o755)
	if err == nil {
		err = os.Chmod(filepath.Join(s.dir, name), 0o755)
	}
	if err != nil {
		return Info{}, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}

	// The new version's folder and zip are moved into place, and the
	// record written, with e.wmu held and s.mu released: no one uses
	// version v before the record naming it is published.
	e.wmu.Lock()
	wlocked := true
	defer func() {
		if wlocked {
			e.wmu.Unlock()
		}
	}()
	s.mu.Lock()
	prev := e.rec
	s.mu.Unlock()
	v := prev.LastVersion + 1
	pkgDir := s.versionDir(name, v)
	if err := os.Rename(pkgTmp, pkgDir); err != nil {
		return Info{}, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	if err := os.Rename(zipTmp, s.zipPath(name, v)); err != nil {
		removeAll(pkgDir)
		return Info{}, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	var warnings []string
	for _, w := range c.manifest.Warnings {
		warnings = append(warnings, ManifestName+": "+w.String())
	}
	now := time.Now().UTC()
	rec := prev
	rec.LastVersion = v
	rec.Name, rec.Status, rec.Version, rec.Uploaded, rec.Updated = name, StatusPending, v, now, now
	rec.Errors, rec.Warnings, rec.Candidate = nil, warnings, exes
	if prev.Status == StatusRemoved || prev.Status == StatusCreated || prev.Serving == 0 {
		rec.Serving, rec.Tools, rec.Executables = 0, nil, exes
	}
	rec.Versions = append([]VersionInfo(nil), prev.Versions...)
	rec.setVersion(VersionInfo{Version: v, Uploaded: now, Status: StatusPending})
	if err := s.persist(rec); err != nil {
		removeAll(pkgDir)
		os.Remove(s.zipPath(name, v))
		return Info{}, err
	}
	s.mu.Lock()
	e.setRec(rec)
	// The previous upload, unless it serves, is gone: it failed.
	trash := s.retireLocked(name, e, prev.Version)
	dctx := s.startDiscoveryLocked(e)
	handed = true
	s.mu.Unlock()
	wlocked = false
	e.wmu.Unlock()
	s.deleteVersions(name, trash)
	s.log.Info("toolpkg: package accepted, discovering", "toolset", name, "version", v)
	for _, w := range warnings {
		s.log.Warn("toolpkg: "+w, "toolset", name, "version", v)
	}
	if s.sb.mode != ModeBwrap {
		for _, ex := range exes {
			if ex.Profile == Restrictive {
				s.log.Warn("toolpkg: the restrictive profile cannot cut off the network in this sandbox mode; only bwrap can",
					"toolset", name, "executable", ex.Key, "mode", string(s.sb.mode))
			}
		}
	}
	go s.discoverInBackground(dctx, name, e, v, exes, kindErrs)
	return rec.Info.clone(), nil
}

// startDiscoveryLocked registers a discovery of e about to start and
// returns its context, which Close and Remove cancel; s.mu is held.
func (s *Store) startDiscoveryLocked(e *entry) context.Context {
	ctx, cancel := context.WithCancel(s.bgCtx)
	e.cancel = cancel
	if e.removing > 0 {
		cancel()
	}
	s.bg.Add(1)
	return ctx
}

// discoverInBackground discovers version v of a toolset, holding e.up,
// which it releases at the end, under the bound of
// Options.MaxParallelDiscovery. Canceled (by Close or Remove), it leaves
// the record as it is: pending.
//
// The caller made ctx with startDiscovery, and called s.bg.Add(1).
func (s *Store) discoverInBackground(ctx context.Context, name string, e *entry, v int, exes []Executable, kindErrs map[string]error) {
	defer s.bg.Done()
	defer e.unlockUp()
	defer func() {
		s.mu.Lock()
		e.cancel()
		e.cancel = nil
		s.mu.Unlock()
	}()
	select {
	case s.discovering <- struct{}{}:
	case <-ctx.Done():
		return
	}
	pkgDir := s.versionDir(name, v)
	if kindErrs == nil {
		// Discovered again after a restart: what each executable is was
		// not kept when this runtime cannot run it.
		kindErrs = map[string]error{}
		for _, ex := range exes {
			if ex.Kind != "" {
				continue
			}
			if _, err := inspectExecutable(filepath.Join(pkgDir, filepath.FromSlash(ex.File)), ex.Runtime); err != nil {
				kindErrs[ex.Key] = err
			}
		}
	}
	start := time.Now()
	tools, errs := s.discover(ctx, name, pkgDir, exes, kindErrs)
	<-s.discovering
	if ctx.Err() != nil {
		s.log.Info("toolpkg: discovery canceled; the toolset stays pending", "toolset", name, "version", v)
		return
	}

	e.wmu.Lock()
	s.mu.Lock()
	rec := e.rec
	s.mu.Unlock()
	if rec.Version != v || rec.Status != StatusPending {
		e.wmu.Unlock()
		return
	}
	if len(errs) == 0 {
		// Checked here, with e.wmu held, as SetConfig checks against
		// the serving version: the stored configuration always fits it.
		for _, p := range checkStoredConfig(tools, e.config, e.sealed) {
			errs = append(errs, "the store's configuration of the toolset does not fit this version (change it with SetConfig, then upload again): "+p)
		}
		errs = capProblems(errs)
	}
	old := rec.Serving
	rec.Updated = time.Now().UTC()
	rec.Versions = append([]VersionInfo(nil), rec.Versions...)
	if len(errs) > 0 {
		rec.Status, rec.Errors = StatusFailed, errs
		rec.setVersion(VersionInfo{Version: v, Uploaded: rec.Uploaded, Status: StatusFailed, Errors: errs})
	} else {
		rec.Status, rec.Errors = StatusReady, nil
		rec.Serving, rec.Tools, rec.Executables, rec.Candidate = v, tools, exes, nil
		rec.setVersion(VersionInfo{Version: v, Uploaded: rec.Uploaded, Status: StatusReady, Tools: len(tools)})
	}
	// Not saved, the result holds in memory all the same, so that no
	// one waits for ever; on disk the toolset stays pending, and the next
	// Open discovers it again.
	// The old version's folder stays while state.json names it.
	err := s.persist(rec)
	s.mu.Lock()
	e.setRec(rec)
	var trash []string
	if err == nil {
		trash = s.retireLocked(name, e, old)
	}
	s.mu.Unlock()
	e.wmu.Unlock()
	s.deleteVersions(name, trash)
	switch {
	case err != nil:
		s.log.Error("toolpkg: discovery finished, but its result could not be saved; the next Open discovers the toolset again", "toolset", name, "version", v, "status", string(rec.Status), "error", err)
	case rec.Status == StatusReady:
		s.log.Info("toolpkg: toolset ready", "toolset", name, "version", v, "tools", len(tools), "discovery", time.Since(start).Round(time.Millisecond))
	default:
		s.log.Warn("toolpkg: discovery failed", "toolset", name, "version", v, "serving", rec.Serving, "errors", errs)
	}
}

// Wait waits until the toolset is not pending and returns its record.
// Canceling ctx ends the wait with ctx.Err(); closing the store, with
// ErrClosed.
func (s *Store) Wait(ctx context.Context, name string) (Info, error) {
	for {
		s.mu.Lock()
		e, ok := s.known(name)
		if !ok {
			s.mu.Unlock()
			return Info{}, fmt.Errorf("%w: %q", ErrNotFound, name)
		}
		if e.rec.Status != StatusPending {
			info := e.rec.Info.clone()
			s.mu.Unlock()
			return info, nil
		}
		changed := e.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Info{}, fmt.Errorf("toolpkg: waiting for the discovery of %q: %w", name, ctx.Err())
		case <-s.done:
			return Info{}, fmt.Errorf("toolpkg: waiting for the discovery of %q: %w", name, ErrClosed)
		}
	}
}

// copyZip writes the size bytes of r to a new file at p.
func copyZip(p string, r io.ReaderAt, size int64) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.NewSectionReader(r, 0, size))
	if err == nil && n != size {
		err = fmt.Errorf("read %d of %d bytes", n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Info returns the record of a toolset; ErrNotFound if the store has
// never had it.
func (s *Store) Info(name string) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.known(name)
	if !ok {
		return Info{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return e.rec.Info.clone(), nil
}

// Status returns a toolset's status.
func (s *Store) Status(name string) (Status, error) {
	i, err := s.Info(name)
	return i.Status, err
}

// DiscoveryErrors returns why a toolset's discovery failed, or nil.
func (s *Store) DiscoveryErrors(name string) ([]string, error) {
	i, err := s.Info(name)
	return i.Errors, err
}

// List returns the records of the toolsets that were not removed, sorted
// by name.
func (s *Store) List() []Info { return s.list(false) }

// ListAll returns the records of every toolset the store knows, those
// removed included (status removed, with their history), sorted by name.
func (s *Store) ListAll() []Info { return s.list(true) }

func (s *Store) list(removed bool) []Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Info
	for _, e := range s.entries {
		if e.known() && (removed || e.rec.Status != StatusRemoved) {
			out = append(out, e.rec.Info.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

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

// zipPath is where the zip of version v is kept.
func (s *Store) zipPath(name string, v int) string {
	return filepath.Join(s.dir, name, "v"+strconv.Itoa(v)+".zip")
}

// zipNumber returns the version of a kept zip's file name.
func zipNumber(file string) (int, bool) {
	base, ok := strings.CutSuffix(file, ".zip")
	if !ok {
		return 0, false
	}
	return versionNumber(base)
}

func (s *Store) versionDir(name string, v int) string {
	return filepath.Join(s.dir, name, "v"+strconv.Itoa(v))
}

func versionNumber(dir string) (int, bool) {
	if !strings.HasPrefix(dir, "v") {
		return 0, false
	}
	n, err := strconv.Atoi(dir[1:])
	return n, err == nil && n > 0
}

// persist writes a toolset's state.json atomically: a temporary file,
// synced, then renamed over the old one. The caller holds the entry's
// wmu, never s.mu.
func (s *Store) persist(rec record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("toolpkg: encoding the state of %q: %w", rec.Name, unprefixed{err})
	}
	dir := filepath.Join(s.dir, rec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("toolpkg: saving the state of %q: %w", rec.Name, unprefixed{err})
	}
	if h := testHookWrite.Load(); h != nil {
		(*h)(dir, "state.json")
	}
	if err := atomicfile.Write(dir, ".state-*.json", "state.json", append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("toolpkg: saving the state of %q: %w", rec.Name, err)
	}
	return nil
}

// testHookWrite, set by tests alone, is called with a toolset's folder
// and the file's name before state.json or config.json is written.
var testHookWrite atomic.Pointer[func(dir, file string)]

// discover runs "<executable> --schema" for each executable of a package
// and returns the tools found and every problem.
func (s *Store) discover(ctx context.Context, name, pkgDir string, exes []Executable, kindErrs map[string]error) ([]ToolInfo, []string) {
	var tools []ToolInfo
	var errs []string
	owner := map[string]string{}
	for _, ex := range exes {
		if err := kindErrs[ex.Key]; err != nil {
			errs = append(errs, cutProblem(fmt.Sprintf("executable %q: %s %v", ex.Key, ex.File, err)))
			continue
		}
		out, err := s.schemaOf(ctx, pkgDir, ex, nil, nil)
		if err != nil {
			errs = append(errs, cutProblem(fmt.Sprintf("executable %q: %v", ex.Key, err)))
			continue
		}
		found, probs := parseSchemaOutput(ex, out)
		for _, p := range probs {
			errs = append(errs, fmt.Sprintf("executable %q: %s", ex.Key, p))
		}
		for _, t := range found {
			if max := s.opts.Limits.MaxTimeoutSeconds; t.TimeoutSeconds > max {
				errs = append(errs, fmt.Sprintf("executable %q: tool %q: timeout_seconds asks for %d seconds; this store allows at most %d", ex.Key, t.Name, t.TimeoutSeconds, max))
				continue
			}
			if other, dup := owner[t.Name]; dup {
				errs = append(errs, fmt.Sprintf("tool %q is exposed by both executable %q and executable %q", t.Name, other, ex.Key))
				continue
			}
			owner[t.Name] = ex.Key
			tools = append(tools, t)
		}
	}
	if len(tools) > MaxTools {
		errs = append(errs, fmt.Sprintf("the package exposes %d tools; at most %d are allowed", len(tools), MaxTools))
	}
	// Each executable's output is bounded, not their number.
	if data, err := json.Marshal(tools); err != nil || len(data) > MaxToolDefinitionBytes {
		errs = append(errs, fmt.Sprintf("the tool definitions add up to %d bytes of JSON; at most %d are allowed", len(data), MaxToolDefinitionBytes))
	}
	// A key one tool declares secret is secret for all of them.
	secretKeys := map[string]bool{}
	for _, t := range tools {
		for _, f := range t.Config {
			if f.Secret {
				secretKeys[f.Key] = true
			}
		}
	}
	secretBytes := 0
	for k := range secretKeys {
		secretBytes += len(k)
	}
	for _, t := range tools {
		for _, f := range t.Config {
			if d, ok := f.Default.(string); ok && secretKeys[f.Key] {
				secretBytes += len(d)
			}
		}
	}
	if secretBytes > MaxSecretBytes {
		errs = append(errs, fmt.Sprintf("the secret configuration keys and their defaults add up to %d bytes; at most %d are allowed", secretBytes, MaxSecretBytes))
	}
	for _, t := range tools {
		if full := name + "__" + t.Name; len(full) > 64 {
			errs = append(errs, fmt.Sprintf("tool %q: the model would see %q, %d characters; names may have at most 64", t.Name, full, len(full)))
		}
	}
	return tools, capProblems(errs)
}

// schemaOf runs "<executable> --schema" in the sandbox and returns what it
// printed. With a config, it runs "<executable> --schema --config FILE",
// FILE holding the config as a JSON object.
//
// With a configuration, sec holds its secrets: they are hidden in what the
// executable prints, on stdout (tool definitions reach the model) and on
// stderr (an error), before anything reads it.
func (s *Store) schemaOf(ctx context.Context, pkgDir string, ex Executable, config map[string]any, sec *secrets) ([]byte, error) {
	callDir, work, err := s.newCallDir("schema-")
	if err != nil {
		return nil, err
	}
	defer removeAll(callDir)
	l, err := s.launchFor(pkgDir, work, ex)
	if err != nil {
		return nil, err
	}
	l.args = []string{"--schema"}
	l.stderrMargin = int64(12 * sec.maxLen())
	if config != nil {
		data, err := json.Marshal(config)
		if err != nil {
			return nil, fmt.Errorf("encoding the config for --schema --config: %w", err)
		}
		if err := s.writeToolFile(filepath.Join(work, "config.json"), data); err != nil {
			return nil, err
		}
		_, workView := s.sb.paths(l)
		l.args = append(l.args, "--config", filepath.Join(workView, "config.json"))
	}
	res, err := s.sb.runProcess(ctx, l, s.opts.DiscoveryTimeout, callDir, maxSchemaOutput)
	switch {
	case err != nil:
		return nil, fmt.Errorf("--schema did not run: %w", err)
	case res.timedOut:
		return nil, fmt.Errorf("--schema did not finish within %s (discovery timeout)", s.opts.DiscoveryTimeout)
	case config != nil && res.signal == 0 && res.exitCode == 1:
		// Exit code 1 is bad usage: an executable that does not know
		// --config.
		return nil, fmt.Errorf("%w (exit code 1)%s", errNoConfigFlag, stderrSuffix(res.stderrText(sec)))
	case res.signal != 0 || res.exitCode != 0:
		return nil, fmt.Errorf("--schema failed (%s)%s", res.describeExit(l.limits), stderrSuffix(res.stderrText(sec)))
	case res.stdoutN > maxSchemaOutput:
		return nil, fmt.Errorf("--schema printed %d bytes; at most %d are allowed", res.stdoutN, maxSchemaOutput)
	}
	out := bytes.TrimSpace(res.stdout)
	if sec != nil {
		// Values only: a parameter may share a secret key's name.
		out = []byte(sec.replaceValues(string(out)))
	}
	return out, nil
}

// errNoConfigFlag is the error of an executable that refuses
// --schema --config as bad usage.
var errNoConfigFlag = errors.New("--schema --config was refused as bad usage")

func stderrSuffix(stderr string) string {
	stderr = strings.TrimSpace(stderr)
	if stderr == "" {
		return "; stderr was empty"
	}
	return "; stderr:\n" + stderr
}

// launchFor returns how to start an executable of the package in pkgDir,
// with work as its work directory.
func (s *Store) launchFor(pkgDir, work string, ex Executable) (launch, error) {
	l := launch{pkgDir: pkgDir, workDir: work, exe: ex.File, profile: ex.Profile, limits: s.limitsOf(ex),
		grace: max(s.opts.KillGrace, 0)}
	kind := ex.Kind
	if kind == "" {
		// A record written before kinds were kept.
		var err error
		if kind, err = inspectExecutable(filepath.Join(pkgDir, filepath.FromSlash(ex.File)), ex.Runtime); err != nil {
			return l, fmt.Errorf("%s %w", ex.File, err)
		}
	}
	if kind == KindPython {
		py, err := s.python()
		if err != nil {
			return l, err
		}
		l.python, l.pythonPath = py, s.opts.PythonPath
	}
	return l, nil
}

// limitsOf returns the resource limits an executable runs under: its
// profile's with its manifest's overrides, lowered to the store's bounds.
func (s *Store) limitsOf(ex Executable) ResourceLimits {
	return ex.EffectiveLimits().Within(s.opts.Limits.MaxResourceLimits)
}

// newCallDir makes a call directory in .calls, with stdout and stderr
// files to come, and work/ (with input/ and output/) that the tool can
// write to: it belongs to the user tools run as. In bwrap mode work/
// also holds result.json, created empty, the only file of the host a
// tool writes to there.
func (s *Store) newCallDir(prefix string) (callDir, work string, err error) {
	callDir, err = os.MkdirTemp(filepath.Join(s.dir, ".calls"), prefix)
	if err != nil {
		return "", "", err
	}
	fail := func(err error) (string, string, error) {
		removeAll(callDir)
		return "", "", err
	}
	if err := os.Chmod(callDir, 0o711); err != nil {
		return fail(err)
	}
	work = filepath.Join(callDir, "work")
	uid, gid, chown := s.sb.owner()
	for _, d := range []string{work, filepath.Join(work, "input"), filepath.Join(work, "output")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fail(err)
		}
		if chown {
			if err := os.Chown(d, uid, gid); err != nil {
				return fail(err)
			}
		}
	}
	if s.sb.mode == ModeBwrap {
		p := filepath.Join(work, "result.json")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return fail(err)
		}
		if chown {
			if err := os.Chown(p, uid, gid); err != nil {
				return fail(err)
			}
		}
	}
	return callDir, work, nil
}

// writeToolFile writes a new file that only the user tools run as can
// read.
func (s *Store) writeToolFile(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if uid, gid, chown := s.sb.owner(); chown {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// chmodDirs sets the mode of dir and every directory under it.
func chmodDirs(dir string, mode os.FileMode) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, mode)
		}
		return nil
	})
}

// removeAll removes a folder even when its files or folders are
// read-only.
func removeAll(p string) error {
	err := os.RemoveAll(p)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o755)
		}
		return nil
	})
	return os.RemoveAll(p)
}
