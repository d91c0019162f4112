package toolpkg

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Package returns the zip uploaded as version of the toolset (0: the
// latest, Info.Version) and its size. The store keeps the zips of the
// latest and the serving version; for any other, or a toolset removed or
// unknown, the error wraps [ErrNotFound]. The caller closes the file;
// what it reads stays whole even if the version is replaced meanwhile.
func (s *Store) Package(name string, version int) (io.ReadSeekCloser, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.known(name)
	if !ok || e.rec.Status == StatusRemoved {
		return nil, 0, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if version == 0 {
		version = e.rec.Version
	}
	if !e.rec.live(version) || e.gone[version] {
		return nil, 0, fmt.Errorf("%w: %q has no package of version %d (the store keeps the latest and the serving version's)", ErrNotFound, name, version)
	}
	// Opened under s.mu, so that a version retired meanwhile is not
	// deleted between the check and the open; no link is followed.
	fd, err := unix.Open(s.zipPath(name, version), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, 0, fmt.Errorf("%w: the package of %q version %d was not kept (uploaded before this store kept zips)", ErrNotFound, name, version)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("toolpkg: opening the package of %q version %d: %w", name, version, err)
	}
	f := os.NewFile(uintptr(fd), s.zipPath(name, version))
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("toolpkg: opening the package of %q version %d: %w", name, version, unprefixed{err})
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("toolpkg: the package of %q version %d is not a regular file", name, version)
	}
	return f, fi.Size(), nil
}

// ExportConfig returns the toolset's stored configuration as it is,
// secrets in clear (what [Store.Config] shows redacted), for handing the
// toolset to another store that runs its tools, such as a runtime the
// platform distributes it to. Its values must never be shown or logged.
// It is a copy; an empty map when none was set, an error wrapping
// [ErrNotFound] for a toolset removed or unknown.
func (s *Store) ExportConfig(name string) (map[string]any, error) {
	s.mu.Lock()
	e, ok := s.known(name)
	ok = ok && e.rec.Status != StatusRemoved
	var cfg map[string]any
	if ok {
		cfg = e.config
	}
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if len(cfg) == 0 {
		return map[string]any{}, nil
	}
	// The stored map is replaced whole by SetConfig, never changed in
	// place: it is read outside the lock, and copied deeply so that the
	// caller cannot change it.
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("toolpkg: toolset %q: encoding the configuration: %w", name, unprefixed{err})
	}
	return decodeStoredConfig(data)
}
