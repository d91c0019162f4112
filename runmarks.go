package toolset

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Bounds of a run's marks; see [RunContext.Mark].
const (
	// MaxMarkBytes bounds the name of a mark.
	MaxMarkBytes = 256
	// MaxMarks bounds how many marks a run holds.
	MaxMarks = 1024
)

// Mark records name in the run, for [RunContext.Marked] to report until
// the run ends: a fact of this run that a toolset of the application keeps
// and decides its tools by, as package toolpkg/skill records each skill
// the model loaded. It is the run's own bookkeeping, like the reveals of
// a tool search: other runs, child runs included, never see it, and a run
// made with [ResumeRun] saves its marks with its state (in "marks") and
// gets them back when resumed. Marking twice is marking once. Begin the
// names with your package's name ("skill:pdf") so that two integrations
// do not meet.
//
// Mark fails for a nil run, a run that cannot be used or has ended, a
// name that is empty, longer than [MaxMarkBytes] or not UTF-8, and a
// run that already holds [MaxMarks] marks.
func (rc *RunContext) Mark(name string) error {
	if err := checkMark(name); err != nil {
		return fmt.Errorf("toolset: mark %q: %w", boundName(name), err)
	}
	if rc == nil {
		return fmt.Errorf("toolset: mark %q: no run: make one with NewRun", boundName(name))
	}
	if err := rc.Err(); err != nil {
		return err
	}
	s := rc.state()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Load() {
		return fmt.Errorf("toolset: run %q: mark %q: %w", boundName(s.id), boundName(name), ErrRunEnded)
	}
	p := &s.parts.marks
	if _, ok := p.set[name]; ok {
		return nil
	}
	if len(p.set) >= MaxMarks {
		return fmt.Errorf("toolset: run %q: mark %q: the run holds %d marks, the most it may", boundName(s.id), boundName(name), MaxMarks)
	}
	if p.set == nil {
		p.set = make(map[string]struct{})
	}
	p.set[name] = struct{}{}
	s.markDirty()
	return nil
}

// Marked reports whether name was marked in the run ([RunContext.Mark]).
// It reports false on a nil run and on one that has ended.
func (rc *RunContext) Marked(name string) bool {
	s := rc.state()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.parts.marks.set[name]
	return ok
}

func checkMark(name string) error {
	switch {
	case name == "":
		return errors.New("a mark needs a name")
	case len(name) > MaxMarkBytes:
		return fmt.Errorf("%d bytes, more than the %d a mark may have", len(name), MaxMarkBytes)
	case !utf8.ValidString(name):
		return errors.New("not UTF-8")
	}
	return nil
}

// markPart is the run's marks. Its section of the saved state lists
// them, sorted:
//
//	"marks": ["skill:pdf"]
type markPart struct {
	set map[string]struct{}
}

func (*markPart) key() string { return "marks" }

func (p *markPart) save(saving) any {
	if len(p.set) == 0 {
		return nil
	}
	out := make([]string, 0, len(p.set))
	for m := range p.set {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// restore checks the marks of a saved state and keeps them.
func (*markPart) section() any { return new([]string) }

func (p *markPart) restore(v any, _ *restoring) error {
	saved := *v.(*[]string)
	if len(saved) > MaxMarks {
		return fmt.Errorf("marks: %d, more than the %d a run holds", len(saved), MaxMarks)
	}
	var set map[string]struct{}
	for i, m := range saved {
		if err := checkMark(m); err != nil {
			return fmt.Errorf("marks[%d]: %v", i, err)
		}
		if _, dup := set[m]; dup {
			return fmt.Errorf("marks[%d]: %q is listed twice", i, boundName(m))
		}
		if set == nil {
			set = make(map[string]struct{}, len(saved))
		}
		set[m] = struct{}{}
	}
	p.set = set
	return nil
}
