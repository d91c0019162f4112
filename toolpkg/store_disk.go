package toolpkg

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gotoolset/toolset/internal/atomicfile"
)

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
