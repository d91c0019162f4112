package skill

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/gotoolset/toolset"
)

// Bounds of a skills toolset.
const (
	// MaxSkills bounds the skills of one [Toolset].
	MaxSkills = 64
	// MaxListingBytes bounds load_skill's description, which lists every
	// skill's name and description.
	MaxListingBytes = 32 << 10
)

// The names of the tools a [Toolset] offers.
const (
	LoadToolName = "load_skill"
	ReadToolName = "read_skill_file"
)

// markPrefix begins the run marks (toolset.RunContext.Mark) of loaded
// skills.
const markPrefix = "skill:"

// Toolset offers skills to the model as the platform does, in three
// steps: the load_skill tool's description lists each skill's name and
// description; a call of load_skill returns the skill's instructions and
// the files it may read, and from the run's next turn on its tools are
// offered too, named <skill>__<tool>; read_skill_file returns a file
// under a skill's references/ or assets/.
//
// What a run loaded is kept in the run ([toolset.RunContext.Mark]), so
// one Toolset serves every run at once, and a run resumed from a
// [toolset.RunStore] keeps its loaded skills. A skill's tools cannot be
// called by a run that has not loaded it: they are not in its turns. Make
// one with [NewToolset].
type Toolset struct {
	skills []*Skill
	byName map[string]*Skill
	load   toolset.Tool
	read   toolset.Tool
}

// LoadArgs are the arguments of load_skill.
type LoadArgs struct {
	// Name is the skill to load.
	Name string `json:"name" jsonschema:"The name of the skill to load, as listed"`
}

// ReadArgs are the arguments of read_skill_file.
type ReadArgs struct {
	// Skill is the skill whose file to read.
	Skill string `json:"skill" jsonschema:"The name of the skill"`
	// Path is the file's path in the skill, as load_skill listed it.
	Path string `json:"path" jsonschema:"The file's path in the skill, as load_skill listed it, such as references/guide.md"`
}

// Loaded is what load_skill returns: the model reads its [Loaded.ModelText].
type Loaded struct {
	// Name is the skill's name.
	Name string `json:"name"`
	// Instructions are the skill's body.
	Instructions string `json:"instructions"`
	// Files are the files read_skill_file reads.
	Files []File `json:"files,omitempty"`
	// Tools are the names of the skill's tools, callable from the next
	// turn on.
	Tools []string `json:"tools,omitempty"`
	// Again is true when the run had loaded the skill before.
	Again bool `json:"again,omitempty"`
}

// ModelText renders the loaded skill for the model: a line saying so, the
// instructions, its files and its tools.
func (l *Loaded) ModelText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %q is loaded", l.Name)
	if l.Again {
		b.WriteString(" (it already was)")
	}
	b.WriteString(". Follow its instructions:\n\n")
	b.WriteString(l.Instructions)
	if !strings.HasSuffix(l.Instructions, "\n") {
		b.WriteString("\n")
	}
	if len(l.Files) > 0 {
		fmt.Fprintf(&b, "\nFiles of the skill, read with %s when you need them:\n", ReadToolName)
		for _, f := range l.Files {
			fmt.Fprintf(&b, "- %s (%d bytes)\n", f.Path, f.Size)
		}
	}
	if len(l.Tools) > 0 {
		fmt.Fprintf(&b, "\nTools of the skill, available from your next step: %s\n", strings.Join(l.Tools, ", "))
	}
	return b.String()
}

// NewToolset returns the toolset that offers skills, in the order given
// (load_skill lists them so). It fails for no skill, a nil one, two of
// one name, more than [MaxSkills], and a listing of more than
// [MaxListingBytes].
func NewToolset(skills ...*Skill) (*Toolset, error) {
	if len(skills) == 0 {
		return nil, errors.New("skill: NewToolset: no skills")
	}
	if len(skills) > MaxSkills {
		return nil, fmt.Errorf("skill: NewToolset: %d skills; at most %d are allowed in one toolset", len(skills), MaxSkills)
	}
	t := &Toolset{byName: make(map[string]*Skill, len(skills))}
	var errs []error
	for i, s := range skills {
		switch {
		case s == nil:
			errs = append(errs, fmt.Errorf("skills[%d] is nil", i))
		case s.fm.Name == "":
			errs = append(errs, fmt.Errorf("skills[%d] was not made by FromFS or FromZip", i))
		case t.byName[s.fm.Name] != nil:
			errs = append(errs, fmt.Errorf("skills[%d]: a second skill named %q", i, s.fm.Name))
		default:
			t.byName[s.fm.Name] = s
			t.skills = append(t.skills, s)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("skill: NewToolset: %w", errors.Join(errs...))
	}
	var listing strings.Builder
	listing.WriteString("Load a skill: its instructions for a kind of task, the files it may read and the tools it brings. Load one when the task matches its description. The skills:\n")
	for _, s := range t.skills {
		fmt.Fprintf(&listing, "- %s: %s\n", s.fm.Name, oneLine(s.fm.Description))
	}
	if listing.Len() > MaxListingBytes {
		return nil, fmt.Errorf("skill: NewToolset: the skills' names and descriptions take %d bytes; at most %d fit load_skill's description", listing.Len(), MaxListingBytes)
	}
	t.load = toolset.NewTool(LoadToolName, listing.String(), t.loadSkill)
	t.read = toolset.NewTool(ReadToolName,
		"Read a file of a skill, under its references/ or assets/, by the path load_skill listed.",
		t.readFile)
	return t, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Label implements [toolset.Labeler].
func (t *Toolset) Label() string { return "skills" }

// Skills returns the toolset's skills, in order.
func (t *Toolset) Skills() []*Skill { return append([]*Skill(nil), t.skills...) }

// GetTools implements [toolset.Toolset]: load_skill, read_skill_file, then
// the tools of each skill the run of ctx has loaded, in the order of the
// skills. A skill's tools that fail to list fail the turn, naming it.
func (t *Toolset) GetTools(ctx context.Context) ([]toolset.Tool, error) {
	if t == nil {
		return nil, errors.New("skill: nil *Toolset")
	}
	rc := toolset.FromContext(ctx)
	out := []toolset.Tool{t.load, t.read}
	var errs []error
	for _, s := range t.skills {
		if s.tools == nil || !rc.Marked(markPrefix+s.fm.Name) {
			continue
		}
		tools, err := s.tools.GetTools(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("skill %q: its tools: %w", s.fm.Name, err))
			continue
		}
		out = append(out, tools...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func (t *Toolset) lookup(name string) (*Skill, error) {
	if s := t.byName[name]; s != nil {
		return s, nil
	}
	names := make([]string, len(t.skills))
	for i, s := range t.skills {
		names[i] = s.fm.Name
	}
	return nil, toolset.ModelErrorf("no skill named %q; the skills are: %s", quoted(name), strings.Join(names, ", "))
}

func (t *Toolset) loadSkill(ctx context.Context, in LoadArgs) (*Loaded, error) {
	s, err := t.lookup(in.Name)
	if err != nil {
		return nil, err
	}
	rc := toolset.FromContext(ctx)
	if rc == nil {
		return nil, errors.New("load_skill needs a run (toolset.NewRun) to remember the skills it loads")
	}
	res := &Loaded{Name: s.fm.Name, Instructions: s.body, Files: s.Readable(), Again: rc.Marked(markPrefix + s.fm.Name)}
	if s.tools != nil {
		tools, err := s.tools.GetTools(ctx)
		if err != nil {
			return nil, toolset.ModelErrorf("skill %q cannot be loaded now: its tools are unavailable (%v); go on without it", s.fm.Name, err)
		}
		for _, tl := range tools {
			res.Tools = append(res.Tools, tl.Name)
		}
	}
	if err := rc.Mark(markPrefix + s.fm.Name); err != nil {
		return nil, err
	}
	return res, nil
}

func (t *Toolset) readFile(_ context.Context, in ReadArgs) (any, error) {
	s, err := t.lookup(in.Skill)
	if err != nil {
		return nil, err
	}
	data, err := s.ReadFile(in.Path)
	if err != nil {
		return nil, err
	}
	if utf8.Valid(data) {
		return string(data), nil
	}
	mt := mime.TypeByExtension(path.Ext(in.Path))
	if mt == "" {
		mt = http.DetectContentType(data)
	}
	return &toolset.Content{Parts: []toolset.Part{
		{Text: fmt.Sprintf("%s of skill %q, %d bytes of %s:", in.Path, s.fm.Name, len(data), mt)},
		{MIMEType: mt, Data: data},
	}}, nil
}
