package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

// diskFile is a file of the working tree, for zip.Create.
type diskFile struct {
	rel, abs string
	info     fs.FileInfo
}

func (f diskFile) Path() string                 { return f.rel }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }

// moduleFiles returns the files of the working tree under the module's
// directory that a commit of it would hold: in a git repository the
// tracked files and the untracked ones that are not ignored (what git add
// -A would commit), elsewhere every file outside version-control
// directories. Files of nested modules and vendored packages are in the
// list; zip.Create leaves them out, as the go command does.
func moduleFiles(repo string, m *repoModule) ([]zip.File, error) {
	dir := filepath.Join(repo, filepath.FromSlash(m.Dir))
	var rels []string
	if _, err := os.Stat(filepath.Join(repo, ".git")); err == nil {
		cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("listing the files of %s: %w: %s", m.Dir, err, stderr.Bytes())
		}
		for _, p := range strings.Split(string(out), "\x00") {
			if p != "" {
				rels = append(rels, p)
			}
		}
	} else {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				switch d.Name() {
				case ".git", ".hg", ".svn", ".bzr":
					return filepath.SkipDir
				}
				return nil
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			rels = append(rels, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing the files of %s: %w", m.Dir, err)
		}
	}
	sort.Strings(rels)
	rels = slices.Compact(rels) // an unmerged file is listed once per stage
	files := make([]zip.File, 0, len(rels)+1)
	// A sub-module without a LICENSE of its own gets the repository's, as
	// the go command and module proxies make its zip from version control.
	if m.Dir != "." && !slices.Contains(rels, "LICENSE") {
		abs := filepath.Join(repo, "LICENSE")
		if info, err := os.Lstat(abs); err == nil && info.Mode().IsRegular() {
			files = append(files, diskFile{rel: "LICENSE", abs: abs, info: info})
		}
	}
	for _, rel := range rels {
		abs := filepath.Join(dir, filepath.FromSlash(rel))
		info, err := os.Lstat(abs)
		if os.IsNotExist(err) {
			continue // tracked, deleted in the working tree: not in the next commit
		}
		if err != nil {
			return nil, err
		}
		files = append(files, diskFile{rel: rel, abs: abs, info: info})
	}
	return files, nil
}

// moduleZip returns the module zip of m at version, made from the working
// tree.
func moduleZip(repo string, m *repoModule, version string) ([]byte, error) {
	files, err := moduleFiles(repo, m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := zip.Create(&buf, module.Version{Path: m.Path, Version: version}, files); err != nil {
		return nil, fmt.Errorf("zipping %s: %w", m.Dir, err)
	}
	return buf.Bytes(), nil
}

// addToProxy writes m at version into the file proxy dir (the layout of
// GOPROXY=file://dir: <module>/@v/list, .info, .mod and .zip), from the
// working tree, and returns the zip's h1 hash.
func addToProxy(dir, repo string, m *repoModule, version string, t time.Time) (string, error) {
	data, err := moduleZip(repo, m, version)
	if err != nil {
		return "", err
	}
	gomod, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(m.Dir), "go.mod"))
	if err != nil {
		return "", err
	}
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	escVer, err := module.EscapeVersion(version)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, t.UTC()})
	if err != nil {
		return "", err
	}
	zipPath := filepath.Join(vdir, escVer+".zip")
	for name, content := range map[string][]byte{escVer + ".zip": data, escVer + ".mod": gomod, escVer + ".info": info} {
		if err := os.WriteFile(filepath.Join(vdir, name), content, 0o644); err != nil {
			return "", err
		}
	}
	if err := addToList(filepath.Join(vdir, "list"), version); err != nil {
		return "", err
	}
	return dirhash.HashZip(zipPath, dirhash.Hash1)
}

// addToList adds version to a proxy's list file, in semver order.
func addToList(list, version string) error {
	data, err := os.ReadFile(list)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	versions := strings.Fields(string(data))
	for _, v := range versions {
		if v == version {
			return nil
		}
	}
	versions = append(versions, version)
	sort.Slice(versions, func(i, j int) bool { return semver.Compare(versions[i], versions[j]) < 0 })
	return os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// buildProxy writes every module of repo at version into the file proxy
// dir.
func buildProxy(dir, repo string, mods []*repoModule, version string) error {
	t := time.Now()
	for _, m := range mods {
		if _, err := addToProxy(dir, repo, m, version, t); err != nil {
			return err
		}
	}
	return nil
}
