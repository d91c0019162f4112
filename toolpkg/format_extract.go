package toolpkg

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// extract writes the files of a validated package into dir, which must
// exist and be empty. Sizes are counted again while writing, so the limit
// holds even if the zip changed under us. Files are made read-only; the
// executables of the manifest, and files whose zip mode has an execute bit,
// are made executable.
func extract(c *checked, dir string, lim Limits) error {
	lim = lim.withDefaults()
	exec := map[string]bool{}
	for _, e := range c.manifest.Executables {
		if p, ok := c.lookup(e); ok {
			exec[p] = true
		}
	}
	names := make([]string, 0, len(c.files))
	for name := range c.files {
		names = append(names, name)
	}
	sort.Strings(names)
	budget := lim.MaxUncompressedBytes
	for _, name := range names {
		f := c.files[name]
		target := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o444)
		if exec[name] || f.Mode()&0o111 != 0 {
			mode = 0o555
		}
		n, err := writeEntry(f.Open, target, mode, budget)
		if err != nil {
			return fmt.Errorf("extracting %q: %w", name, err)
		}
		budget -= n
	}
	return nil
}

func writeEntry(open func() (io.ReadCloser, error), target string, mode os.FileMode, budget int64) (int64, error) {
	rc, err := open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	out := forkSafeFile(target)
	if err := out.create(); err != nil {
		return 0, err
	}
	n, err := io.CopyBuffer(out, io.LimitReader(rc, budget+1), make([]byte, 256<<10))
	if err == nil && n > budget {
		err = errors.New("the contents exceed the uncompressed size limit")
	}
	if err == nil {
		err = os.Chmod(target, mode)
	}
	return n, err
}

// forkSafeFile writes a file that is open only while no process is
// forked: a child forked by another goroutine holds a copy of every
// descriptor until it executes its own program, and while it holds one
// open for writing on an executable, executing that file fails with
// ETXTBSY (inside the sandbox too, where the store cannot try again).
// Each write opens the file, writes and closes it under
// syscall.ForkLock, which forking takes for writing; what is written is
// read before, so the lock is held for one write at a time.
type forkSafeFile string

// create makes the file, empty; it must not exist.
func (f forkSafeFile) create() error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	out, err := os.OpenFile(string(f), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	return out.Close()
}

// Write appends p to the file.
func (f forkSafeFile) Write(p []byte) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	out, err := os.OpenFile(string(f), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return 0, err
	}
	n, err := out.Write(p)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
