package toolpkg

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// FileError reports a file a tool left in its work directory that the
// host refuses to read: a symbolic link, a named pipe, a device, a
// directory, or a file larger than the cap. It never quotes the file's
// content.
type FileError struct {
	// Name is the file's name inside the work directory.
	Name string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *FileError) Error() string { return e.Name + " " + e.Reason }

// errNoFile is returned by readWorkFile when the tool wrote no such file.
var errNoFile = errors.New("no such file")

// readWorkFile reads the file name of the directory dir, which a tool
// could write to, without trusting what it finds there: dir itself and the
// file are opened without following symbolic links, the file is opened
// non-blocking (a named pipe with no writer cannot hold the call up) and
// must be a regular file, and at most limit bytes are read. A file larger
// than limit is a *FileError. errNoFile says there is no such file.
func readWorkFile(dir, name string, limit int64) ([]byte, error) {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the work directory: %w", err)
	}
	defer unix.Close(dfd)
	// Look before opening, so that a device is never opened at all.
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, errNoFile
		}
		return nil, fmt.Errorf("examining %s: %w", name, err)
	}
	if err := checkRegular(name, st.Mode); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, &FileError{Name: name, Reason: "is a symbolic link; the host reads only a regular file the tool wrote"}
		}
		if errors.Is(err, unix.ENOENT) {
			return nil, errNoFile
		}
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	// It may have been swapped between the look and the open.
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("examining %s: %w", name, err)
	}
	if err := checkRegular(name, st.Mode); err != nil {
		return nil, err
	}
	if st.Size > limit {
		return nil, &FileError{Name: name, Reason: fmt.Sprintf("is %d bytes; at most %d are read", st.Size, limit)}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, &FileError{Name: name, Reason: fmt.Sprintf("is more than %d bytes; at most %d are read", limit, limit)}
	}
	return data, nil
}

// checkRegular refuses anything but a regular file, naming what it is.
func checkRegular(name string, mode uint32) error {
	what := ""
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		what = "a symbolic link"
	case unix.S_IFIFO:
		what = "a named pipe (FIFO)"
	case unix.S_IFDIR:
		what = "a directory"
	case unix.S_IFCHR, unix.S_IFBLK:
		what = "a device"
	case unix.S_IFSOCK:
		what = "a socket"
	default:
		what = "not a regular file"
	}
	return &FileError{Name: name, Reason: "is " + what + "; the host reads only a regular file the tool wrote"}
}
