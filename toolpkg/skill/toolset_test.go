package skill_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

type fillArgs struct {
	Field string `json:"field"`
}

// formsSkill is pdfFS with a Go tool, fill, as its tools.
func formsSkill(t testing.TB) *skill.Skill {
	sk, err := skill.FromFS(pdfFS(), nil)
	require.NoError(t, err)
	fill := toolset.NewTool("fill", "Fill a field.", func(_ context.Context, in fillArgs) (string, error) {
		return "filled " + in.Field, nil
	})
	return sk.WithTools(toolset.NewFunction(fill))
}

func csvSkill(t testing.TB) *skill.Skill {
	sk, err := skill.FromFS(fstest.MapFS{"SKILL.md": {Data: []byte("---\nname: csv\ndescription: Clean CSV files.\n---\nUse commas.\n")}}, nil)
	require.NoError(t, err)
	return sk
}

func call(t testing.TB, ctx context.Context, tools *toolset.ToolList, name, args string) (string, error) {
	t.Helper()
	res, err := tools.Execute(ctx, toolset.ToolCall{ID: "c", Name: name, Args: json.RawMessage(args)})
	if err != nil {
		return "", err
	}
	text, err := toolset.ResultText(res)
	require.NoError(t, err)
	return text, nil
}

// TestLoadSkill follows a run: the listing, a load, the skill's tools
// from the next turn, and a second load.
func TestLoadSkill(t *testing.T) {
	ctx := context.Background()
	skills, err := skill.NewToolset(formsSkill(t), csvSkill(t))
	require.NoError(t, err)
	run := toolset.NewRun(t.Name())
	defer run.End()

	tools, err := toolset.BuildTools(run.Turn(ctx), "a", skills)
	require.NoError(t, err)
	assert.Equal(t, []string{"load_skill", "read_skill_file"}, tools.Names())
	load, _ := tools.Lookup("load_skill")
	assert.Contains(t, load.Description, "- pdf-forms: Fill PDF forms. Use when the user gives a form.\n- csv: Clean CSV files.\n")

	_, err = call(t, run.Turn(ctx), tools, "pdf-forms__fill", `{"field":"x"}`)
	var ue *toolset.UnknownToolError
	require.True(t, errors.As(err, &ue), "a skill's tools cannot be called before it is loaded: %v", err)

	turn := run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "a", skills)
	require.NoError(t, err)
	text, err := call(t, turn, tools, "load_skill", `{"name":"pdf-forms"}`)
	require.NoError(t, err)
	assert.Equal(t, `Skill "pdf-forms" is loaded. Follow its instructions:

# Forms

Read references/fields.md first.

Files of the skill, read with read_skill_file when you need them:
- assets/logo.png (11 bytes)
- references/fields.md (25 bytes)

Tools of the skill, available from your next step: pdf-forms__fill
`, text)

	turn = run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "a", skills)
	require.NoError(t, err)
	assert.Equal(t, []string{"load_skill", "read_skill_file", "pdf-forms__fill"}, tools.Names())
	text, err = call(t, turn, tools, "pdf-forms__fill", `{"field":"x"}`)
	require.NoError(t, err)
	assert.Equal(t, "filled x", text)

	text, err = call(t, turn, tools, "load_skill", `{"name":"pdf-forms"}`)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(text, `Skill "pdf-forms" is loaded (it already was).`), text)
	text, err = call(t, turn, tools, "load_skill", `{"name":"csv"}`)
	require.NoError(t, err)
	assert.Equal(t, "Skill \"csv\" is loaded. Follow its instructions:\n\nUse commas.\n", text)

	tools, err = toolset.BuildTools(run.Turn(ctx), "a", skills)
	require.NoError(t, err)
	assert.Equal(t, []string{"load_skill", "read_skill_file", "pdf-forms__fill"}, tools.Names())
}

func TestLoadSkillErrors(t *testing.T) {
	ctx := context.Background()
	skills, err := skill.NewToolset(formsSkill(t), csvSkill(t))
	require.NoError(t, err)
	run := toolset.NewRun(t.Name())
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", skills)
	require.NoError(t, err)

	_, err = call(t, turn, tools, "load_skill", `{"name":"pdf"}`)
	msg, forModel := toolset.ErrorText(err)
	assert.True(t, forModel)
	assert.Equal(t, `no skill named "pdf"; the skills are: pdf-forms, csv`, msg)

	_, err = call(t, turn, tools, "load_skill", `{"name":"csv","extra":1}`)
	_, forModel = toolset.ErrorText(err)
	assert.True(t, forModel, "arguments are validated: %v", err)

	load, _ := tools.Lookup("load_skill")
	_, err = load.Execute(ctx, toolset.ToolCall{Name: "load_skill", Args: json.RawMessage(`{"name":"csv"}`)})
	assert.ErrorContains(t, err, "needs a run")
}

func TestNewToolsetErrors(t *testing.T) {
	_, err := skill.NewToolset()
	assert.ErrorContains(t, err, "no skills")
	_, err = skill.NewToolset(csvSkill(t), nil, csvSkill(t), &skill.Skill{})
	assert.ErrorContains(t, err, "skills[1] is nil")
	assert.ErrorContains(t, err, `skills[2]: a second skill named "csv"`)
	assert.ErrorContains(t, err, "skills[3] was not made by FromFS")

	many := make([]*skill.Skill, skill.MaxSkills+1)
	for i := range many {
		many[i] = namedSkill(t, fmt.Sprint("s", i), "d")
	}
	_, err = skill.NewToolset(many...)
	assert.ErrorContains(t, err, "at most 64")

	long := make([]*skill.Skill, 40)
	for i := range long {
		long[i] = namedSkill(t, fmt.Sprint("s", i), strings.Repeat("word ", 200))
	}
	_, err = skill.NewToolset(long...)
	assert.ErrorContains(t, err, "fit load_skill's description")
}

func namedSkill(t testing.TB, name, desc string) *skill.Skill {
	sk, err := skill.FromFS(fstest.MapFS{"SKILL.md": {Data: []byte("---\nname: " + name + "\ndescription: " + desc + "\n---\nbody\n")}}, nil)
	require.NoError(t, err)
	return sk
}

// TestLoadedSkillsAreTheRunsOwn checks many runs at once on one toolset:
// each sees the tools of the skills it loaded, and no other's.
func TestLoadedSkillsAreTheRunsOwn(t *testing.T) {
	ctx := context.Background()
	skills, err := skill.NewToolset(formsSkill(t), csvSkill(t))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			run := toolset.NewRun(fmt.Sprint(t.Name(), i))
			defer run.End()
			turn := run.Turn(ctx)
			tools, err := toolset.BuildTools(turn, "a", skills)
			if !assert.NoError(t, err) {
				return
			}
			loads := i%2 == 0
			if loads {
				_, err = call(t, turn, tools, "load_skill", `{"name":"pdf-forms"}`)
				assert.NoError(t, err)
			}
			for range 5 {
				turn = run.Turn(ctx)
				tools, err = toolset.BuildTools(turn, "a", skills)
				if !assert.NoError(t, err) {
					return
				}
				_, has := tools.Lookup("pdf-forms__fill")
				assert.Equal(t, loads, has)
				_, err = call(t, turn, tools, "pdf-forms__fill", `{"field":"f"}`)
				assert.Equal(t, loads, err == nil, "%v", err)
			}
		})
	}
	wg.Wait()
}

// TestLoadedSkillsAreSaved checks a run suspended in one process and
// resumed in another: its loaded skills come with it.
func TestLoadedSkillsAreSaved(t *testing.T) {
	ctx := context.Background()
	store := toolset.NewMemoryRunStore()
	first, err := skill.NewToolset(formsSkill(t))
	require.NoError(t, err)
	run, err := toolset.ResumeRun(ctx, store, t.Name())
	require.NoError(t, err)
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", first)
	require.NoError(t, err)
	_, err = call(t, turn, tools, "load_skill", `{"name":"pdf-forms"}`)
	require.NoError(t, err)
	require.NoError(t, run.Suspend(ctx))

	// Another process: the skills made afresh.
	second, err := skill.NewToolset(formsSkill(t))
	require.NoError(t, err)
	run, err = toolset.ResumeRun(ctx, store, t.Name())
	require.NoError(t, err)
	defer run.End()
	turn = run.Turn(ctx)
	tools, err = toolset.BuildTools(turn, "a", second)
	require.NoError(t, err)
	text, err := call(t, turn, tools, "pdf-forms__fill", `{"field":"y"}`)
	require.NoError(t, err)
	assert.Equal(t, "filled y", text)
}

// TestLoadedSkillToolsFail checks that a loaded skill whose tools fail to
// list fails the turn, naming the skill, and that load_skill refuses to
// load a skill whose tools fail.
func TestLoadedSkillToolsFail(t *testing.T) {
	ctx := context.Background()
	var broken sync.Map
	dyn := toolset.NewDynamic(func(ctx context.Context) (toolset.Toolset, error) {
		if _, ok := broken.Load("x"); ok {
			return nil, errors.New("the tool server is down")
		}
		return toolset.NewFunction(toolset.NewTool("fill", "Fill.", func(context.Context, fillArgs) (string, error) { return "", nil })), nil
	})
	sk, err := skill.FromFS(pdfFS(), nil)
	require.NoError(t, err)
	skills, err := skill.NewToolset(sk.WithTools(dyn))
	require.NoError(t, err)
	run := toolset.NewRun(t.Name())
	defer run.End()

	broken.Store("x", true)
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", skills)
	require.NoError(t, err)
	_, err = call(t, turn, tools, "load_skill", `{"name":"pdf-forms"}`)
	msg, forModel := toolset.ErrorText(err)
	require.True(t, forModel, "%v", err)
	assert.Contains(t, msg, "the tool server is down")
	assert.False(t, run.Marked("skill:pdf-forms"))

	broken.Delete("x")
	_, err = call(t, turn, tools, "load_skill", `{"name":"pdf-forms"}`)
	require.NoError(t, err)
	broken.Store("x", true)
	_, err = toolset.BuildTools(run.Turn(ctx), "a", skills)
	assert.ErrorContains(t, err, `skill "pdf-forms": its tools:`)
}

func TestReadSkillFile(t *testing.T) {
	ctx := context.Background()
	skills, err := skill.NewToolset(formsSkill(t))
	require.NoError(t, err)
	run := toolset.NewRun(t.Name())
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, "a", skills)
	require.NoError(t, err)

	text, err := call(t, turn, tools, "read_skill_file", `{"skill":"pdf-forms","path":"references/fields.md"}`)
	require.NoError(t, err)
	assert.Equal(t, "Every field is required.\n", text)

	res, err := tools.Execute(turn, toolset.ToolCall{Name: "read_skill_file", Args: json.RawMessage(`{"skill":"pdf-forms","path":"assets/logo.png"}`)})
	require.NoError(t, err)
	c, ok := res.(*toolset.Content)
	require.True(t, ok, "a binary file is a media part: %T", res)
	require.Len(t, c.Parts, 2)
	assert.Equal(t, "image/png", c.Parts[1].MIMEType)
	assert.Equal(t, []byte("\x89PNG\r\n\x1a\n\x00\x00\xff"), c.Parts[1].Data)

	for path, want := range map[string]string{
		"../SKILL.md":               "not a clean relative path",
		"references/../SKILL.md":    "not a clean relative path",
		"./references/fields.md":    "not a clean relative path",
		"/etc/passwd":               "not a clean relative path",
		"references//fields.md":     "not a clean relative path",
		`references\fields.md`:      "holds a backslash",
		"SKILL.md":                  "reads the files under references/ and assets/",
		"scripts/fill.py":           "reads the files under references/ and assets/",
		"references/missing.md":     `has no file "references/missing.md"; its files are: assets/logo.png, references/fields.md`,
		"references":                "reads the files under references/ and assets/",
		"references/fields.md\x00x": "control character",
		"":                          "not a clean relative path",
	} {
		args, _ := json.Marshal(map[string]string{"skill": "pdf-forms", "path": path})
		_, err := call(t, turn, tools, "read_skill_file", string(args))
		msg, forModel := toolset.ErrorText(err)
		assert.True(t, forModel, "%q: %v", path, err)
		assert.Contains(t, msg, want, path)
	}
	_, err = call(t, turn, tools, "read_skill_file", `{"skill":"nope","path":"references/fields.md"}`)
	msg, _ := toolset.ErrorText(err)
	assert.Equal(t, `no skill named "nope"; the skills are: pdf-forms`, msg)
}

func TestReadSkillFileBounds(t *testing.T) {
	fsys := pdfFS()
	fsys["references/big.md"] = &fstest.MapFile{Data: []byte(strings.Repeat("x", 2000))}
	sk, err := skill.FromFS(fsys, &skill.Options{MaxReadBytes: 1000})
	require.NoError(t, err)
	_, err = sk.ReadFile("references/big.md")
	msg, forModel := toolset.ErrorText(err)
	assert.True(t, forModel)
	assert.Equal(t, `"references/big.md" of skill "pdf-forms" is 2000 bytes, more than the 1000 read_skill_file returns`, msg)
	_, err = sk.ReadFile("references/fields.md")
	assert.NoError(t, err)
}

// TestReadSkillFileSwapped checks a skill directory changed after it was
// validated: a file replaced by a symlink, or grown past the bound, is
// refused, never followed.
func TestReadSkillFileSwapped(t *testing.T) {
	dir := writeDir(t, pdfFS())
	sk, err := skill.FromFS(os.DirFS(dir), &skill.Options{MaxReadBytes: 100})
	require.NoError(t, err)
	link := filepath.Join(dir, "references", "fields.md")
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("/etc/passwd", link))
	_, err = sk.ReadFile("references/fields.md")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no longer a regular file")

	grown := filepath.Join(dir, "assets", "logo.png")
	require.NoError(t, os.WriteFile(grown, []byte(strings.Repeat("x", 200)), 0o644))
	_, err = sk.ReadFile("assets/logo.png")
	assert.ErrorContains(t, err, "more than 100 bytes")
}
