package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gotoolset/toolset/platform"
	"github.com/gotoolset/toolset/toolpkg"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

// maxSkillArchive bounds the archive of a skill a runner downloads from
// the platform: a skill's files are bounded so, and the zip with them.
const maxSkillArchive = skill.DefaultMaxBytes

// fetchSkills downloads and reads each skill the effective document
// attaches (GET /api/v1/platform/skills/NAME/archive), in its order. A
// skill whose version is not the one deployed is served with a warning,
// as a toolset's is. Their bundled tools are installed later
// (installSkillTools).
func fetchSkills(ctx context.Context, base *url.URL, token string, ea *platform.EffectiveAgent, doc *platform.EffectiveDocument, stderr io.Writer) (map[string]*skill.Skill, error) {
	if len(doc.Spec.Skills) > skill.MaxSkills {
		return nil, fmt.Errorf("the effective document of agent %q attaches %d skills: more than this runner takes (%d)", doc.Name, len(doc.Spec.Skills), skill.MaxSkills)
	}
	out := map[string]*skill.Skill{}
	for _, name := range doc.Spec.Skills {
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("the effective document of agent %q attaches skill %q twice", doc.Name, name)
		}
		sk, version, err := fetchSkill(ctx, base, token, name, maxSkillArchive)
		if err != nil {
			return nil, err
		}
		if v := ea.SkillVersions[name]; v != 0 && v != version {
			fmt.Fprintf(stderr, "toolset serve: warning: skill %q: the platform deployed version %d and now has version %d, which this runner serves\n", name, v, version)
		}
		out[name] = sk
	}
	return out, nil
}

// fetchSkill downloads the archive of one skill, at most limit bytes, and
// reads it; it returns the skill and the version the platform says.
func fetchSkill(ctx context.Context, base *url.URL, token, name string, limit int64) (*skill.Skill, int, error) {
	if err := skill.CheckName(name); err != nil {
		return nil, 0, fmt.Errorf("the platform at %s: the effective document attaches a skill named %q: %w", base, bounded(name), err)
	}
	target := base.JoinPath("api/v1/platform/skills", name, "archive")
	status, header, body, err := platformFetch(ctx, base, token, target, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("skill %q: %w", name, err)
	}
	if status != http.StatusOK {
		return nil, 0, fmt.Errorf("skill %q: %w", name, unexpectedAnswer(base, &http.Response{StatusCode: status}, body))
	}
	version, err := strconv.Atoi(header.Get(platform.SkillVersionHeader))
	if err != nil || version < 1 {
		return nil, 0, fmt.Errorf("skill %q: the platform at %s answered an archive without a valid %s header", name, base, platform.SkillVersionHeader)
	}
	sk, err := skill.FromZip(bytes.NewReader(body), int64(len(body)), &skill.Options{Name: name, MaxBytes: limit})
	if err != nil {
		// The archive is the platform's answer: its problems are shown
		// bounded, as another answer's would be.
		return nil, 0, fmt.Errorf("skill %q from the platform at %s does not read: %s", name, base, bounded(err.Error()))
	}
	return sk, version, nil
}

// skillSource gives the skills fetched as agentfile.Options.SkillSource.
func skillSource(skills map[string]*skill.Skill) func(context.Context, string) (*skill.Skill, error) {
	return func(_ context.Context, name string) (*skill.Skill, error) {
		sk, ok := skills[name]
		if !ok {
			return nil, errors.New("the runner did not fetch it")
		}
		return sk, nil
	}
}

// installSkillTools gives the skills that bundle tools (tools/) those
// tools, run by this runner: each is installed, and discovered, in a
// store of the runner's own for this run, in the sandbox mode of the
// runner's store (--store), so that a skill's tools never replace a
// toolset of that store. A runner without --store runs no package
// itself: it serves such skills without their tools, with a note. The
// returned function closes the store and removes it.
func installSkillTools(ctx context.Context, skills map[string]*skill.Skill, store *toolpkg.Store, stderr io.Writer) (func(), error) {
	var bundled []string
	for _, name := range sortedKeys(skills) {
		if skills[name].HasPackage() {
			bundled = append(bundled, name)
		}
	}
	if len(bundled) == 0 {
		return func() {}, nil
	}
	if store == nil {
		for _, name := range bundled {
			fmt.Fprintf(stderr, "toolset serve: note: skill %q bundles tools, which only a runner with --store runs: the model gets its instructions and files only\n", name)
		}
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "toolset-skill-tools-*")
	if err != nil {
		return nil, err
	}
	// A sandbox may run the tools as another user: it must reach the
	// store through dir (search, not read).
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	tools, err := toolpkg.Open(filepath.Join(dir, "store"), &toolpkg.Options{Sandbox: store.Sandbox(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("the store of the skills' tools: %w", err)
	}
	cleanup := func() {
		tools.Close()
		os.RemoveAll(dir)
	}
	for _, name := range bundled {
		sk, _, err := skill.Install(ctx, tools, skills[name], toolpkg.Config{})
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("skill %q: its bundled tools: %w", name, err)
		}
		skills[name] = sk
	}
	return cleanup, nil
}
