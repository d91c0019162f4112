package toolpkg

import (
	"log/slog"
	"time"

	"github.com/gotoolset/toolset"
)

// Defaults of the store's options.
const (
	DefaultDiscoveryTimeout     = 30 * time.Second
	DefaultMaxOutputBytes       = 102400
	DefaultMaxParallelDiscovery = 4
)

// Options configure a [Store]. The zero value is ready to use.
type Options struct {
	// Limits bound the packages the store accepts.
	Limits Limits
	// Sandbox is how tools are isolated; the default, ModeAuto, picks the
	// strongest mode that works on this machine.
	Sandbox Mode
	// DiscoveryTimeout bounds each "<executable> --schema" (default 30 s).
	DiscoveryTimeout time.Duration
	// MaxParallelDiscovery is how many toolsets discover at once (default
	// DefaultMaxParallelDiscovery); the others wait, pending, for a turn.
	MaxParallelDiscovery int
	// MaxOutputBytes caps the text of a result, or of a tool's error, that
	// reaches the model (default 102,400 bytes). It is the budget of all
	// of a result a model or client is sent: the text and inline parts
	// together, and apart the structured result as JSON (see the package
	// documentation, Artifacts).
	MaxOutputBytes int
	// Logger receives the store's logs (default slog.Default()). Secret
	// configuration values never reach it.
	Logger *slog.Logger
	// Artifacts configure the artifacts calls read and write, and what
	// the model sees of a result (nil: the defaults, SAM's thresholds).
	Artifacts *ArtifactOptions

	// Python is the interpreter Python tools run with: a path, or a
	// command looked up on PATH. Default: the TOOLSET_PYTHON environment
	// variable ([PythonEnv]), else SAM_STR_PYTHON, else python3, or
	// /usr/bin/python3 when the python3 on PATH is out of reach of the
	// user tools run as (a warning says so once). A wrapper (a pyenv
	// shim) is seen through:
	// the store asks the interpreter for its sys.executable and
	// sys.prefix once, runs the former, and under bwrap shows the
	// latter read-only at the same path.
	Python string
	// PythonPath is put on a Python tool's PYTHONPATH after
	// <package>/python. Under bwrap its directories must be inside the
	// sandbox's system directories (/usr, ...).
	PythonPath []string
	// StrictManifest refuses a manifest with unknown keys or without
	// version or runtime, instead of warning (see [ParseManifestStrict]).
	StrictManifest bool
	// KillGrace is how long a tool has, between the SIGTERM sent at its
	// timeout (or when its call is canceled) and the SIGKILL that ends
	// it, to clean up and write its result (default
	// DefaultKillGrace; negative: no grace, SIGKILL at once).
	KillGrace time.Duration
	// Scratch says which tools get a persistent scratch directory of
	// their toolset (default ScratchDefault: those of the standard and
	// permissive profiles).
	Scratch ScratchPolicy
	// LLM answers the llm/call requests tools send over their IPC
	// socket (runner_args.json's ipc_socket). Without it ipc_socket is
	// empty, and the platform's SDKs tell the tool that LLM calls are
	// not available.
	LLM LLMFunc
	// Trace, when set, gives each tool the trace context of its call
	// (see [toolset.TracePropagator]): its W3C traceparent in the
	// TRACEPARENT environment variable and its tracestate, if any, in
	// TRACESTATE, in every sandbox mode. A field too long, or with a byte
	// outside printable ASCII, is left out. oteltoolset.Propagator makes
	// one from OpenTelemetry.
	Trace toolset.TracePropagator
}

// DefaultKillGrace is the default of Options.KillGrace.
const DefaultKillGrace = 3 * time.Second
