package toolpkg

import (
	"fmt"
	"os"
	"path/filepath"
)

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
