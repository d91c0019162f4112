package toolpkg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ScratchPolicy says which tools get a persistent scratch directory.
//
// The platform's tools keep state between calls (a SQLite ledger, a
// cache) under /tmp/sam-str/<toolset>/. A store gives each toolset one
// directory for that, <store>/<toolset>/scratch, kept across calls and
// versions and deleted with the toolset ([Store.Remove]). Under bwrap it
// is mounted, writable, at /tmp/sam-str/<toolset> (the rest of /tmp is
// the call's own); in every mode the tool finds its path in the
// TOOLPKG_SCRATCH_DIR environment variable. Outside bwrap, a tool that
// writes to /tmp/sam-str/<toolset> by name writes to the host's /tmp.
type ScratchPolicy string

// The scratch policies.
const (
	// ScratchDefault gives a scratch directory to the tools of the
	// standard and permissive profiles, not to restrictive ones: state
	// kept between calls is a channel from one call to the next.
	ScratchDefault ScratchPolicy = ""
	// ScratchAll gives one to every tool, restrictive ones too.
	ScratchAll ScratchPolicy = "all"
	// ScratchOff gives none.
	ScratchOff ScratchPolicy = "off"
)

// ScratchEnv is the environment variable that holds a tool's scratch
// directory.
const ScratchEnv = "TOOLPKG_SCRATCH_DIR"

// scratchDir returns the host path of a toolset's scratch directory.
func (s *Store) scratchDir(name string) string { return filepath.Join(s.dir, name, "scratch") }

// wantsScratch reports whether tools of profile p get a scratch
// directory.
func (s *Store) wantsScratch(p Profile) bool {
	switch s.opts.Scratch {
	case ScratchAll:
		return true
	case ScratchOff:
		return false
	}
	return p != Restrictive
}

// scratch makes sure the toolset's scratch directory exists and is what
// the store made: a directory, not a link, owned by the user tools run
// as, for a call of version v. Its contents are the tools' business; the
// store never reads them.
//
// A call takes its version before it gets here: the toolset may have
// been removed meanwhile (and perhaps created anew), and Remove has
// moved the directory aside, or is about to. The error then wraps
// [ErrNotFound], and no directory is made: it would outlive the removal,
// and hand the removed toolset's state to a new one of the same name.
// Checked and made under s.mu, which Remove publishes the removal under.
func (s *Store) scratch(name string, v int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.known(name); !ok || e.rec.Status == StatusRemoved || v <= e.removedUpTo {
		return "", fmt.Errorf("%w: %q was removed", ErrNotFound, name)
	}
	p := s.scratchDir(name)
	uid, gid, chown := s.sb.owner()
	if !chown {
		uid, gid = os.Geteuid(), os.Getegid()
	}
	err := os.Mkdir(p, 0o700)
	switch {
	case err == nil:
		if chown {
			if err := os.Lchown(p, uid, gid); err != nil {
				return "", err
			}
		}
		return p, nil
	case !errors.Is(err, os.ErrExist):
		return "", err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 || !ok || int(st.Uid) != uid {
		return "", fmt.Errorf("the scratch directory %s is not the directory the store made (a %s, owner %d); refusing to use it", p, fi.Mode().Type(), ownerOf(st))
	}
	return p, nil
}

func ownerOf(st *syscall.Stat_t) int {
	if st == nil {
		return -1
	}
	return int(st.Uid)
}
