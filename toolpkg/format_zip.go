package toolpkg

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
)

// The default structural limits of a package.
const (
	DefaultMaxZipBytes          = 50 << 20
	DefaultMaxUncompressedBytes = 250 << 20
	DefaultMaxEntries           = 10000
)

// Limits bound the size of a package. A zero field takes its default.
type Limits struct {
	// MaxZipBytes is the largest zip accepted (default 50 MB).
	MaxZipBytes int64
	// MaxUncompressedBytes bounds the contents, counted while they are
	// read, whatever the zip's headers claim (default 250 MB).
	MaxUncompressedBytes int64
	// MaxEntries bounds the number of entries (default 10,000).
	MaxEntries int
	// MaxTimeoutSeconds bounds the timeout a package's manifest or
	// --schema output may give a tool (default 3,600).
	MaxTimeoutSeconds int
	// MaxResourceLimits bounds what a package's resource_limits may ask
	// for: a manifest asking more is refused. A profile's default above
	// it is lowered to it. A zero field takes the field of
	// DefaultMaxResourceLimits.
	MaxResourceLimits ResourceLimits
}

// DefaultMaxTimeoutSeconds is the default of Limits.MaxTimeoutSeconds.
const DefaultMaxTimeoutSeconds = 3600

// DefaultMaxResourceLimits is the default of Limits.MaxResourceLimits:
// what the permissive profile gives, with some room.
var DefaultMaxResourceLimits = ResourceLimits{
	MaxCPUSeconds: 3600, MaxFileSizeMB: 4096, MaxOpenFiles: 4096,
	MaxProcesses: 1024, MaxStackSizeMB: 256, MaxWriteMB: 8192,
}

func (l Limits) withDefaults() Limits {
	if l.MaxZipBytes <= 0 {
		l.MaxZipBytes = DefaultMaxZipBytes
	}
	if l.MaxUncompressedBytes <= 0 {
		l.MaxUncompressedBytes = DefaultMaxUncompressedBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxTimeoutSeconds <= 0 {
		l.MaxTimeoutSeconds = DefaultMaxTimeoutSeconds
	}
	l.MaxResourceLimits = l.MaxResourceLimits.Over(DefaultMaxResourceLimits)
	return l
}

// Problem is one structural problem of a package.
type Problem struct {
	// Entry is the zip entry concerned, or "" for the zip as a whole.
	Entry string
	// Message says what is wrong.
	Message string
}

// maxEntryQuoted bounds an entry's name quoted in a problem: a zip's
// names may be 64 KB each.
const maxEntryQuoted = 256

// String renders the problem as "\"entry\": message", a long entry name
// cut.
func (p Problem) String() string {
	if p.Entry == "" {
		return p.Message
	}
	if len(p.Entry) > maxEntryQuoted {
		return fmt.Sprintf("%q... (%d bytes): %s", strings.ToValidUTF8(p.Entry[:maxEntryQuoted], ""), len(p.Entry), p.Message)
	}
	return fmt.Sprintf("%q: %s", p.Entry, p.Message)
}

// ValidationError lists every structural problem found in a package. Get
// it with errors.As.
type ValidationError struct {
	Problems []Problem
}

// Error implements error.
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "toolpkg: invalid package (%d problem", len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for _, p := range e.Problems {
		b.WriteString("\n  - " + p.String())
	}
	return b.String()
}

// checked is the result of a successful validation.
type checked struct {
	zr       *zip.Reader
	manifest *Manifest
	// files maps each regular file's cleaned name to its entry.
	files map[string]*zip.File
}

// ValidateZip checks a package before anything is extracted: the zip's
// size, the uncompressed size of its contents (counted while reading, so a
// zip whose headers lie is stopped), the number of entries, every entry's
// path (no absolute paths, "..", backslashes or drive letters), symlinks and
// other special files, .whl files at the root, .venv/ directories, and the
// manifest, including that every executable it names is in the zip. Every
// problem is reported in one *ValidationError. It returns the manifest,
// parsed leniently ([ParseManifest]): its Warnings list the unknown keys.
// A nil lim means the default limits.
func ValidateZip(r io.ReaderAt, size int64, lim *Limits) (*Manifest, error) {
	var l Limits
	if lim != nil {
		l = *lim
	}
	c, err := validateZip(r, size, l)
	if err != nil {
		return nil, err
	}
	return c.manifest, nil
}

// validateZip is ValidateZip.
func validateZip(r io.ReaderAt, size int64, lim Limits) (*checked, error) {
	return checkZip(r, size, lim, false)
}

// ValidateArchive checks a zip that is not a package (a skill's, say) as
// [ValidateZip] checks a package's structure, before anything is read
// from it: the zip's size, the uncompressed size of its contents (counted
// while reading), the number of entries, every entry's path (no absolute
// paths, "..", backslashes or drive letters; no duplicates, none inside a
// file), and symlinks and other special files. It requires no manifest
// and applies none of the packages' own rules (.venv, .whl). Every problem
// is reported in one *ValidationError. The zip.Reader it returns serves
// the checked entries, as an [fs.FS] too. A nil lim means the default
// limits.
func ValidateArchive(r io.ReaderAt, size int64, lim *Limits) (*zip.Reader, error) {
	var l Limits
	if lim != nil {
		l = *lim
	}
	c, probs, _ := checkEntries(r, size, l.withDefaults(), false)
	if len(probs) > 0 {
		return nil, &ValidationError{Problems: probs}
	}
	return c.zr, nil
}

// checkZip is ValidateZip; strict parses the manifest with
// [ParseManifestStrict].
func checkZip(r io.ReaderAt, size int64, lim Limits, strict bool) (*checked, error) {
	lim = lim.withDefaults()
	c, probs, overflow := checkEntries(r, size, lim, true)
	add := func(entry, format string, args ...any) {
		probs = append(probs, Problem{Entry: entry, Message: fmt.Sprintf(format, args...)})
	}
	fail := func() error { return &ValidationError{Problems: probs} }
	if c == nil {
		return nil, fail()
	}

	mf, ok := c.files[ManifestName]
	if !ok {
		add(ManifestName, "missing: a package needs %s at its root", ManifestName)
		return nil, fail()
	}
	if overflow {
		return nil, fail()
	}
	data, err := readEntry(mf, maxManifestBytes)
	if err != nil {
		add(ManifestName, "unreadable: %v", err)
		return nil, fail()
	}
	m, err := parseManifest(data, strict)
	var me *ManifestError
	switch {
	case errors.As(err, &me):
		for _, p := range me.Problems {
			add(ManifestName, "%s", p.String())
		}
	case err != nil:
		add(ManifestName, "%v", err)
	}
	if m != nil {
		for _, e := range m.Executables {
			field := "tools." + e.Key
			if e.TimeoutSeconds > lim.MaxTimeoutSeconds {
				f := field + ".timeout_seconds"
				add(ManifestName, "%s", FieldProblem{Field: f, Line: m.line(f),
					Message: fmt.Sprintf("asks for %d seconds; this store allows at most %d", e.TimeoutSeconds, lim.MaxTimeoutSeconds)}.String())
			}
			caps := lim.MaxResourceLimits.fields()
			for i, l := range e.Limits.fields() {
				if l.v > caps[i].v {
					f := field + ".resource_limits." + l.name
					add(ManifestName, "%s", FieldProblem{Field: f, Line: m.line(f),
						Message: fmt.Sprintf("asks for %d; this store allows at most %d", l.v, caps[i].v)}.String())
				}
			}
			if _, ok := c.lookup(e); !ok {
				add(e.Path, "missing: the executable of tools.%s (looked for %s)", e.Key, strings.Join(quoteAll(e.Candidates()), ", "))
			}
		}
	}
	if len(probs) > 0 {
		return nil, fail()
	}
	c.manifest = m
	return c, nil
}

// checkEntries checks the structure of a zip: its size, its entries'
// number, paths and kinds, and their uncompressed size; pkg adds the rules
// of packages (.venv, .whl). It returns the problems found, whether the
// contents overflowed the bound, and the checked zip, nil when it could
// not be read at all.
func checkEntries(r io.ReaderAt, size int64, lim Limits, pkg bool) (*checked, []Problem, bool) {
	var probs []Problem
	add := func(entry, format string, args ...any) {
		probs = append(probs, Problem{Entry: entry, Message: fmt.Sprintf(format, args...)})
	}
	if size > lim.MaxZipBytes {
		add("", "the zip is %d bytes; at most %d are allowed", size, lim.MaxZipBytes)
		return nil, probs, false
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		add("", "not a readable zip archive: %v", err)
		return nil, probs, false
	}
	if n := len(zr.File); n > lim.MaxEntries {
		add("", "the zip has %d entries; at most %d are allowed", n, lim.MaxEntries)
		return nil, probs, false
	}

	c := &checked{zr: zr, files: map[string]*zip.File{}}
	seen := map[string]bool{}
	venvs := map[string]bool{}
	var total int64
	overflow := false
	for _, f := range zr.File {
		name := f.Name
		clean, msg := cleanPackagePath(strings.TrimSuffix(name, "/"))
		if msg != "" {
			add(name, "%s", msg)
			continue
		}
		if seen[clean] {
			add(name, "duplicate entry")
			continue
		}
		seen[clean] = true
		mode := f.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			add(name, "is a symlink; packages may not contain symlinks")
			continue
		case mode&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeCharDevice|fs.ModeIrregular) != 0:
			add(name, "is not a regular file or directory")
			continue
		}
		if v := venvDir(clean); pkg && v != "" {
			if !venvs[v] {
				venvs[v] = true
				add(name, "%s/ is a virtual environment; extract dependencies into the package instead (pip install --target)", v)
			}
			continue
		}
		if mode.IsDir() || strings.HasSuffix(name, "/") {
			continue
		}
		if pkg && !strings.Contains(clean, "/") && strings.HasSuffix(strings.ToLower(clean), ".whl") {
			add(name, "is a wheel at the package root; extract dependencies into the package instead")
		}
		c.files[clean] = f
		if overflow {
			continue
		}
		n, err := countEntry(f, lim.MaxUncompressedBytes-total)
		total += n
		switch {
		case errors.Is(err, errTooLarge):
			overflow = true
			add(name, "the contents exceed %d bytes uncompressed (counted while reading; reading stopped here)", lim.MaxUncompressedBytes)
		case err != nil:
			add(name, "unreadable: %v", err)
		}
	}

	var clashes []Problem
	for name := range c.files {
		for dir := parentDir(name); dir != ""; dir = parentDir(dir) {
			if _, clash := c.files[dir]; clash {
				clashes = append(clashes, Problem{Entry: name, Message: fmt.Sprintf("is inside %q, which is a file", dir)})
				break
			}
		}
	}
	sort.Slice(clashes, func(i, j int) bool { return clashes[i].Entry < clashes[j].Entry })
	probs = append(probs, clashes...)

	return c, probs, overflow
}

// lookup finds an executable's file among the zip's files.
func (c *checked) lookup(e Executable) (string, bool) {
	for _, p := range e.Candidates() {
		if _, ok := c.files[p]; ok {
			return p, true
		}
	}
	return "", false
}

// parentDir returns the directory part of a slash-separated path, or "".
func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// venvDir returns the path of the .venv directory that p is in or is, or "".
func venvDir(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == ".venv" {
			return strings.Join(segs[:i+1], "/")
		}
	}
	return ""
}

var errTooLarge = errors.New("too large")

// countEntry reads an entry to its end and returns how many bytes it
// holds, stopping with errTooLarge once more than budget bytes were read.
func countEntry(f *zip.File, budget int64) (int64, error) {
	rc, err := f.Open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(rc, budget+1))
	if err != nil {
		return n, err
	}
	if n > budget {
		return n, errTooLarge
	}
	return n, nil
}

// readEntry reads a whole entry of at most max bytes.
func readEntry(f *zip.File, max int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return data, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
