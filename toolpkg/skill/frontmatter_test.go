package skill_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotoolset/toolset/toolpkg/skill"
)

func TestParseSkillFile(t *testing.T) {
	fm, body, err := skill.ParseSkillFile([]byte(`---
name: pdf-forms
description: >
  Fill PDF forms. Use when the user
  gives a form to fill.
license: MIT
compatibility: needs poppler
metadata:
  author: ops
  version: 1.2
allowed-tools: Read Bash(git:*)
user-invocable: true
---

# Filling forms

Step one.
`), 0)
	require.NoError(t, err)
	assert.Equal(t, "pdf-forms", fm.Name)
	assert.Equal(t, "Fill PDF forms. Use when the user gives a form to fill.\n", fm.Description)
	assert.Equal(t, "MIT", fm.License)
	assert.Equal(t, "needs poppler", fm.Compatibility)
	assert.Equal(t, map[string]string{"author": "ops", "version": "1.2"}, fm.Metadata)
	assert.Equal(t, []string{"Read", "Bash(git:*)"}, fm.AllowedTools)
	require.Len(t, fm.Warnings, 1)
	assert.Equal(t, "user-invocable: unknown field, ignored; known fields: name, description, license, compatibility, metadata, allowed-tools (line 12)", fm.Warnings[0].String())
	assert.Equal(t, "# Filling forms\n\nStep one.\n", body)
}

func TestParseSkillFileForms(t *testing.T) {
	for name, text := range map[string]string{
		"crlf":         "---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n",
		"bom":          "\ufeff---\nname: a\ndescription: d\n---\nbody",
		"dots":         "---\nname: a\ndescription: d\n...\nbody",
		"list tools":   "---\nname: a\ndescription: d\nallowed-tools: [Read, Write]\n---\nbody",
		"no body":      "---\nname: a\ndescription: d\n---",
		"quoted names": "---\n\"name\": 'a'\ndescription: \"d\"\n---\nbody",
	} {
		t.Run(name, func(t *testing.T) {
			fm, _, err := skill.ParseSkillFile([]byte(text), 0)
			require.NoError(t, err)
			assert.Equal(t, "a", fm.Name)
			assert.Equal(t, "d", fm.Description)
		})
	}
}

// TestParseSkillFileHostile checks that every kind of bad SKILL.md is a
// *FrontMatterError that says what is wrong, and where.
func TestParseSkillFileHostile(t *testing.T) {
	bomb := "---\nname: a\ndescription: d\nmetadata:\n  a: &a [x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n---\n"
	tests := []struct {
		name, text string
		want       []string
	}{
		{"no front matter", "# Title\n", []string{"no front matter"}},
		{"unterminated", "---\nname: a\ndescription: d\n", []string{"no front matter"}},
		{"empty", "---\n---\n", []string{"empty"}},
		{"not a map", "---\n- a\n- b\n---\n", []string{"must be a map"}},
		{"missing fields", "---\nlicense: MIT\n---\n", []string{"name: required", "description: required"}},
		{"bad yaml", "---\nname: [a\n---\n", []string{"not valid YAML"}},
		{"bad names", "---\nname: PDF_Forms\ndescription: d\n---\n", []string{"name: invalid name \"PDF_Forms\"", "(line 2)"}},
		{"double hyphen", "---\nname: a--b\ndescription: d\n---\n", []string{"invalid name"}},
		{"leading hyphen", "---\nname: -a\ndescription: d\n---\n", []string{"invalid name"}},
		{"long name", "---\nname: " + strings.Repeat("a", 65) + "\ndescription: d\n---\n", []string{"65 characters; at most 64"}},
		{"null name", "---\nname:\ndescription: d\n---\n", []string{"name: expected text, got nothing (null)"}},
		{"list name", "---\nname: [a]\ndescription: d\n---\n", []string{"name: expected text, got a list"}},
		{"blank description", "---\nname: a\ndescription: \"  \"\n---\n", []string{"description: blank"}},
		{"long description", "---\nname: a\ndescription: " + strings.Repeat("é", 1025) + "\n---\n", []string{"1025 characters; at most 1024"}},
		{"long compatibility", "---\nname: a\ndescription: d\ncompatibility: " + strings.Repeat("x", 501) + "\n---\n", []string{"compatibility: 501 characters"}},
		{"duplicate", "---\nname: a\nname: b\ndescription: d\n---\n", []string{"name: duplicate field (line 3)"}},
		{"metadata not map", "---\nname: a\ndescription: d\nmetadata: [x]\n---\n", []string{"metadata: expected a map"}},
		{"metadata nested", "---\nname: a\ndescription: d\nmetadata:\n  k: {x: 1}\n---\n", []string{`metadata.k: expected text, got a map`}},
		{"metadata duplicate", "---\nname: a\ndescription: d\nmetadata:\n  k: x\n  k: y\n---\n", []string{`metadata.k: duplicate key`}},
		{"allowed-tools map", "---\nname: a\ndescription: d\nallowed-tools: {a: b}\n---\n", []string{"allowed-tools: expected space-separated"}},
		{"alias bomb", bomb, []string{"anchors and aliases are not allowed"}},
		{"merge key", "---\nbase: &b {name: a}\n<<: *b\ndescription: d\n---\n", []string{"anchors and aliases"}},
		{"not utf-8", "---\nname: a\ndescription: \xff\n---\n", []string{"not UTF-8"}},
		{"huge", "---\nname: a\ndescription: d\n---\n" + strings.Repeat("x", skill.DefaultMaxSkillFileBytes), []string{"at most 131072 are allowed"}},
		{"huge front matter", "---\nname: a\ndescription: d\nlicense: " + strings.Repeat("x", skill.MaxFrontMatterBytes) + "\n---\n", []string{"the front matter is"}},
		{"deep", "---\nname: a\ndescription: d\nmetadata: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n---\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := skill.ParseSkillFile([]byte(tt.text), 0)
			var fe *skill.FrontMatterError
			require.True(t, errors.As(err, &fe), "%v", err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseSkillFileManyProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\nname: A\ndescription: d\nmetadata:\n")
	for i := range 60 {
		b.WriteString("  k" + strings.Repeat("x", i) + ": [1]\n")
	}
	b.WriteString("---\n")
	_, _, err := skill.ParseSkillFile([]byte(b.String()), 0)
	var fe *skill.FrontMatterError
	require.True(t, errors.As(err, &fe))
	assert.Len(t, fe.Problems, 61, "every problem at once: the name and each metadata entry")
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "pdf-forms", "a1-b2", strings.Repeat("a", 64)} {
		assert.NoError(t, skill.CheckName(ok), ok)
	}
	for _, bad := range []string{"", "A", "a_b", "a--b", "-a", "a-", "a b", "é", strings.Repeat("a", 65), "a__b"} {
		assert.Error(t, skill.CheckName(bad), bad)
	}
}
