package agentfile_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/platform/agentfile"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

// glossary is a skill with a reference file.
func glossary(t *testing.T) *skill.Skill {
	t.Helper()
	sk, err := skill.FromFS(fstest.MapFS{
		"SKILL.md":            {Data: []byte("---\nname: glossary\ndescription: The team's words.\n---\nLook words up in the reference.\n")},
		"references/words.md": {Data: []byte("SLA: service level agreement\n")},
	}, &skill.Options{Name: "glossary"})
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

const skilledFile = "name: support\ntoolsets: [{local: faq}]\nskills: [glossary]\n"

// An agent file's attached skills come from the program's SkillSource:
// Resolve appends the toolset that offers them, after the file's own.
func TestResolveAppendsTheSkillToolset(t *testing.T) {
	var asked []string
	a := resolve(t, skilledFile, &agentfile.Options{
		Local: registry(nil),
		SkillSource: func(_ context.Context, name string) (*skill.Skill, error) {
			asked = append(asked, name)
			return glossary(t), nil
		},
	})
	if len(asked) != 1 || asked[0] != "glossary" {
		t.Fatalf("SkillSource was asked for %v", asked)
	}
	if n := len(a.Toolsets); n != 2 {
		t.Fatalf("%d toolsets, want the file's and the skills'", n)
	}
	if _, ok := a.Toolsets[1].(*skill.Toolset); !ok {
		t.Fatalf("the last toolset is a %T, not the skills'", a.Toolsets[1])
	}
	ctx := context.Background()
	run := toolset.NewRun(t.Name())
	defer run.End()
	turn := run.Turn(ctx)
	tools, err := toolset.BuildTools(turn, a.Name, a.Toolsets...)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tools.Names(), ","); got != "answer,load_skill,read_skill_file" {
		t.Fatalf("tools %s", got)
	}
	call := func(name, args string) string {
		t.Helper()
		res, err := tools.Execute(turn, toolset.ToolCall{ID: name, Name: name, Args: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		text, err := toolset.ResultText(res)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	if text := call("load_skill", `{"name":"glossary"}`); !strings.Contains(text, "Look words up in the reference.") || !strings.Contains(text, "references/words.md") {
		t.Errorf("load_skill: %s", text)
	}
	if text := call("read_skill_file", `{"skill":"glossary","path":"references/words.md"}`); !strings.Contains(text, "service level agreement") {
		t.Errorf("read_skill_file: %s", text)
	}
}

// A skill the program cannot give is a problem naming it, whatever the
// way it fails; a file without attached skills needs no SkillSource.
func TestResolveSkillProblems(t *testing.T) {
	cases := map[string]struct {
		src  func(context.Context, string) (*skill.Skill, error)
		want string
	}{
		"no source": {nil, `skill "glossary" is attached, but this program gives no skills`},
		"an error": {func(context.Context, string) (*skill.Skill, error) {
			return nil, errors.New("not on this disk")
		}, `skill "glossary": not on this disk`},
		"a panic": {func(context.Context, string) (*skill.Skill, error) {
			panic("boom")
		}, `skill "glossary": the program's SkillSource panicked: boom`},
		"nil": {func(context.Context, string) (*skill.Skill, error) {
			return nil, nil
		}, `skill "glossary": the program's SkillSource gave no skill`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := agentfile.Parse([]byte(skilledFile), "agent.yaml")
			if err != nil {
				t.Fatal(err)
			}
			a, err := f.Resolve(context.Background(), &agentfile.Options{Local: registry(nil), SkillSource: c.src})
			var ce *agentfile.CheckError
			if !errors.As(err, &ce) || a != nil {
				t.Fatalf("Resolve: %v, %v", a, err)
			}
			if len(ce.Problems) != 1 || !strings.Contains(ce.Problems[0].Message, c.want) || ce.Problems[0].Line != 3 {
				t.Fatalf("problems %+v, want one at line 3 with %q", ce.Problems, c.want)
			}
		})
	}
	t.Run("another skill", func(t *testing.T) {
		other, err := skill.FromFS(fstest.MapFS{"SKILL.md": {Data: []byte("---\nname: other\ndescription: x\n---\nx\n")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := agentfile.Parse([]byte(skilledFile), "agent.yaml")
		_, err = f.Resolve(context.Background(), &agentfile.Options{Local: registry(nil),
			SkillSource: func(context.Context, string) (*skill.Skill, error) { return other, nil }})
		if err == nil || !strings.Contains(err.Error(), `gave skill "other"`) {
			t.Fatalf("Resolve: %v", err)
		}
	})
	a := resolve(t, "name: support\ntoolsets: [{local: faq}]\n", &agentfile.Options{Local: registry(nil)})
	if len(a.Toolsets) != 1 {
		t.Fatalf("%d toolsets", len(a.Toolsets))
	}
}
