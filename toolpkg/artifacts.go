package toolpkg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ArtifactScope says whose artifacts a call sees: those of one
// application, user and session, as the platform scopes them. A call's
// scope comes from its run's values app_name, user_id and session_id.
type ArtifactScope struct {
	AppName, UserID, SessionID string
}

// ArtifactRef describes one version of an artifact, as the model is
// shown it.
type ArtifactRef struct {
	Name        string `json:"filename"`
	Version     int    `json:"version"`
	Size        int64  `json:"size_bytes"`
	MIMEType    string `json:"mime_type"`
	Description string `json:"description,omitempty"`
}

// ArtifactStore keeps versioned artifacts: the files packaged tools write
// and read. Implementations must be safe for concurrent use.
type ArtifactStore interface {
	// Save stores the content of r as the next version of the artifact
	// ref.Name in scope (ref's MIMEType and Description are kept; its
	// Version and Size are ignored) and returns what was stored.
	// Content beyond the store's size bound is an error, and nothing is
	// stored.
	Save(ctx context.Context, scope ArtifactScope, ref ArtifactRef, r io.Reader) (ArtifactRef, error)
	// Load opens a version of the artifact name in scope; version 0 means
	// the latest. A missing artifact is an error wrapping
	// [ErrArtifactNotFound].
	Load(ctx context.Context, scope ArtifactScope, name string, version int) (ArtifactRef, io.ReadCloser, error)
}

// ErrArtifactNotFound reports an artifact, or a version of it, that the
// store does not have.
var ErrArtifactNotFound = errors.New("toolpkg: artifact not found")

// ArtifactOptions configure how a store's calls exchange artifacts and
// what the model sees of a result. A zero field takes its default.
type ArtifactOptions struct {
	// Store keeps the artifacts (default: a [DirArtifactStore] in the
	// store's directory, under .artifacts).
	Store ArtifactStore
	// SaveThresholdBytes: a result whose text is longer is saved as an
	// artifact too, and so is a data object of disposition auto that is
	// larger (default 4,096, the platform's
	// tool_output_save_threshold_bytes).
	SaveThresholdBytes int
	// ReturnMaxBytes caps the text of the result, and of each inline
	// data object, that the model is sent (default 8,192, the
	// platform's tool_output_llm_return_max_bytes).
	ReturnMaxBytes int
	// MaxArtifactBytes bounds one artifact, in and out (default 32 MB);
	// a call's input artifacts, and its output files, add up to at most
	// four times as much.
	MaxArtifactBytes int64
	// MaxArtifacts bounds the artifacts one call saves, output files and
	// data objects together, and the inputs it loads (default 64).
	MaxArtifacts int
	// ScopeByRun scopes a call's artifacts to its run: the scope's
	// SessionID is the run's ID ([toolset.RunContext.ID]) rather than its
	// session_id value, and a call without a run ID has a scope of its own
	// that no other call shares. For a server whose runs are its clients'
	// (such as toolset serve --http, whose run IDs it mints itself): no
	// value of a run, and nothing a client names, reaches another run's
	// artifacts.
	ScopeByRun bool
	// RandomNames gives the artifacts a call saves unguessable names: a
	// random suffix before the extension (report.csv becomes
	// report-<24 hex digits>.csv, and the whole output <tool>_output.txt
	// <tool>_output-<24 hex digits>.txt), so that no one names a saved
	// artifact without having been shown it. The result names each
	// artifact as saved.
	RandomNames bool
}

// Defaults of [ArtifactOptions].
const (
	DefaultSaveThresholdBytes = 4096
	DefaultReturnMaxBytes     = 8192
	DefaultMaxArtifactBytes   = 32 << 20
	DefaultMaxArtifacts       = 64
)

func (o ArtifactOptions) withDefaults() ArtifactOptions {
	if o.SaveThresholdBytes <= 0 {
		o.SaveThresholdBytes = DefaultSaveThresholdBytes
	}
	if o.ReturnMaxBytes <= 0 {
		o.ReturnMaxBytes = DefaultReturnMaxBytes
	}
	if o.MaxArtifactBytes <= 0 {
		o.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	if o.MaxArtifacts <= 0 {
		o.MaxArtifacts = DefaultMaxArtifacts
	}
	return o
}

// MaxArtifactNameBytes bounds an artifact's name.
const MaxArtifactNameBytes = 255

var artifactNamePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._ +=,@-]*$`)

// CheckArtifactName reports whether name may name an artifact: at most
// [MaxArtifactNameBytes] of ASCII letters, digits and "._ +=,@-", not starting
// with a dot, a dash, a space; never a path (no slash, no backslash, no
// ".."), no control character.
func CheckArtifactName(name string) error {
	switch {
	case name == "":
		return errors.New("toolpkg: an artifact name is empty")
	case len(name) > MaxArtifactNameBytes:
		return fmt.Errorf("toolpkg: an artifact name is %d bytes; at most %d are allowed", len(name), MaxArtifactNameBytes)
	case strings.Contains(name, "..") || !artifactNamePattern.MatchString(name) || strings.HasSuffix(name, " "):
		return fmt.Errorf("toolpkg: invalid artifact name %s: use letters, digits and \"._ +=,@-\", not starting with a dot, dash or space, with no \"..\", slash or control character", quoteShort(name))
	}
	return nil
}

// DirArtifactStore is an [ArtifactStore] in a directory: each version
// of an artifact is a file, <dir>/<scope>/<name>/<version>, with its
// metadata beside it in <version>.json; <scope> is a digest of the scope.
// Names are checked ([CheckArtifactName]), no link is followed (every
// directory and file is opened with O_NOFOLLOW, and only regular files
// are read), and each artifact is at most its bound. Versions count from
// 1 and are never reused. It serves one process at a time.
type DirArtifactStore struct {
	dir      string
	maxBytes int64
	mu       sync.Mutex
}

// NewDirArtifactStore returns an artifact store in dir, made with the
// first artifact saved, whose artifacts are at most maxBytes each (0: the
// default, 32 MB). dir must be an absolute path; if it exists, it must be
// a directory, not a link to one.
func NewDirArtifactStore(dir string, maxBytes int64) (*DirArtifactStore, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxArtifactBytes
	}
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("toolpkg: artifact store %s: the path must be absolute", dir)
	}
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("toolpkg: artifact store %s is not a directory (a symbolic link is refused)", dir)
	}
	return &DirArtifactStore{dir: dir, maxBytes: maxBytes}, nil
}

func scopeDir(s ArtifactScope) string {
	sum := sha256.Sum256([]byte(s.AppName + "\x00" + s.UserID + "\x00" + s.SessionID))
	return hex.EncodeToString(sum[:16])
}

// openDir opens the directory rel (components separated by "/") under
// the store, creating what is missing when create is set, without
// following a link at any level.
func (d *DirArtifactStore) openDir(rel string, create bool) (int, error) {
	fd, err := unix.Open(d.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(rel, "/") {
		if create {
			if err := unix.Mkdirat(fd, c, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, err
			}
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, fmt.Errorf("%s is not a directory of the store (a symbolic link is refused)", c)
			}
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// versions lists the versions in the directory fd, and closes fd.
func versions(fd int) ([]int, error) {
	f := os.NewFile(uintptr(fd), "artifact")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var vs []int
	for _, n := range names {
		if v, err := strconv.Atoi(n); err == nil && v > 0 && strconv.Itoa(v) == n {
			vs = append(vs, v)
		}
	}
	sort.Ints(vs)
	return vs, nil
}

// Save implements [ArtifactStore].
func (d *DirArtifactStore) Save(ctx context.Context, scope ArtifactScope, ref ArtifactRef, r io.Reader) (ArtifactRef, error) {
	if err := CheckArtifactName(ref.Name); err != nil {
		return ArtifactRef{}, err
	}
	if err := ctx.Err(); err != nil {
		return ArtifactRef{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.Mkdir(d.dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return ArtifactRef{}, fmt.Errorf("toolpkg: saving artifact %q: %w", ref.Name, err)
	}
	fd, err := d.openDir(scopeDir(scope)+"/"+ref.Name, true)
	if err != nil {
		return ArtifactRef{}, fmt.Errorf("toolpkg: saving artifact %q: %w", ref.Name, err)
	}
	dir := os.NewFile(uintptr(fd), ref.Name)
	defer dir.Close()
	dup, err := unix.Dup(fd)
	if err != nil {
		return ArtifactRef{}, err
	}
	vs, err := versions(dup)
	if err != nil {
		return ArtifactRef{}, fmt.Errorf("toolpkg: saving artifact %q: %w", ref.Name, err)
	}
	v := 1
	if len(vs) > 0 {
		v = vs[len(vs)-1] + 1
	}
	tmp := fmt.Sprintf(".%d.tmp", v)
	_ = unix.Unlinkat(fd, tmp, 0)
	wfd, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return ArtifactRef{}, fmt.Errorf("toolpkg: saving artifact %q: %w", ref.Name, err)
	}
	w := os.NewFile(uintptr(wfd), tmp)
	n, err := io.Copy(w, io.LimitReader(r, d.maxBytes+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > d.maxBytes {
		err = fmt.Errorf("it is more than %d bytes, the bound of an artifact", d.maxBytes)
	}
	if err != nil {
		_ = unix.Unlinkat(fd, tmp, 0)
		return ArtifactRef{}, fmt.Errorf("toolpkg: saving artifact %q: %w", ref.Name, err)
	}
	out := ArtifactRef{Name: ref.Name, Version: v, Size: n, MIMEType: ref.MIMEType, Description: ref.Description}
	if out.MIMEType == "" {
		out.MIMEType = "application/octet-stream"
	}
	meta, _ := json.Marshal(out)
	if err := writeAt(fd, fmt.Sprintf("%d.json", v), meta); err != nil {
		_ = unix.Unlinkat(fd, tmp, 0)
		return ArtifactRef{}, fmt.Errorf("toolpkg: saving artifact %q: %w", ref.Name, err)
	}
	if err := unix.Renameat(fd, tmp, fd, strconv.Itoa(v)); err != nil {
		_ = unix.Unlinkat(fd, tmp, 0)
		return ArtifactRef{}, fmt.Errorf("toolpkg: saving artifact %q: %w", ref.Name, err)
	}
	return out, nil
}

func writeAt(dirfd int, name string, data []byte) error {
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Load implements [ArtifactStore].
func (d *DirArtifactStore) Load(ctx context.Context, scope ArtifactScope, name string, version int) (ArtifactRef, io.ReadCloser, error) {
	if err := CheckArtifactName(name); err != nil {
		return ArtifactRef{}, nil, err
	}
	if err := ctx.Err(); err != nil {
		return ArtifactRef{}, nil, err
	}
	notFound := func() error {
		if version > 0 {
			return fmt.Errorf("%w: %q version %d", ErrArtifactNotFound, name, version)
		}
		return fmt.Errorf("%w: %q", ErrArtifactNotFound, name)
	}
	fd, err := d.openDir(scopeDir(scope)+"/"+name, false)
	if errors.Is(err, unix.ENOENT) {
		return ArtifactRef{}, nil, notFound()
	}
	if err != nil {
		return ArtifactRef{}, nil, fmt.Errorf("toolpkg: loading artifact %q: %w", name, err)
	}
	dir := os.NewFile(uintptr(fd), name)
	defer dir.Close()
	if version <= 0 {
		d.mu.Lock()
		dup, err := unix.Dup(fd)
		var vs []int
		if err == nil {
			vs, err = versions(dup)
		}
		d.mu.Unlock()
		if err != nil {
			return ArtifactRef{}, nil, fmt.Errorf("toolpkg: loading artifact %q: %w", name, err)
		}
		if len(vs) == 0 {
			return ArtifactRef{}, nil, notFound()
		}
		version = vs[len(vs)-1]
	}
	mfd, err := unix.Openat(fd, fmt.Sprintf("%d.json", version), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return ArtifactRef{}, nil, notFound()
	}
	if err != nil {
		return ArtifactRef{}, nil, fmt.Errorf("toolpkg: loading artifact %q: %w", name, err)
	}
	mf := os.NewFile(uintptr(mfd), "meta")
	mdata, err := io.ReadAll(io.LimitReader(mf, 64<<10))
	mf.Close()
	var ref ArtifactRef
	if err == nil {
		err = json.Unmarshal(mdata, &ref)
	}
	if err != nil {
		return ArtifactRef{}, nil, fmt.Errorf("toolpkg: loading artifact %q version %d: its metadata: %w", name, version, err)
	}
	dfd, err := unix.Openat(fd, strconv.Itoa(version), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return ArtifactRef{}, nil, notFound()
	}
	if err != nil {
		return ArtifactRef{}, nil, fmt.Errorf("toolpkg: loading artifact %q version %d: %w", name, version, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(dfd)
		return ArtifactRef{}, nil, fmt.Errorf("toolpkg: loading artifact %q version %d: not a regular file", name, version)
	}
	if st.Size > d.maxBytes {
		unix.Close(dfd)
		return ArtifactRef{}, nil, fmt.Errorf("toolpkg: loading artifact %q version %d: it is %d bytes, more than the bound of %d", name, version, st.Size, d.maxBytes)
	}
	ref.Name, ref.Version, ref.Size = name, version, st.Size
	return ref, os.NewFile(uintptr(dfd), name), nil
}
