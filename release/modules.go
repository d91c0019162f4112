package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
)

// A repoModule is one module of the repository.
type repoModule struct {
	// Dir is the module's directory relative to the repository's root, in
	// slash form: "." for the root module.
	Dir string
	// Path is the module path.
	Path string
	// Siblings are the module paths of the repository's modules that it
	// requires.
	Siblings []string
}

// tag returns the module's tag for version: the version for the root
// module, "dir/version" for the others.
func (m *repoModule) tag(version string) string {
	if m.Dir == "." {
		return version
	}
	return m.Dir + "/" + version
}

// findModules returns the modules under repo (every go.mod outside
// testdata, vendor and hidden directories), each after the siblings it
// requires.
func findModules(repo string) ([]*repoModule, error) {
	var mods []*repoModule
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != repo && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.ParseLax(p, data, nil)
		if err != nil {
			return err
		}
		if f.Module == nil {
			return fmt.Errorf("%s: no module line", p)
		}
		rel, err := filepath.Rel(repo, filepath.Dir(p))
		if err != nil {
			return err
		}
		m := &repoModule{Dir: filepath.ToSlash(rel), Path: f.Module.Mod.Path}
		for _, r := range f.Require {
			m.Siblings = append(m.Siblings, r.Mod.Path)
		}
		mods = append(mods, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding the modules: %w", err)
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("no go.mod under %s", repo)
	}
	root := ""
	for _, m := range mods {
		if m.Dir == "." {
			root = m.Path
		}
	}
	if root == "" {
		return nil, errors.New("no go.mod at the root of the repository")
	}
	byPath := make(map[string]*repoModule, len(mods))
	for _, m := range mods {
		if m.Dir != "." && m.Path != path.Join(root, m.Dir) {
			return nil, fmt.Errorf("module %s is in %s: a sub-module's path must be the root's path and its directory", m.Path, m.Dir)
		}
		byPath[m.Path] = m
	}
	for _, m := range mods {
		var sib []string
		for _, p := range m.Siblings {
			if byPath[p] != nil {
				sib = append(sib, p)
			}
		}
		m.Siblings = sib
	}
	return sortModules(mods, byPath)
}

// sortModules orders mods so that each comes after the siblings it
// requires, by directory otherwise.
func sortModules(mods []*repoModule, byPath map[string]*repoModule) ([]*repoModule, error) {
	sort.Slice(mods, func(i, j int) bool { return mods[i].Dir < mods[j].Dir })
	const (
		unseen = iota
		visiting
		done
	)
	state := make(map[string]int, len(mods))
	var out []*repoModule
	var visit func(m *repoModule, chain []string) error
	visit = func(m *repoModule, chain []string) error {
		switch state[m.Path] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("the modules require each other in a cycle: %s", strings.Join(append(chain, m.Path), " -> "))
		}
		state[m.Path] = visiting
		for _, p := range m.Siblings {
			if err := visit(byPath[p], append(chain, m.Path)); err != nil {
				return err
			}
		}
		state[m.Path] = done
		out = append(out, m)
		return nil
	}
	for _, m := range mods {
		if err := visit(m, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// isSibling reports whether modPath is the module path of root or of a
// module under it.
func isSibling(root, modPath string) bool {
	return modPath == root || strings.HasPrefix(modPath, root+"/")
}
