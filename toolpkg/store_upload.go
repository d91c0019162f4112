package toolpkg

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

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
	pkgTmp, zipTmp, exes, kindErrs, err := s.stage(name, tmp, c, r, size)
	if err != nil {
		return Info{}, err
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
	rec := pendingRecord(prev, name, v, exes, warnings)
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
	s.logAccepted(name, v, warnings, exes)
	go s.discoverInBackground(dctx, name, e, v, exes, kindErrs)
	return rec.Info.clone(), nil
}

// stage extracts the checked package c into tmp/package and copies its
// zip, of size bytes read through r, to tmp/package.zip; it says what
// each executable is (kindErrs: those this runtime cannot run, which fail
// discovery), and makes the toolset's folder.
func (s *Store) stage(name, tmp string, c *checked, r io.ReaderAt, size int64) (pkgTmp, zipTmp string, exes []Executable, kindErrs map[string]error, err error) {
	pkgTmp = filepath.Join(tmp, "package")
	if err := os.Mkdir(pkgTmp, 0o755); err != nil {
		return "", "", nil, nil, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	if err := extract(c, pkgTmp, s.opts.Limits); err != nil {
		return "", "", nil, nil, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	// The tools may run as another user, who must read the package.
	if err := chmodDirs(pkgTmp, 0o755); err != nil {
		return "", "", nil, nil, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	zipTmp = filepath.Join(tmp, "package.zip")
	if err := copyZip(zipTmp, r, size); err != nil {
		return "", "", nil, nil, fmt.Errorf("toolpkg: upload %q: keeping the zip: %w", name, unprefixed{err})
	}
	exes = make([]Executable, len(c.manifest.Executables))
	// What each executable is; one this runtime cannot run fails
	// discovery.
	kindErrs = map[string]error{}
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
		return "", "", nil, nil, fmt.Errorf("toolpkg: upload %q: %w", name, unprefixed{err})
	}
	return pkgTmp, zipTmp, exes, kindErrs, nil
}

// pendingRecord is the record of version v of a toolset, uploaded now
// after prev: pending, with its executables as the candidate; they are
// also the record's own when no version serves.
func pendingRecord(prev record, name string, v int, exes []Executable, warnings []string) record {
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
	return rec
}

// logAccepted logs version v of a toolset accepted, with its manifest's
// warnings and what its sandbox mode cannot do for it.
func (s *Store) logAccepted(name string, v int, warnings []string, exes []Executable) {
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
