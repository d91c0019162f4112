package skill_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing/fstest"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg/skill"
)

// A skill declared in the program, with a Go tool, offered to a run: the
// model loads it, and its tool is callable from the next turn.
func Example() {
	ctx := context.Background()
	fsys := fstest.MapFS{ // os.DirFS("skills/release-notes"), or an embed.FS
		"SKILL.md": {Data: []byte(`---
name: release-notes
description: Write release notes. Use when asked for a changelog.
---
List the merged changes, newest first. See references/style.md.
`)},
		"references/style.md": {Data: []byte("One line per change.\n")},
	}
	sk, err := skill.FromFS(fsys, &skill.Options{Name: "release-notes"})
	if err != nil {
		fmt.Println(err)
		return
	}
	merged := toolset.NewTool("merged", "List merged changes.", func(context.Context, struct{}) ([]string, error) {
		return []string{"fix login", "add export"}, nil
	})
	skills, err := skill.NewToolset(sk.WithTools(toolset.NewFunction(merged)))
	if err != nil {
		fmt.Println(err)
		return
	}

	run := toolset.NewRun("req-1")
	defer run.End()
	execute := func(turn context.Context, tools *toolset.ToolList, name, args string) {
		res, err := tools.Execute(turn, toolset.ToolCall{ID: "1", Name: name, Args: json.RawMessage(args)})
		if msg, ok := toolset.ErrorText(err); ok {
			fmt.Println("error for the model:", msg)
			return
		}
		text, _ := toolset.ResultText(res)
		fmt.Print(text, "\n---\n")
	}

	turn := run.Turn(ctx)
	tools, _ := toolset.BuildTools(turn, "writer", skills)
	fmt.Println(tools.Names())
	execute(turn, tools, "load_skill", `{"name":"release-notes"}`)

	turn = run.Turn(ctx)
	tools, _ = toolset.BuildTools(turn, "writer", skills)
	fmt.Println(tools.Names())
	execute(turn, tools, "release-notes__merged", `{}`)
	execute(turn, tools, "read_skill_file", `{"skill":"release-notes","path":"../SKILL.md"}`)
	// Output:
	// [load_skill read_skill_file]
	// Skill "release-notes" is loaded. Follow its instructions:
	//
	// List the merged changes, newest first. See references/style.md.
	//
	// Files of the skill, read with read_skill_file when you need them:
	// - references/style.md (21 bytes)
	//
	// Tools of the skill, available from your next step: release-notes__merged
	//
	// ---
	// [load_skill read_skill_file release-notes__merged]
	// ["fix login","add export"]
	// ---
	// error for the model: "../SKILL.md" is not a path of skill "release-notes" (not a clean relative path): give a path as load_skill listed it, such as "references/style.md"
}

// FromZip reads a skill uploaded as a zip of its directory; every
// problem is reported at once.
func ExampleFromZip() {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, text := range map[string]string{
		"notes/SKILL.md":         "---\nname: Notes\n---\n",
		"notes/../../etc/passwd": "x",
		"notes/references/a.md":  "a",
	} {
		w, _ := zw.Create(name)
		w.Write([]byte(text))
	}
	zw.Close()
	_, err := skill.FromZip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), &skill.Options{Name: "notes"})
	fmt.Println(err)
	// Output:
	// skill: invalid skill (1 problem):
	//   - "notes/../../etc/passwd": ".." escapes the package
}
