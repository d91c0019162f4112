// Package skill offers agent skills to a model: directories in the
// agentskills.io format, as the platform this project follows attaches
// them to agents.
//
// A skill is a directory (any [fs.FS]):
//
//	pdf-forms/
//	  SKILL.md          front matter (name, description, ...), then Markdown instructions
//	  references/       files the model reads on demand
//	  assets/           templates, images, data, read on demand too
//	  tools/            optional bundled tools: a toolset package (manifest.yaml
//	                    and its executables), as package toolpkg runs them
//
// SKILL.md begins with YAML front matter between two "---" lines:
//
//	---
//	name: pdf-forms               # required: lowercase letters, digits, single hyphens; at most 64
//	description: Fill PDF forms.  # required: not blank, at most 1,024 characters
//	license: MIT                  # optional
//	compatibility: needs network  # optional, at most 500 characters
//	metadata: {author: ops}       # optional, text by key
//	allowed-tools: Read Bash      # optional, recorded, not enforced
//	---
//	# Filling forms
//	...
//
// [FromFS] and [FromZip] read and validate a skill, reporting every
// problem at once in a [*ValidationError]: SKILL.md ([ParseSkillFile]:
// bounded, UTF-8, no YAML anchors or aliases, duplicate fields refused,
// unknown ones warned about), the files (bounded in number and size,
// counted while read; clean relative paths; no symlinks or special files)
// and tools/, validated as a toolset package is ([toolpkg.ValidateZip]).
// Nothing a skill names is followed: neither links in its Markdown nor
// paths outside it.
//
// # Offering skills
//
// [NewToolset] offers skills to the model in three steps, as the platform
// does (progressive disclosure):
//
//  1. load_skill's description lists every skill's name and description;
//  2. a call of load_skill returns the skill's instructions ([Loaded]),
//     the files it may read, and the names of its tools, which the run's
//     turns offer from then on, named <skill>__<tool>;
//  3. read_skill_file returns a file under a skill's references/ or
//     assets/ (text as it is, other files as a media part), at most
//     [Options.MaxReadBytes], by its exact path in the skill: no "..", no
//     absolute path, nothing outside references/ and assets/, no symlink.
//
// What a run loaded is the run's own ([toolset.RunContext.Mark]): one
// Toolset serves every run at once, a run that has not loaded a skill
// cannot call its tools by any name (they are not in its turns), and a
// run resumed from a [toolset.RunStore] keeps the skills it loaded.
// Loading a skill again returns its instructions again. Both tools need a
// run (toolset.NewRun); their errors that the model can act on (an
// unknown skill, a bad path) are model errors.
//
// A skill's tools are either Go tools of the program, given with
// [Skill.WithTools], or its bundled tools, run by a [toolpkg.Store] as
// the toolset named after the skill: [Install] uploads them and waits for
// their discovery; [Skill.WithPackage] uses those a store already has.
//
//	sk, err := skill.FromFS(os.DirFS("skills/pdf-forms"), &skill.Options{Name: "pdf-forms"})
//	if err != nil {
//		return err // a *skill.ValidationError: every problem at once
//	}
//	sk, _, err = skill.Install(ctx, store, sk, toolpkg.Config{})
//	if err != nil {
//		return err
//	}
//	skills, err := skill.NewToolset(sk)
//	...
//	tools, err := toolset.BuildTools(run.Turn(ctx), "assistant", skills, others)
package skill
