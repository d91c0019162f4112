package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

// apidiffVersion is the version of golang.org/x/exp whose cmd/apidiff
// compares a release's API with the previous one's.
const apidiffVersion = "v0.0.0-20261113113407-e3970619a1a4"

// releaseOptions are the options of the tag subcommand.
type releaseOptions struct {
	// Version is the new version, vX.Y.Z.
	Version string
	// DryRun stops before the commit and the tags.
	DryRun bool
	// Proxy is the directory of the release's file proxy; a temporary one
	// if empty.
	Proxy string
	// Apidiff is the apidiff command; go run of golang.org/x/exp/cmd/apidiff
	// at apidiffVersion if empty.
	Apidiff string
}

// release releases every module of repo at opts.Version; see the tag
// subcommand in the package doc.
func release(w io.Writer, repo string, mods []*repoModule, opts releaseOptions) error {
	v := opts.Version
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return fmt.Errorf("version %q is not a canonical semantic version vX.Y.Z", v)
	}
	if semver.Major(v) != "v0" && semver.Major(v) != "v1" {
		return fmt.Errorf("version %s: a major version above v1 needs a /%s suffix on every module path", v, semver.Major(v))
	}
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		return fmt.Errorf("%s is not the root of a git repository: %w", repo, err)
	}
	if status, err := git(repo, "status", "--porcelain"); err != nil {
		return err
	} else if status != "" {
		return fmt.Errorf("the working tree has changes; commit or stash them first:\n%s", status)
	}
	tags, err := git(repo, "tag", "--list")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	prev := ""
	for _, t := range strings.Fields(tags) {
		have[t] = true
		if semver.IsValid(t) && semver.Compare(t, v) < 0 && (prev == "" || semver.Compare(t, prev) > 0) {
			prev = t
		}
	}
	for _, m := range mods {
		if have[m.tag(v)] {
			return fmt.Errorf("tag %s exists", m.tag(v))
		}
	}

	if prev == "" {
		fmt.Fprintf(w, "%s is the first release: no earlier API to compare with\n", v)
	} else if err := compareAPI(w, repo, mods, prev, v, opts.Apidiff); err != nil {
		return err
	}

	if err := bump(repo, mods, v); err != nil {
		return err
	}

	proxyDir := opts.Proxy
	if proxyDir == "" {
		tmp, err := os.MkdirTemp("", "release-proxy")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		proxyDir = tmp
	}
	hashes, err := tidyAndZip(w, repo, mods, v, proxyDir)
	if err != nil {
		return err
	}
	if opts.DryRun {
		fmt.Fprintf(w, "dry run: the changes of %s are in the working tree, not committed, not tagged\n", v)
		return nil
	}

	if _, err := git(repo, "add", "-A"); err != nil {
		return err
	}
	// A tree already prepared for v (its go.mod and go.sum files as the
	// release writes them: a release whose tagging failed, or a clone of
	// a released commit) has nothing to commit; its HEAD is tagged.
	if staged, err := git(repo, "diff", "--cached", "--name-only"); err != nil {
		return err
	} else if strings.TrimSpace(staged) == "" {
		fmt.Fprintf(w, "the tree already holds the changes of %s: tagging HEAD\n", v)
	} else if _, err := git(repo, "commit", "-q", "-m", "Release "+v+": every module requires its siblings at "+v); err != nil {
		return err
	}
	// The zips the public proxies will make from the tags are the ones
	// whose hashes the go.sum files hold.
	for _, m := range mods {
		h, err := vcsHash(repo, m, v)
		if err != nil {
			return err
		}
		if h != hashes[m.Path] {
			return fmt.Errorf("%s: the zip of the commit hashes to %s, the released go.sum files hold %s", m.Dir, h, hashes[m.Path])
		}
	}
	for _, m := range mods {
		if _, err := git(repo, "tag", "-a", "-m", m.Path+" "+v, m.tag(v)); err != nil {
			return err
		}
		fmt.Fprintf(w, "tagged %s\n", m.tag(v))
	}
	return nil
}

// git runs git in repo and returns its output.
func git(repo string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out)), nil
}

// bump requires every sibling at version in every go.mod, and in each
// go.work replaces its modules at that version with their directories, so
// that the workspace builds before the version is published.
func bump(repo string, mods []*repoModule, version string) error {
	root := rootPath(mods)
	required := map[string]bool{}
	for _, m := range mods {
		for _, s := range m.Siblings {
			required[s] = true
		}
	}
	for _, m := range mods {
		p := filepath.Join(repo, filepath.FromSlash(m.Dir), "go.mod")
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(p, data, nil)
		if err != nil {
			return err
		}
		for _, r := range f.Require {
			if isSibling(root, r.Mod.Path) {
				if err := f.AddRequire(r.Mod.Path, version); err != nil {
					return err
				}
			}
		}
		for _, r := range f.Replace {
			if isSibling(root, r.Old.Path) {
				return fmt.Errorf("%s replaces %s: a released module's go.mod must not (go install of it fails)", p, r.Old.Path)
			}
		}
		out, err := f.Format()
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, out, 0o644); err != nil {
			return err
		}
	}
	return filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != repo && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.work" {
			return nil
		}
		return bumpWork(p, root, version, required)
	})
}

// bumpWork replaces, in the go.work at p, each module of the workspace
// that a sibling requires, at version, with its directory: one replace
// block, after the rest of the file.
func bumpWork(p, root, version string, required map[string]bool) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	f, err := modfile.ParseWork(p, data, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Replace {
		if isSibling(root, r.Old.Path) {
			if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	var lines []string
	for _, u := range f.Use {
		gomod, err := os.ReadFile(filepath.Join(filepath.Dir(p), filepath.FromSlash(u.Path), "go.mod"))
		if err != nil {
			return err
		}
		modPath := modfile.ModulePath(gomod)
		if !isSibling(root, modPath) || !required[modPath] {
			continue
		}
		target := u.Path
		if !strings.HasSuffix(target, "/") && (target == "." || target == "..") {
			target += "/"
		}
		lines = append(lines, fmt.Sprintf("\t%s %s => %s\n", modPath, version, target))
	}
	f.Cleanup()
	out := bytes.TrimRight(modfile.Format(f.Syntax), "\n")
	// A comment of the replace block that was dropped is gone with it.
	out = bytes.TrimSuffix(out, []byte(workComment))
	out = append(bytes.TrimRight(out, "\n"), '\n')
	if len(lines) > 0 {
		slices.Sort(lines)
		out = append(out, "\n"+workComment+"\nreplace (\n"+strings.Join(lines, "")+")\n"...)
	}
	return os.WriteFile(p, out, 0o644)
}

// workComment is the comment of the replace block of a go.work.
const workComment = `// Each module of the workspace at the version at which its siblings
// require it: the workspace builds before that version is published.`

// tidyAndZip tidies each module in dependency order, outside the
// workspace and against the file proxy at proxyDir, which it fills with
// the module at version once tidy: so the go.sum lines of each module's
// siblings are those of the zips being released. It returns the zips' h1
// hashes by module path.
func tidyAndZip(w io.Writer, repo string, mods []*repoModule, version, proxyDir string) (map[string]string, error) {
	root := rootPath(mods)
	cache, err := releaseModCache(root)
	if err != nil {
		return nil, err
	}
	env, err := goEnv(proxyDir, cache)
	if err != nil {
		return nil, err
	}
	hashes := map[string]string{}
	t := time.Now()
	for _, m := range mods {
		dir := filepath.Join(repo, filepath.FromSlash(m.Dir))
		sumPath := filepath.Join(dir, "go.sum")
		gosum, err := os.ReadFile(sumPath)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		if len(gosum) > 0 {
			if err := os.WriteFile(sumPath, stripSiblings(root, gosum), 0o644); err != nil {
				return nil, err
			}
		}
		if err := runGo(dir, env, "mod", "tidy"); err != nil {
			return nil, err
		}
		h, err := addToProxy(proxyDir, repo, m, version, t)
		if err != nil {
			return nil, err
		}
		hashes[m.Path] = h
		fmt.Fprintf(w, "%s %s %s\n", m.Path, version, h)
	}
	return hashes, nil
}

// vcsHash returns the h1 hash of the zip of m made from its tag's commit
// (HEAD) by git archive, as a module proxy makes it.
func vcsHash(repo string, m *repoModule, version string) (string, error) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "release-vcs-*.zip")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	subdir := m.Dir
	if subdir == "." {
		subdir = ""
	}
	if err := zip.CreateFromVCS(f, module.Version{Path: m.Path, Version: version}, abs, "HEAD", subdir); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return dirhash.HashZip(f.Name(), dirhash.Hash1)
}

// compareAPI reports, for each module that was in the previous release,
// the changes of its API (golang.org/x/exp/cmd/apidiff -m), and fails on
// an incompatible change unless the major version changes or is v0.
func compareAPI(w io.Writer, repo string, mods []*repoModule, prev, version, apidiff string) error {
	cmdline := []string{"go", "run", "golang.org/x/exp/cmd/apidiff@" + apidiffVersion}
	if apidiff != "" {
		cmdline = strings.Fields(apidiff)
	}
	old, err := os.MkdirTemp("", "release-prev")
	if err != nil {
		return err
	}
	defer os.RemoveAll(old)
	oldTree := filepath.Join(old, "tree")
	if _, err := git(repo, "worktree", "add", "--detach", oldTree, prev); err != nil {
		return err
	}
	defer git(repo, "worktree", "remove", "--force", oldTree) //nolint:errcheck // best effort
	breaking := false
	for _, m := range mods {
		oldDir := filepath.Join(oldTree, filepath.FromSlash(m.Dir))
		if _, err := os.Stat(filepath.Join(oldDir, "go.mod")); err != nil {
			fmt.Fprintf(w, "%s: new in %s\n", m.Path, version)
			continue
		}
		export := filepath.Join(old, strings.ReplaceAll(m.Dir, "/", "_")+".export")
		if err := runIn(oldDir, append(cmdline, "-m", "-w", export, m.Path)...); err != nil {
			return fmt.Errorf("apidiff of %s at %s: %w", m.Path, prev, err)
		}
		cmd := exec.Command(cmdline[0], append(cmdline[1:], "-m", "-incompatible", export, m.Path)...)
		cmd.Dir = filepath.Join(repo, filepath.FromSlash(m.Dir))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("apidiff of %s: %w\n%s%s", m.Path, err, out, stderr.Bytes())
		}
		var report []string
		for _, l := range strings.Split(string(out), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Ignoring internal package") {
				report = append(report, l)
			}
		}
		if len(report) > 0 {
			breaking = true
			fmt.Fprintf(w, "%s: incompatible changes since %s:\n%s\n", m.Path, prev, strings.Join(report, "\n"))
		}
	}
	if breaking && semver.Major(prev) == semver.Major(version) && semver.Major(version) != "v0" {
		return errors.New("incompatible API changes within a major version")
	}
	return nil
}

// runIn runs a command in dir.
func runIn(dir string, args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
