package skill

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// The default bounds of a skill; see [Options].
const (
	DefaultMaxFiles     = 1000
	DefaultMaxBytes     = 50 << 20
	DefaultMaxReadBytes = 64 << 10
	// MaxPathBytes and MaxPathDepth bound the path of each file.
	MaxPathBytes = 1024
	MaxPathDepth = 16
)

// The directories of a skill. read_skill_file reads the files of
// ReferencesDir and AssetsDir; ToolsDir holds the bundled tools, a
// toolset package (manifest.yaml and its executables).
const (
	ReferencesDir = "references"
	AssetsDir     = "assets"
	ToolsDir      = "tools"
)

// Options bound a skill and say what it must be. A nil *Options, and a
// zero field, take the defaults.
type Options struct {
	// Name, if set, is the name the skill must have: the name of its
	// directory, or the one it is uploaded under.
	Name string
	// MaxSkillFileBytes bounds SKILL.md (default
	// [DefaultMaxSkillFileBytes], 128 KiB).
	MaxSkillFileBytes int
	// MaxFiles bounds the skill's files (default 1,000).
	MaxFiles int
	// MaxBytes bounds the skill's files together, counted while they are
	// read (default 50 MiB); for [FromZip], the zip too.
	MaxBytes int64
	// MaxReadBytes bounds a file read_skill_file returns (default 64 KiB).
	MaxReadBytes int
	// Package bounds the bundled tools as a toolset package
	// ([toolpkg.ValidateZip]); nil means toolpkg's defaults.
	Package *toolpkg.Limits
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.MaxSkillFileBytes <= 0 {
		v.MaxSkillFileBytes = DefaultMaxSkillFileBytes
	}
	if v.MaxFiles <= 0 {
		v.MaxFiles = DefaultMaxFiles
	}
	if v.MaxBytes <= 0 {
		v.MaxBytes = DefaultMaxBytes
	}
	if v.MaxReadBytes <= 0 {
		v.MaxReadBytes = DefaultMaxReadBytes
	}
	return v
}

// Problem is one problem of a skill.
type Problem struct {
	// Path is the file concerned ("SKILL.md", "tools/manifest.yaml"), or
	// "" for the skill as a whole.
	Path string
	// Message says what is wrong.
	Message string
}

// String renders the problem as "path: message".
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return fmt.Sprintf("%q: %s", quoted(p.Path), p.Message)
}

// ValidationError lists every problem of a skill. Get it with errors.As.
type ValidationError struct {
	Problems []Problem
}

// Error implements error.
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "skill: invalid skill (%d problem", len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for _, p := range e.Problems {
		b.WriteString("\n  - " + p.String())
	}
	return b.String()
}

// File is one regular file of a skill.
type File struct {
	// Path is the file's slash-separated path in the skill.
	Path string `json:"path"`
	// Size is its size in bytes.
	Size int64 `json:"size"`
}

// Skill is a validated skill: its front matter, its instructions, its
// files, and the tools it offers once loaded. It is immutable and safe
// for concurrent use; the With methods return a changed copy. Make one
// with [FromFS] or [FromZip].
type Skill struct {
	fm       FrontMatter
	body     string
	fsys     fs.FS
	files    []File
	index    map[string]File
	manifest *toolpkg.Manifest // of tools/, or nil
	maxRead  int
	tools    toolset.Toolset // named <skill>__<tool>, or nil
}

// FromFS reads and validates the skill at the root of fsys (os.DirFS of
// its directory, an embed.FS, a zip): SKILL.md (see [ParseSkillFile]),
// and every file: at most [Options.MaxFiles] (and twice as many files
// and directories together) of at most
// [Options.MaxBytes] together, counted while read; paths of printable
// characters without backslashes, at most [MaxPathBytes] bytes and
// [MaxPathDepth] deep; regular files and directories only (no symlink is
// followed, none is accepted); and tools/, if present, a valid toolset
// package ([toolpkg.ValidateZip]). Every problem is reported at once in a
// *[ValidationError]. Nothing a file names (a link in the Markdown, a
// path) is followed.
//
// The skill keeps fsys to read its references and assets on demand; they
// are checked again when read. Its bundled tools are not run: give them a
// store with [Install] or [Skill.WithPackage], or give the skill Go tools
// with [Skill.WithTools].
func FromFS(fsys fs.FS, opts *Options) (*Skill, error) {
	if fsys == nil {
		return nil, errors.New("skill: FromFS: nil fs.FS")
	}
	o := opts.withDefaults()
	c := &checker{o: o, s: &Skill{fsys: fsys, index: map[string]File{}, maxRead: o.MaxReadBytes}}
	c.walk()
	c.skillFile()
	c.toolsDir()
	if len(c.probs) > 0 {
		return nil, &ValidationError{Problems: c.probs}
	}
	return c.s, nil
}

// FromZip reads and validates a skill from a zip of its directory: the
// zip's structure is checked first, as a package's is
// ([toolpkg.ValidateArchive]: size, entries, paths, symlinks, the
// uncompressed size counted while reading, all within opts), then the
// skill as [FromFS] checks it. SKILL.md is at the zip's root, or in its
// only top-level directory. The skill reads its files from r: keep r open
// while it is used.
func FromZip(r io.ReaderAt, size int64, opts *Options) (*Skill, error) {
	if r == nil {
		return nil, errors.New("skill: FromZip: nil reader")
	}
	o := opts.withDefaults()
	zr, err := toolpkg.ValidateArchive(r, size, &toolpkg.Limits{
		MaxZipBytes: o.MaxBytes, MaxUncompressedBytes: o.MaxBytes, MaxEntries: 2 * o.MaxFiles,
	})
	var ve *toolpkg.ValidationError
	if errors.As(err, &ve) {
		out := &ValidationError{}
		for _, p := range ve.Problems {
			out.Problems = append(out.Problems, Problem{Path: p.Entry, Message: p.Message})
		}
		return nil, out
	}
	if err != nil {
		return nil, err
	}
	root, err := zipRoot(zr)
	if err != nil {
		return nil, err
	}
	return FromFS(root, &o)
}

// zipRoot finds the skill's root in a zip: the zip's, or its only
// top-level directory when SKILL.md is there.
func zipRoot(zr *zip.Reader) (fs.FS, error) {
	if _, err := fs.Stat(zr, SkillFile); err == nil {
		return zr, nil
	}
	entries, err := fs.ReadDir(zr, ".")
	if err != nil {
		return zr, nil // FromFS reports what cannot be read
	}
	if len(entries) == 1 && entries[0].IsDir() {
		if _, err := fs.Stat(zr, entries[0].Name()+"/"+SkillFile); err == nil {
			return fs.Sub(zr, entries[0].Name())
		}
	}
	return zr, nil // FromFS reports SKILL.md missing
}

type checker struct {
	o     Options
	s     *Skill
	probs []Problem
	total int64
	seen  int // entries walked, directories included
	hasTools,
	stopped bool
}

func (c *checker) add(p, format string, args ...any) {
	if len(c.probs) >= maxProblems {
		if len(c.probs) == maxProblems {
			c.probs = append(c.probs, Problem{Message: "more problems were found; fix these first"})
		}
		return
	}
	c.probs = append(c.probs, Problem{Path: p, Message: fmt.Sprintf(format, args...)})
}

// walk lists and reads every file, checking its path, kind and size.
func (c *checker) walk() {
	err := fs.WalkDir(c.s.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			c.add(p, "unreadable: %v", err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == "." {
			return nil
		}
		if c.seen++; c.seen > 2*c.o.MaxFiles {
			c.add("", "more than %d files and directories; checking stopped", 2*c.o.MaxFiles)
			c.stopped = true
			return fs.SkipAll
		}
		if msg := checkPath(p); msg != "" {
			c.add(p, "%s", msg)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		t := d.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			c.add(p, "is a symlink; skills may not contain symlinks")
			return nil
		case t.IsDir():
			if p == ToolsDir {
				c.hasTools = true
			}
			return nil
		case !t.IsRegular():
			c.add(p, "is not a regular file or directory")
			return nil
		}
		if len(c.s.files) >= c.o.MaxFiles {
			c.add("", "more than %d files; checking stopped", c.o.MaxFiles)
			c.stopped = true
			return fs.SkipAll
		}
		n, err := c.count(p)
		if err != nil {
			c.add(p, "%v", err)
			if errors.Is(err, errTooLarge) {
				c.stopped = true
				return fs.SkipAll
			}
			return nil
		}
		f := File{Path: p, Size: n}
		c.s.files = append(c.s.files, f)
		c.s.index[p] = f
		return nil
	})
	if err != nil {
		c.add("", "listing the files: %v", err)
	}
}

var errTooLarge = errors.New("too large")

// count reads file p to its end within what is left of the budget.
func (c *checker) count(p string) (int64, error) {
	f, err := c.s.fsys.Open(p)
	if err != nil {
		return 0, fmt.Errorf("unreadable: %v", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return 0, errors.New("is not a regular file")
	}
	budget := c.o.MaxBytes - c.total
	n, err := io.Copy(io.Discard, io.LimitReader(f, budget+1))
	c.total += n
	if err != nil {
		return n, fmt.Errorf("unreadable: %v", err)
	}
	if n > budget {
		return n, fmt.Errorf("the skill's files exceed %d bytes together (counted while reading; checking stopped here): %w", c.o.MaxBytes, errTooLarge)
	}
	return n, nil
}

// checkPath returns what is wrong with a path of the skill, or "".
func checkPath(p string) string {
	switch {
	case len(p) > MaxPathBytes:
		return fmt.Sprintf("the path is %d bytes; at most %d are allowed", len(p), MaxPathBytes)
	case !fs.ValidPath(p):
		return "not a clean relative path"
	case strings.Count(p, "/") >= MaxPathDepth:
		return fmt.Sprintf("more than %d directories deep", MaxPathDepth)
	case strings.ContainsRune(p, '\\'):
		return "holds a backslash"
	case !utf8.ValidString(p):
		return "not UTF-8"
	}
	for _, r := range p {
		if !unicode.IsPrint(r) && r != ' ' {
			return "holds a control character"
		}
	}
	return ""
}

// skillFile parses SKILL.md.
func (c *checker) skillFile() {
	f, ok := c.s.index[SkillFile]
	if !ok {
		if !c.stopped {
			c.add(SkillFile, "missing: a skill needs %s at its root", SkillFile)
		}
		return
	}
	if f.Size > int64(c.o.MaxSkillFileBytes) {
		c.add(SkillFile, "%d bytes; at most %d are allowed: move details to references/", f.Size, c.o.MaxSkillFileBytes)
		return
	}
	data, err := readBounded(c.s.fsys, SkillFile, c.o.MaxSkillFileBytes)
	if err != nil {
		c.add(SkillFile, "%v", err)
		return
	}
	fm, body, err := ParseSkillFile(data, c.o.MaxSkillFileBytes)
	var fe *FrontMatterError
	switch {
	case errors.As(err, &fe):
		for _, p := range fe.Problems {
			c.add(SkillFile, "%s", p.String())
		}
		return
	case err != nil:
		c.add(SkillFile, "%v", err)
		return
	}
	if c.o.Name != "" && fm.Name != c.o.Name {
		c.add(SkillFile, "name: the skill is named %q but must be named %q (its directory's, or the name it is uploaded under)", quoted(fm.Name), quoted(c.o.Name))
	}
	c.s.fm, c.s.body = *fm, body
}

// toolsDir validates tools/ as a toolset package.
func (c *checker) toolsDir() {
	if !c.hasTools || c.stopped {
		return
	}
	var buf bytes.Buffer
	if err := c.s.zipTools(&buf); err != nil {
		c.add(ToolsDir, "%v", err)
		return
	}
	m, err := toolpkg.ValidateZip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), c.o.Package)
	var ve *toolpkg.ValidationError
	switch {
	case errors.As(err, &ve):
		for _, p := range ve.Problems {
			c.add(joinPath(ToolsDir, p.Entry), "%s", p.Message)
		}
	case err != nil:
		c.add(ToolsDir, "%v", err)
	default:
		c.s.manifest = m
	}
}

func joinPath(dir, p string) string {
	if p == "" {
		return dir
	}
	return dir + "/" + p
}

// zipTools writes tools/ as a package zip.
func (s *Skill) zipTools(w io.Writer) error {
	sub, err := fs.Sub(s.fsys, ToolsDir)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(w)
	if err := zw.AddFS(sub); err != nil {
		return fmt.Errorf("zipping the bundled tools: %w", err)
	}
	return zw.Close()
}

// readBounded reads file p of fsys, refusing more than max bytes and
// anything but a regular file (a symlink included, where fsys can tell).
func readBounded(fsys fs.FS, p string, max int) ([]byte, error) {
	if _, ok := fsys.(fs.ReadLinkFS); ok {
		st, err := fs.Lstat(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("unreadable: %w", err)
		}
		if !st.Mode().IsRegular() {
			return nil, errors.New("is no longer a regular file")
		}
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, errors.New("is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	if len(data) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, max)
	}
	return data, nil
}

// Name returns the skill's name.
func (s *Skill) Name() string { return s.fm.Name }

// Description returns the skill's description.
func (s *Skill) Description() string { return s.fm.Description }

// FrontMatter returns the skill's front matter.
func (s *Skill) FrontMatter() FrontMatter {
	fm := s.fm
	if fm.Metadata != nil {
		fm.Metadata = make(map[string]string, len(s.fm.Metadata))
		for k, v := range s.fm.Metadata {
			fm.Metadata[k] = v
		}
	}
	fm.AllowedTools = append([]string(nil), s.fm.AllowedTools...)
	fm.Warnings = append([]toolpkg.FieldProblem(nil), s.fm.Warnings...)
	return fm
}

// Body returns the skill's instructions: the Markdown of SKILL.md after
// its front matter.
func (s *Skill) Body() string { return s.body }

// Files returns every regular file of the skill, in lexical order.
func (s *Skill) Files() []File { return append([]File(nil), s.files...) }

// Readable returns the files read_skill_file reads: those under
// references/ and assets/, in lexical order.
func (s *Skill) Readable() []File {
	var out []File
	for _, f := range s.files {
		if readable(f.Path) {
			out = append(out, f)
		}
	}
	return out
}

func readable(p string) bool {
	return strings.HasPrefix(p, ReferencesDir+"/") || strings.HasPrefix(p, AssetsDir+"/")
}

// Manifest returns the manifest of the skill's bundled tools, or nil for
// a skill without tools/.
func (s *Skill) Manifest() *toolpkg.Manifest { return s.manifest }

// ReadFile reads a file under references/ or assets/, as read_skill_file
// does: name is the path as [Skill.Readable] lists it (no "..", no
// leading "/", no "./"), the file must still be a regular file (a symlink
// is refused where the file system can tell) and at most
// [Options.MaxReadBytes]. Its errors are for the model: they say what to
// change.
func (s *Skill) ReadFile(name string) ([]byte, error) {
	if msg := checkPath(name); msg != "" || strings.HasPrefix(name, "/") {
		if msg == "" {
			msg = "absolute"
		}
		return nil, toolset.ModelErrorf("%q is not a path of skill %q (%s): give a path as load_skill listed it, such as %q", quoted(name), s.fm.Name, msg, s.example())
	}
	if !readable(name) {
		return nil, toolset.ModelErrorf("%q: read_skill_file reads the files under %s/ and %s/ of skill %q only", quoted(name), ReferencesDir, AssetsDir, s.fm.Name)
	}
	f, ok := s.index[name]
	if !ok {
		return nil, toolset.ModelErrorf("skill %q has no file %q; its files are: %s", s.fm.Name, quoted(name), s.listReadable())
	}
	if f.Size > int64(s.maxRead) {
		return nil, toolset.ModelErrorf("%q of skill %q is %d bytes, more than the %d read_skill_file returns", name, s.fm.Name, f.Size, s.maxRead)
	}
	data, err := readBounded(s.fsys, name, s.maxRead)
	if err != nil {
		return nil, toolset.ModelErrorf("%q of skill %q: %v", name, s.fm.Name, err)
	}
	return data, nil
}

func (s *Skill) example() string {
	for _, f := range s.files {
		if readable(f.Path) {
			return f.Path
		}
	}
	return ReferencesDir + "/guide.md"
}

// maxListed bounds the files a message lists.
const maxListed = 50

func (s *Skill) listReadable() string {
	fs := s.Readable()
	if len(fs) == 0 {
		return "none"
	}
	var names []string
	for i, f := range fs {
		if i == maxListed {
			names = append(names, fmt.Sprintf("and %d more", len(fs)-maxListed))
			break
		}
		names = append(names, f.Path)
	}
	return strings.Join(names, ", ")
}
