// Package atomicfile replaces a file so that a reader, or the process
// that starts after a crash, sees its old contents or its new ones, never
// a part of them.
//
// Modules of this repository other than the core import this package
// (toolpkg, platform). Each is built against a released version of the core
// module, so the exported API of this package is frozen within a major
// version: it changes only by additions. See README "Modules".
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces dir/name with data. It writes a temporary file in dir,
// named by pattern as [os.CreateTemp] names it (so that whoever cleans dir
// up can tell leftovers), of mode perm, syncs it, renames it over
// dir/name and syncs dir, so that the rename survives a power loss too.
// A link at dir/name is replaced, never followed. On failure the
// temporary file is removed and dir/name is as it was. The errors name
// no path, only the step that failed, so that callers can show them.
func Write(dir, pattern, name string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return fmt.Errorf("creating a temporary file: %w", unpathed(err))
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", name, unpathed(err))
	}
	// The rename is durable once the directory is synced; a failure here
	// leaves the new file in place, which is what a reader sees anyway.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// unpathed drops the path an *os.PathError or *os.LinkError names.
func unpathed(err error) error {
	switch e := err.(type) {
	case *os.PathError:
		return e.Err
	case *os.LinkError:
		return e.Err
	}
	return err
}
