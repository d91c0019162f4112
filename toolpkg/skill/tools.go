package skill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg"
)

// WithTools returns a copy of s whose tools are ts, tools of the program
// itself: once the skill is loaded the model calls each as
// <skill>__<tool>. They replace the skill's bundled tools, if any.
func (s *Skill) WithTools(ts toolset.Toolset) *Skill {
	c := *s
	c.tools = nil
	if ts != nil {
		c.tools = toolset.NewPrefixed(ts, s.fm.Name, toolset.WithSeparator("__"))
	}
	return &c
}

// WithPackage returns a copy of s whose tools are the skill's bundled
// tools as store serves them: the toolset named after the skill, which
// [Install] uploads (or the program did with [Skill.PackageZip] and
// [toolpkg.Store.StartUpload]), configured with cfg. The store names
// them <skill>__<tool> itself. Until the store has discovered them, the
// skill cannot be loaded (load_skill says why).
func (s *Skill) WithPackage(store *toolpkg.Store, cfg toolpkg.Config) *Skill {
	c := *s
	c.tools = nil
	if store != nil {
		c.tools = store.ToolsetWithConfig(s.fm.Name, cfg)
	}
	return &c
}

// Tools returns the toolset of the skill's tools, named <skill>__<tool>,
// or nil for a skill without tools.
func (s *Skill) Tools() toolset.Toolset { return s.tools }

// HasPackage reports whether the skill bundles tools (a tools/ directory).
func (s *Skill) HasPackage() bool { return s.manifest != nil }

// ErrNoPackage reports a skill without bundled tools where they are
// needed.
var ErrNoPackage = errors.New("the skill bundles no tools (no tools/ directory)")

// PackageZip writes the skill's bundled tools (tools/) as a toolset
// package zip, for [toolpkg.Store.StartUpload] under the skill's name.
func (s *Skill) PackageZip(w io.Writer) error {
	if s.manifest == nil {
		return fmt.Errorf("skill %q: %w", s.fm.Name, ErrNoPackage)
	}
	return s.zipTools(w)
}

// Install uploads the skill's bundled tools to store, as the toolset
// named after the skill, waits for their discovery, and returns the skill
// with them ([Skill.WithPackage] with cfg), and the store's record. A
// package the store refuses is a *[toolpkg.ValidationError]; a discovery
// that fails is an error listing the store's reasons (the Info says them
// too), and the skill is not returned.
func Install(ctx context.Context, store *toolpkg.Store, s *Skill, cfg toolpkg.Config) (*Skill, toolpkg.Info, error) {
	if store == nil || s == nil {
		return nil, toolpkg.Info{}, errors.New("skill: Install: nil store or skill")
	}
	var buf bytes.Buffer
	if err := s.PackageZip(&buf); err != nil {
		return nil, toolpkg.Info{}, fmt.Errorf("skill: %w", err)
	}
	info, err := store.Upload(ctx, s.fm.Name, bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		return nil, info, fmt.Errorf("skill %q: installing its tools: %w", s.fm.Name, err)
	}
	if info.Status != toolpkg.StatusReady {
		return nil, info, fmt.Errorf("skill %q: its tools are %s: %s", s.fm.Name, info.Status, strings.Join(info.Errors, "; "))
	}
	return s.WithPackage(store, cfg), info, nil
}
