package toolpkg

import (
	"log/slog"
)

// Diagnosis says how a store opened with the same options would run tools
// on this machine: in which sandbox mode and why, what that mode cannot
// enforce here, and with which Python interpreter. `toolset doctor`
// prints it.
type Diagnosis struct {
	// Sandbox is the mode tools would run in, and SandboxReason why the
	// automatic choice made it (empty for a mode that was asked for).
	Sandbox       Mode
	SandboxReason string
	// SandboxErr is why the mode asked for does not work here; then
	// Sandbox is empty.
	SandboxErr error
	// Gaps are what the mode cannot enforce on this machine.
	Gaps []string
	// ToolUser is the uid tools run as, or -1 for this process's user.
	ToolUser int

	// Python is the interpreter Python tools would run with (its real
	// executable), PythonFrom where its name came from ("Options.Python",
	// "$TOOLSET_PYTHON", "$SAM_STR_PYTHON", or "" for python3 on PATH),
	// and PythonNote what was done about an interpreter out of the tool
	// user's reach.
	Python, PythonFrom, PythonNote string
	// PythonErr is why no interpreter can run Python tools; packages of
	// other runtimes are not affected.
	PythonErr error
}

// Diagnose finds out how a store opened with opts would run tools here,
// without opening one: it starts a sandbox as the mode's probe does, and
// asks the interpreter where it lives. A nil opts means the defaults.
func Diagnose(opts *Options) Diagnosis {
	var o Options
	if opts != nil {
		o = *opts
	}
	d := Diagnosis{ToolUser: -1}
	mode := o.Sandbox
	sb, err := newSandbox(mode, slog.New(slog.DiscardHandler))
	if err != nil {
		d.SandboxErr = err
		return d
	}
	d.Sandbox, d.Gaps = sb.mode, sb.gaps()
	if mode == ModeAuto {
		d.SandboxReason = detectWhy
	}
	if sb.runAs != nil {
		d.ToolUser = int(sb.runAs.Uid)
	}
	_, d.PythonFrom = o.pythonName()
	in, note, err := findPython(&o, sb)
	d.PythonNote, d.PythonErr = note, err
	if in != nil {
		d.Python = in.exe
	}
	return d
}
