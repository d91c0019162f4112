package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// goEnv is the environment of a go command that resolves the repository's
// modules from the file proxy at proxyDir and every other module from the
// module cache's downloads or, failing that, the usual GOPROXY; with the
// workspace off and the module cache at modCache.
//
// GOPRIVATE and GONOPROXY are cleared: either would send the repository's
// modules past the proxy, to their repository. The checksum database is
// off: it knows nothing of versions from the working tree. So is the go
// command's index of the module cache (GODEBUG goindex=0), which takes a
// module at one version in one cache to have the same files forever: the
// tree's files under that version change from run to run.
func goEnv(proxyDir, modCache string) ([]string, error) {
	out, err := exec.Command("go", "env", "GOPROXY", "GOMODCACHE", "GOFLAGS").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 3 {
		return nil, fmt.Errorf("go env printed %q", out)
	}
	userProxy, userCache, userFlags := lines[0], lines[1], lines[2]
	proxies := []string{fileURL(proxyDir)}
	if userCache != "" && userCache != modCache {
		if _, err := os.Stat(filepath.Join(userCache, "cache", "download")); err == nil {
			proxies = append(proxies, fileURL(filepath.Join(userCache, "cache", "download")))
		}
	}
	if userProxy != "" && userProxy != "off" {
		proxies = append(proxies, userProxy)
	}
	drop := map[string]bool{"GOWORK": true, "GOPROXY": true, "GOMODCACHE": true, "GOFLAGS": true,
		"GOSUMDB": true, "GONOSUMDB": true, "GOPRIVATE": true, "GONOPROXY": true, "GODEBUG": true}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	return append(env,
		"GOWORK=off",
		"GOPROXY="+strings.Join(proxies, ","),
		"GOMODCACHE="+modCache,
		"GOFLAGS="+strings.TrimSpace(userFlags+" -mod=mod -modcacherw"),
		"GOSUMDB=off",
		"GONOSUMDB=",
		"GOPRIVATE=",
		"GONOPROXY=",
		"GODEBUG="+strings.TrimPrefix(os.Getenv("GODEBUG")+",goindex=0", ","),
	), nil
}

// fileURL returns the file:// URL of the directory dir.
func fileURL(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return "file://" + filepath.ToSlash(abs)
}

// runGo runs the go command in dir with env, and returns its error with
// its output.
func runGo(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// stripSiblings returns the lines of a go.sum without those of root and
// the modules under it.
func stripSiblings(root string, sum []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.SplitAfter(string(sum), "\n") {
		if f := strings.Fields(line); len(f) > 0 && isSibling(root, f[0]) {
			continue
		}
		b.WriteString(line)
	}
	return b.Bytes()
}

// tidyCheck reports, for each module, whether go mod tidy outside the
// workspace (its siblings from the file proxy at proxyDir) would change
// its go.mod or the lines of its go.sum for modules outside the
// repository. The go.sum lines of the siblings are not compared: the
// proxy's siblings are the working tree's, whose hashes differ from the
// released versions'. Each module is tidied in a copy, so the tree is not
// touched.
func tidyCheck(w io.Writer, repo string, mods []*repoModule, proxyDir string) error {
	root := rootPath(mods)
	tmp, err := os.MkdirTemp("", "tidycheck")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cache, err := releaseModCache(root)
	if err != nil {
		return err
	}
	env, err := goEnv(proxyDir, cache)
	if err != nil {
		return err
	}
	var failed []string
	for i, m := range mods {
		fmt.Fprintf(w, "./%s\n", strings.TrimPrefix(m.Dir+"/", "./"))
		dir := filepath.Join(tmp, fmt.Sprintf("m%02d", i))
		if err := copyModule(repo, m, dir); err != nil {
			return err
		}
		gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
		gosum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "go.sum"), stripSiblings(root, gosum), 0o644); err != nil {
			return err
		}
		if err := runGo(dir, env, "mod", "tidy"); err != nil {
			fmt.Fprintln(w, err)
			failed = append(failed, m.Dir)
			continue
		}
		tidyMod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
		tidySum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
		diff := lineDiff("go.mod", gomod, tidyMod)
		diff += lineDiff("go.sum", stripSiblings(root, gosum), stripSiblings(root, tidySum))
		if diff != "" {
			fmt.Fprintf(w, "go mod tidy would change %s:\n%s", m.Dir, diff)
			failed = append(failed, m.Dir)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("not tidy: %s", strings.Join(failed, ", "))
	}
	return nil
}

// lineDiff lists the lines of name that tidying would remove (-) and add
// (+), or returns "" when the two are the same.
func lineDiff(name string, before, after []byte) string {
	if bytes.Equal(before, after) {
		return ""
	}
	count := func(b []byte) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(string(b), "\n") {
			m[l]++
		}
		return m
	}
	b, a := count(before), count(after)
	var out strings.Builder
	for _, l := range strings.Split(string(before), "\n") {
		if a[l] < b[l] {
			fmt.Fprintf(&out, "  %s: -%s\n", name, l)
			b[l]--
		}
	}
	b = count(before)
	for _, l := range strings.Split(string(after), "\n") {
		if b[l] < a[l] {
			fmt.Fprintf(&out, "  %s: +%s\n", name, l)
			a[l]--
		}
	}
	if out.Len() == 0 {
		out.WriteString("  " + name + ": the same lines in another order\n")
	}
	return out.String()
}

// copyModule copies the files of m that belong in its module zip (no
// nested modules, no vendored packages) into dir.
func copyModule(repo string, m *repoModule, dir string) error {
	files, err := moduleFiles(repo, m)
	if err != nil {
		return err
	}
	checked, err := zip.CheckFiles(files)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Dir, err)
	}
	valid := make(map[string]bool, len(checked.Valid))
	for _, p := range checked.Valid {
		valid[p] = true
	}
	for _, f := range files {
		if !valid[f.Path()] {
			continue
		}
		src := f.(diskFile).abs
		dst := filepath.Join(dir, filepath.FromSlash(f.Path()))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, f.(diskFile).info.Mode().Perm()|0o200); err != nil {
			return err
		}
	}
	return nil
}

// rootPath returns the module path of the repository's root module.
func rootPath(mods []*repoModule) string {
	for _, m := range mods {
		if m.Dir == "." {
			return m.Path
		}
	}
	return ""
}

// requiredVersion returns the version at which the modules require their
// siblings, which must be one version.
func requiredVersion(repo string, mods []*repoModule) (string, error) {
	root := rootPath(mods)
	version := ""
	for _, m := range mods {
		p := filepath.Join(repo, filepath.FromSlash(m.Dir), "go.mod")
		data, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		f, err := modfile.ParseLax(p, data, nil)
		if err != nil {
			return "", err
		}
		for _, r := range f.Require {
			if !isSibling(root, r.Mod.Path) {
				continue
			}
			if version != "" && r.Mod.Version != version {
				return "", fmt.Errorf("%s requires %s %s, others %s: the modules must require their siblings at one version", m.Dir, r.Mod.Path, r.Mod.Version, version)
			}
			version = r.Mod.Version
		}
	}
	if version == "" {
		return "", fmt.Errorf("no module requires another")
	}
	return version, nil
}

// tidyInPlace runs go mod tidy in each module of the tree, in dependency
// order, outside the workspace, its siblings from the file proxy at
// proxyDir; the go.sum lines of the siblings stay as they were.
func tidyInPlace(w io.Writer, repo string, mods []*repoModule, proxyDir string) error {
	root := rootPath(mods)
	cache, err := releaseModCache(root)
	if err != nil {
		return err
	}
	env, err := goEnv(proxyDir, cache)
	if err != nil {
		return err
	}
	for _, m := range mods {
		fmt.Fprintf(w, "./%s\n", strings.TrimPrefix(m.Dir+"/", "./"))
		dir := filepath.Join(repo, filepath.FromSlash(m.Dir))
		sumPath := filepath.Join(dir, "go.sum")
		gosum, err := os.ReadFile(sumPath)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := os.WriteFile(sumPath, stripSiblings(root, gosum), 0o644); err != nil {
			return err
		}
		tidyErr := runGo(dir, env, "mod", "tidy")
		tidySum, err := os.ReadFile(sumPath)
		if err != nil {
			return err
		}
		if err := os.WriteFile(sumPath, sortSum(append(stripSiblings(root, tidySum), onlySiblings(root, gosum)...)), 0o644); err != nil {
			return err
		}
		if tidyErr != nil {
			return tidyErr
		}
	}
	return nil
}

// onlySiblings returns the lines of a go.sum for root and the modules
// under it.
func onlySiblings(root string, sum []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.SplitAfter(string(sum), "\n") {
		if f := strings.Fields(line); len(f) > 0 && isSibling(root, f[0]) {
			b.WriteString(line)
		}
	}
	return b.Bytes()
}

// sortSum sorts the lines of a go.sum as the go command writes them: by
// module path, then version.
func sortSum(sum []byte) []byte {
	type line struct {
		mod  module.Version
		text string
	}
	var lines []line
	for _, l := range strings.Split(string(sum), "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			lines = append(lines, line{module.Version{Path: f[0], Version: f[1]}, l})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int {
		switch {
		case a.mod == b.mod:
			return 0
		case a.mod.Path != b.mod.Path:
			return strings.Compare(a.mod.Path, b.mod.Path)
		}
		mods := []module.Version{a.mod, b.mod}
		module.Sort(mods)
		if mods[0] == a.mod {
			return -1
		}
		return 1
	})
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
	return b.Bytes()
}

// releaseModCache returns the module cache of this command's go commands:
// a directory of its own in the user's cache directory, not the user's
// module cache, which must never hold the working tree's zips under a
// version that may be published with other contents. It is the same
// directory from run to run, so that builds from it hit the build cache
// (whose keys hold the source directories). The repository's modules are
// removed from it first: they come from the file proxy of each run.
func releaseModCache(root string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the module cache of the release: %w", err)
	}
	dir := filepath.Join(base, "gotoolset-release", "modcache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	esc, err := module.EscapePath(root)
	if err != nil {
		return "", err
	}
	stale, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(esc)+"@*"))
	if err != nil {
		return "", err
	}
	stale = append(stale, filepath.Join(dir, filepath.FromSlash(esc)), filepath.Join(dir, "cache", "download", filepath.FromSlash(esc)))
	for _, p := range stale {
		if err := removeAll(p); err != nil {
			return "", fmt.Errorf("clearing the module cache of the release: %w", err)
		}
	}
	return dir, nil
}

// removeAll removes p and everything under it, read-only directories of a
// module cache included.
func removeAll(p string) error {
	if _, err := os.Lstat(p); os.IsNotExist(err) {
		return nil
	}
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(q, 0o755)
		}
		return nil
	})
	return os.RemoveAll(p)
}
