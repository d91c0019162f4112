// Package toolpkg loads packaged remote toolsets: zips that carry tools as
// executables (a static Go binary, or a Python console script with its
// dependencies extracted under python/) and a manifest.yaml at their root. The format,
// protocol and sandbox profiles follow a platform design in public use, so a
// package built for that platform loads here unchanged.
//
// A [Store] keeps packages in a directory. [Store.Upload] checks a zip's
// structure before anything is extracted ([ValidateZip]), extracts it
// atomically as the toolset's next version, and runs discovery
// ([Store.StartUpload] returns at once and discovers in the background):
// "<executable> --schema" for each executable, whose JSON output gives
// each tool's description, parameter schema, configuration schema and
// timeout. [Store.Toolset] returns a [toolset.Toolset] whose tools are
// named <toolset>__<tool>. Each call runs "<executable> runner_args.json"
// in a fresh work directory, in the sandbox, kills the process group at
// the timeout, and returns the tool's result ([*Result]) or its error
// ([*ToolFailure], which the model sees):
//
//	store, err := toolpkg.Open("/var/lib/toolsets", nil)
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	info, err := store.UploadFile(ctx, "weather", "weather.zip")
//	if err != nil {
//		return err // a *ValidationError: the zip was refused, nothing changed
//	}
//	if info.Status != toolpkg.StatusReady {
//		return fmt.Errorf("discovery failed: %v", info.Errors)
//	}
//	weather := store.Toolset("weather", map[string]any{"api_key": key})
//	tools, err := toolset.BuildTools(ctx, "assistant", weather, local)
//	if err != nil {
//		return err // a *ConfigError, say: a required key is missing
//	}
//	res, err := tools.Execute(ctx, toolset.ToolCall{Name: "weather__forecast", Args: json.RawMessage(`{"city": "Paris"}`)})
//
// [Pack] builds a package from a source directory, and [Build] and
// [ZipDir] build one from a source directory laid out for the reference
// platform (see Building packages); the command cmd/toolset wraps them and
// the rest for the command line. Package toolpkg/pkgtool makes tools
// written with the toolset library into a packaged tool executable.
//
// Settings are passed as a pointer to a struct, nil meaning the defaults
// (a zero field takes its default too), as log/slog's handlers take theirs:
// [Open] takes an *[Options], [Pack] a *[PackOptions], [ValidateZip] a
// *[Limits].
//
// # The package format
//
// A package is a zip with manifest.yaml at its root. Its structure is
// checked before anything is extracted ([ValidateZip], bounded by
// [Limits]; every problem is reported at once in a [*ValidationError]):
//
//   - the zip is at most [Limits.MaxZipBytes] (50 MB) and has at most
//     [Limits.MaxEntries] entries (10,000); its contents are at most
//     [Limits.MaxUncompressedBytes] (250 MB), counted while they are read,
//     whatever the zip's headers claim;
//   - every entry is a relative path inside the package: no absolute
//     path, no "..", no backslash, no NUL byte, no drive letter; no entry
//     appears twice, and none is inside an entry that is a file;
//   - entries are regular files and directories: no symlink, device,
//     pipe or socket;
//   - no .venv directory anywhere, no .whl file at the root: Python
//     dependencies are extracted into the package (pip install --target);
//   - manifest.yaml is present and valid, and each of its executables is
//     in the zip.
//
// Files are extracted read-only (0444; 0555 for the executables and for
// every entry with an execute bit).
//
// The manifest ([ParseManifest]) is at most 1 MB of YAML, read as the
// platform's documentation writes it: a duplicate key or a value of the
// wrong YAML type is an error, and every problem is reported in one
// [*ManifestError] naming its field and line (at most 100; YAML aliases
// cannot make checking costly: at most 100,000 map entries are walked);
// an unknown field is a warning naming its field and line
// ([Manifest.Warnings], [Info.Warnings], logged at upload), not an error.
// [ParseManifestStrict], and a store with [Options.StrictManifest],
// refuse unknown fields and require version and runtime:
//
//	version: 1                     # optional; only 1 exists (the default)
//	description: Weather tools     # optional, for people
//	tools:                         # required: at least one entry
//	  forecast:                    # key: ^[a-zA-Z0-9_-]{1,64}$
//	    executable: ./forecast     # required: a path inside the package
//	    runtime: go                # optional hint: go or python
//	    description: ...           # optional, for people
//	    tool_dir: src/forecast     # optional, a path inside the package
//	    schema_refresh_seconds: 60 # optional, kept, unused (see below)
//	    timeout_seconds: 60        # default 300
//	    sandbox_profile: standard  # restrictive, standard (default) or permissive
//	    resource_limits:           # default: the profile's
//	      max_cpu_seconds: 30
//	      max_file_size_mb: 64
//	      max_open_files: 256
//	      max_processes: 16
//	      max_stack_size_mb: 8
//	      max_write_mb: 128
//
// Each entry of tools is one executable ([Executable]); the tools it
// exposes come from its --schema output. Two entries may not name the
// same executable. An executable is looked up at its path, then at
// python/bin/<path>, whatever its runtime. The runtime is a packaging
// hint: what the file is ([Executable.Kind]) comes from the file itself
// (see Python tools). Descriptions shown to the model come from
// discovery; the manifest's, tool_dir and schema_refresh_seconds are kept
// as given ([Executable]), and a store discovers again at each upload,
// not on a timer. timeout_seconds is a positive number of seconds, at most
// [FormatMaxTimeoutSeconds] (30 days) and at most the store's
// [Limits.MaxTimeoutSeconds] (default 3,600); [DefaultTimeoutSeconds]
// when unset. Each resource limit is a positive integer, at most
// [FormatMaxLimit] (or [FormatMaxLimitMB] for the _mb ones) and at most
// the field of the store's [Limits.MaxResourceLimits] (default
// [DefaultMaxResourceLimits]); a manifest that asks more is refused, and a
// profile's default above the store's bound is lowered to it. The
// profiles' defaults ([Profile.Limits]):
//
//	             cpu s  file MB  open files  processes  stack MB  write MB
//	restrictive     60       64         128         32         8       128
//	standard       300      256         512        128        16       512
//	permissive     600     1024        1024        512        32      2048
//
// The restrictive profile also cuts the tool off the network (under bwrap
// only, see Sandbox); standard and permissive share the host's, and
// permissive shows the tool all of the host's /etc and /opt, read-only,
// under bwrap.
//
// # Python tools
//
// What an executable is, is found at upload by reading its first bytes:
//
//   - an ELF binary for this machine's OS and architecture runs as it is
//     ([KindNative]); a binary for another OS or architecture (ELF for
//     linux/arm64 on an amd64 host, FreeBSD, a Mach-O or PE binary) fails
//     discovery with an error naming its format and this runtime's
//     platform, and the GOOS and GOARCH to build it with;
//   - a script whose "#!" line names a Python interpreter (python,
//     python3, python3.12, directly or through env), or one without a
//     "#!" line that ends in .py or whose manifest says runtime: python, is
//     a Python tool ([KindPython]);
//   - any other script runs through its "#!" line ([KindScript]), which
//     must name an interpreter the sandbox shows (/bin/sh, say);
//   - anything else fails discovery.
//
// A Python tool is laid out as "pip install --target <out>/python" leaves
// it, and runs as the platform's runtime runs it: the interpreter is the
// store's ([Options.Python], else the SAM_STR_PYTHON environment
// variable, else python3 on PATH), never the script's "#!" line, which
// names the build machine's; PYTHONPATH is <package>/python, then
// [Options.PythonPath]; the interpreter runs with -s (no user site
// directory) and PYTHONNOUSERSITE=1, PYTHONUNBUFFERED=1. The store asks
// the interpreter once for its sys.executable and sys.prefix: a wrapper
// (a pyenv shim) is seen through, the real interpreter is run, and under
// bwrap its prefix (and base prefix), when outside /usr and the other
// system directories, is mounted read-only at its own path. The
// interpreter must be Python 3. When the host is root, tools run as
// [ToolUID] in the prlimit and bwrap modes, and bwrap itself resolves
// what it mounts as that user: an interpreter under a directory that user
// cannot search (pyenv's under /root, mode 0700) fails discovery with an
// error saying so; point [Options.Python] or SAM_STR_PYTHON at one it can
// reach (/usr/bin/python3, or a virtual environment made from it). Not
// supported: compiled extension modules built for another platform (the
// package must carry wheels' contents for this one), and a .venv/ in the
// package or a .whl at its root, which validation refuses.
//
// # The protocol
//
// A tool executable is run in two ways, always with its work directory
// as the current directory, standard input empty, and an environment of
// PATH (/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin),
// HOME (the work directory), TMPDIR, LANG=C.UTF-8 and
// PYTHONDONTWRITEBYTECODE=1 alone, with PYTHONPATH and the rest for a
// Python tool (see Python tools) and TOOLPKG_SCRATCH_DIR for one with a
// scratch directory, and TRACEPARENT and TRACESTATE for a call with a
// trace context (see Traces). The work directory holds empty input/ and output/
// directories, and for a call the status.pipe FIFO; it is removed when
// the process ends. Under
// bwrap the package appears at /toolset/pkg and the work directory at
// /toolset/work; in the other modes they keep their host paths.
//
// Discovery runs "<executable> --schema", once per executable at upload,
// under the executable's profile and limits, within
// [Options.DiscoveryTimeout] (30 seconds). A [Toolset] given
// configuration runs it again, once per version, as "<executable>
// --schema --config <work>/config.json", the file holding the
// executable's configuration (its tools' values, defaults applied) as a
// JSON object: a tool may then change its name, description,
// instructions, parameters and configuration schema (a SQL tool naming
// its database), and the configured tools are the ones listed and
// called (tool_name is the configured name). An executable that refuses
// --config as bad usage (exit code 1) keeps its plain discovery, with a
// warning; any other failure fails GetTools. It must exit 0 and print on standard output at most 8 MB of
// one JSON object:
//
//	{"tools": {"forecast": {
//	  "description": "Get the weather forecast for a city.",
//	  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
//	  "config_schema": [
//	    {"key": "units", "type": "string", "description": "metric or imperial", "default": "metric"},
//	    {"key": "api_key", "type": "string", "required": true, "secret": true}
//	  ],
//	  "timeout_seconds": 5
//	}}}
//
// The tools object maps each tool's name to its schema ([ToolInfo]): at
// least one, at most [MaxTools] in the package, each name matching
// ^[a-zA-Z0-9_-]{1,64}$, unique across the package's executables, and
// short enough that <toolset>__<name> has at most 64 characters. In each:
//
//   - description is required, not blank, at most [MaxDescriptionBytes];
//   - parameters is the JSON Schema of the arguments (default: an object
//     with no properties); its "type", if set, is "object"; it must
//     compile (draft 2020-12 unless it says otherwise) and reference
//     nothing outside itself (only "#..." references);
//   - config_schema lists the configuration keys the tool takes
//     ([ConfigField]), at most [MaxConfigFields]: key (required, at most
//     [MaxConfigKeyBytes], unique, not one of [ReservedConfigKeys]), type
//     (string, integer or boolean), and the optional description,
//     required, secret and default (of the key's type; a string at most
//     [MaxConfigDefaultBytes]);
//   - timeout_seconds, a positive integer, overrides the manifest's for
//     this tool, within [Limits.MaxTimeoutSeconds];
//   - artifact_params names the parameters that take artifact names
//     ([ArtifactParam]): an object mapping each (at most 32) to
//     {"required": bool, "is_list": bool} or to a boolean (required), or
//     a list of names (each required); see Artifacts;
//   - auth, any JSON value but null or false (at most 4 KB, kept in
//     [ToolInfo.Auth]), says the tool takes the run's credentials (see
//     Configuration).
//   - instructions, at most [MaxDescriptionBytes], is text for the system
//     prompt: [Toolset.Instructions] ([toolset.InstructionsProvider])
//     joins those of the toolset's tools, in order, with blank lines.
//
// Other fields, of a tool and of a configuration key, are ignored. Any
// problem fails discovery; [Info.Errors] lists them all (at most 100).
//
// A call runs "<executable> <work>/runner_args.json", within the tool's
// timeout. runner_args.json, readable by the tool's user alone, holds
// every field below, empty ones included:
//
//	{
//	  "tool_name": "forecast",             the tool's name from --schema, without the toolset's
//	  "args": {"city": "Paris"},           the call's arguments, validated against parameters
//	  "tool_config": {"units": "metric"},  the tool's configuration, {} when it has none
//	  "result_file": "<work>/result.json", where the tool writes its result
//	  "output_dir": "<work>/output",       an empty directory
//	  "task_id": "...",                    the run's ID
//	  "user_id": "...",                    the run's value "user_id", if a string
//	  "session_id": "...",                 the run's value "session_id", if a string
//	  "app_name": "...",                   the run's value "app_name", if a string
//	  "artifact_paths": {"doc": "..."},    the input artifacts' paths, under <work>/input (see Artifacts)
//	  "artifact_metadata": {"doc": {...}}, their filename, mime_type, version and local_path
//	  "status_pipe": "<work>/status.pipe", a FIFO for progress (see Progress)
//	  "ipc_socket": "",                    a socket for llm/call with Options.LLM, else empty
//	  "tool_oauth_token": "",              the tool's credentials (see Configuration), "" and {} without
//	  "tool_auth_headers": {},
//	  "volume_mounts": []                  always empty
//	}
//
// The run's fields come from the [toolset.RunContext] of the call, and are
// "" without one. The tool's standard output is not read; the end of its
// standard error (4 KB) is shown in a [*ExecError]. It writes result_file
// and exits 0:
//
//	{"result": {"_schema": "ToolResult", "_schema_version": "1.0", "status": "success",
//	            "message": "3-day forecast for Paris", "data": {"days": [...]}, "data_objects": []},
//	 "error": ""}
//
// result.json is read only if it is a regular file (no link is followed,
// no pipe waited on) of at most 16 MB, and then:
//
//   - an "error" other than null and "" fails the call with a
//     [*ToolFailure] that the model sees: the string, or the value as
//     JSON; it wins over "result";
//   - otherwise "result" is required. Its status "error" is a
//     [*ToolFailure] too, with its message. Any other status (success,
//     partial, pending) is a [*Result] with the result's status, message,
//     data and data_objects; the model is sent [Result.ModelText]: the
//     status unless success, the message and the data, capped at
//     [Options.MaxOutputBytes] (100 KB). _schema and _schema_version are
//     not checked;
//   - error_code, a string (at most 64 bytes), is kept:
//     [Result.ErrorCode], [ToolFailure.Code]. AUTH_REQUIRED, with any
//     status, fails the call with an [*AuthRequiredError], which a caller
//     that can get credentials branches on with errors.As (the model
//     otherwise sees "authorization required: " and the message);
//   - status pending asks a human: it is a [*Result] ([Result.Pending]),
//     its data the question (approval data). The model reads "status:
//     pending" and the message; the application, which alone can reach a
//     human, decides what follows: this runtime neither waits nor calls
//     the tool again.
//   - a result with data objects or output files, or longer than
//     [ArtifactOptions.SaveThresholdBytes], is a [*toolset.Content]
//     instead of a [*Result] (see Artifacts). A bare [*Result] keeps its
//     whole Data for the program; a model, and a client of an MCP server
//     (mcptoolset sends no structured content for a tool without a result
//     schema, and packaged tools declare none), is sent its ModelText
//     alone.
//
// A tool that exits non-zero or is killed, or exits 0 without writing a
// result or with one that is not JSON, fails the call with a [*ExecError],
// which should stop the run: a tool reports its own errors, for the
// model, through "error" and exits 0. A tool still running at its timeout,
// or when its call's context ends, gets SIGTERM (the platform's SDKs
// cancel the tool's context on it): its process group, or under bwrap
// the processes bwrap started. [Options.KillGrace] later (default
// [DefaultKillGrace], 3 s) SIGKILL ends it and all its processes. A
// result.json written in the grace is the call's answer; without one, a
// timeout is a [*toolset.TimeoutError] that the model sees. A tool that is the
// first process of its PID namespace (outside bwrap) and installs no
// SIGTERM handler ignores SIGTERM, as every namespace's init does, and
// waits for the SIGKILL.
//
// # Progress
//
// A call's status.pipe is a FIFO the host holds open at both ends from
// before the tool starts: the tool opens it for writing without blocking
// and writes JSON lines {"status": "..."}, best effort, never waiting for
// a reader. Each status reaches the progress callback of the call's
// context ([toolset.WithProgress]) as a [toolset.Progress] with
// Fraction -1, secrets hidden, cut to 1 KiB; a line that is not such an
// object or is longer than 4 KiB is skipped, at most 1,000 reports a
// call are made, and the pipe is read for 200 ms at most once the tool
// ended. Served over MCP (mcptoolset, toolset serve), the reports reach a
// client that sent a progress token as notifications/progress.
//
// # IPC
//
// With [Options.LLM], a call's ipc_socket is a Unix socket speaking
// newline-delimited JSON-RPC 2.0 with one method, llm/call
// {system_prompt, user_prompt, temperature} -> {text}, answered by the
// hook under the call's context ([LLMRequest], [LLMFunc]), with the
// call's secrets hidden in the prompts (they go to the model). A request line
// is at most 1 MiB, a call has at most 4 connections at once and 100
// requests; a malformed request gets a JSON-RPC error, a hook's error
// its message (cut to 1 KiB). Without the option ipc_socket is empty, and
// the platform's SDKs tell the tool that LLM calls are not available.
//
// # Traces
//
// With [Options.Trace] (oteltoolset.Propagator makes one from
// OpenTelemetry), a call's tool gets the W3C trace context of the call's
// context in its environment, as OpenTelemetry's environment carriers
// read it: TRACEPARENT, and TRACESTATE when there is one, in every
// sandbox mode, so the spans a tool makes join the caller's trace. A
// field longer than [toolset.MaxTraceparentBytes] or
// [toolset.MaxTracestateBytes], or with a byte outside printable ASCII,
// is left out; the host's own TRACEPARENT never reaches a tool.
//
// # Scratch directory
//
// See [ScratchPolicy]: each toolset has a directory kept across calls and
// versions, <store>/<toolset>/scratch, mounted under bwrap at
// /tmp/sam-str/<toolset> (where the platform's tools keep state) and named
// by TOOLPKG_SCRATCH_DIR in every mode; off for the restrictive profile
// unless [Options.Scratch] is [ScratchAll]. It is not size-limited beyond
// max_file_size_mb per file. A scratch directory replaced by anything
// else than the directory the store made fails the call; removing the
// toolset deletes it without following links.
//
// # Configuration
//
// Configuration reaches a tool through tool_config, and its reserved keys
// through the call's policies. [Store.ToolsetWithConfig] takes a
// [Config] as the platform models it ([Store.Toolset] takes the first
// part alone):
//
//   - Config.Toolset, the toolset's values (the platform's spec.config):
//     flat, each key declared by at least one tool, given to every tool
//     that declares it;
//   - Config.Tools, the agent's overlay (configValues), by tool name (the
//     name in the package), then key: each tool named must exist, each
//     key must be declared by that tool;
//   - Config.Exclude, tools the agent does not get (each must exist).
//
// Under both lies the store's own configuration of the toolset, set with
// [Store.SetConfig] (the platform's PATCH of a toolset's config): flat,
// the same keys as Config.Toolset, shared by every Toolset of the store,
// and picked up on the next turn. It is checked when set, against the
// serving version's config schemas (a key no tool declares, or a value
// of the wrong type, is a *ConfigError, and nothing changes; before any
// version is discovered it is kept unchecked), and again when a
// version is discovered: a version it does not fit fails, and the
// previous one serves on. It is bounded ([MaxStoredConfigBytes],
// [MaxStoredConfigDepth]) and kept in <toolset>/config.json, readable by
// the store's user alone. [Store.SetConfig] and [Store.Config] return it
// with each secret value (a key the schemas mark secret, and auth) shown
// as [RedactedValue]; sent back, that value keeps the stored secret. A
// value written while its key was secret, or before any version said,
// stays hidden (and is hidden as a secret in what tools return) until
// it is written again, whatever later versions declare; hil and
// required_scopes are never hidden once a version serves.
//
// Each tool gets the keys its own config_schema declares, with the
// overlay's value, else the toolset's, else the store's, else the
// schema's default (a nil
// value counts as unset). A value must be of the key's type: an integer
// may be any Go integer, a json.Number or an integral float64, and text,
// as forms send it, is converted ("7" for an integer, "true" for a
// boolean; [ParseConfigValue]). A tool missing a required value is left
// out of the list, with a warning in the store's log and the reason in
// [Toolset.Unavailable], and the other tools stay; when no tool is left,
// GetTools fails with a [*ConfigError]. Unknown keys and tools, wrong
// types and bad reserved values are a *ConfigError too, listing missing
// values as well. The configuration is checked when a version's tools are
// first built, and again when the store's configuration changes. Secret keys are passed like the others (see Secrets).
//
// The reserved keys ([ReservedConfigKeys]), which no tool may declare,
// are read for each tool: auth from the overlay, else the toolset's
// values, else the store's; hil and required_scopes from all three, so
// that an agent may add approval and scopes but never lift those of a
// lower layer (hil is on when any sets it, and a run needs the scopes of
// every one):
//
//   - hil (true or false, or their text): the tool requires a human's
//     approval of each call through the core's approval policy
//     ([toolset.WithApprovalRequired]): a call returns a
//     [*toolset.ApprovalRequiredError] until the run records a decision;
//   - required_scopes (a list of names, or its text: a JSON list, or
//     names separated by commas or spaces; at most 64): the tool is shown
//     only in turns of runs that carry every one of them in the run value
//     [Scopes] (a []string, by key or by the name "scopes");
//   - auth: credentials for the tool, passed in tool_oauth_token and
//     tool_auth_headers: true or "run" passes the run's [Auth] value (a
//     *[Credentials], by key or by the name "auth"); an object
//     {"oauth_token": "...", "headers": {"Name": "value"}, "from_run":
//     true} gives the deployer's credentials, with the run's over them
//     when from_run is set. A tool whose schema declares auth gets the
//     run's credentials too. At most 64 headers and 16 KB; header names
//     must be valid and values hold no line break. Every credential is a
//     secret: hidden in what the tool returns and in errors, never logged.
//     A tool whose auth (its own, or the toolset's) and schema ask for
//     none gets none.
//
// # Artifacts
//
// Artifacts are versioned files of an [ArtifactStore], by default a
// [DirArtifactStore] in the store's directory (.artifacts), scoped by the
// run's app_name, user_id and session_id ([ArtifactScope]); names are
// checked by [CheckArtifactName] (no path, no "..", no control
// character). [Options.Artifacts] sets the store and the bounds
// ([ArtifactOptions]).
//
// In: for each parameter of the tool's artifact_params, the name the
// model passes (or names, for a list; "name:3" for version 3, else the
// latest) is loaded into <work>/input/ and passed in artifact_paths and
// artifact_metadata, keyed by the parameter (or "param[i]" for a list).
// The artifacts of one call are at most MaxArtifacts, each at most
// MaxArtifactBytes and all together at most four times that. A required
// artifact that is missing, unnamed, badly named or too large, and a call
// whose artifacts add up to more, fails the call with an [*ArtifactError] the model sees, before the
// tool runs; a missing optional one is left out.
//
// Out: after a successful call, the regular files at the top of output/
// (at most [ArtifactOptions.MaxArtifacts], each at most MaxArtifactBytes)
// and the data objects of result.json ({name, content, is_binary,
// mime_type, disposition, description, preview}, content base64 when
// is_binary) are handled as the platform does: disposition inline, and
// auto when at most SaveThresholdBytes, becomes a content part (text cut
// to ReturnMaxBytes; binary content as a media part, or saved when larger
// than ReturnMaxBytes); artifact, artifact_with_preview (with its preview
// as a part) and a larger auto are saved. A result whose text is longer
// than SaveThresholdBytes (default 4,096) is saved whole as
// <tool>_output.txt, and the model is sent its first ReturnMaxBytes
// (default 8,192). The call then returns a [*toolset.Content]: the text,
// the inline parts, and a reference to each saved artifact (artifact
// saved: {"filename", "version", "size_bytes", "mime_type",
// "description"}); its Structured value is the [*Result], whose
// Artifacts lists them. A symlink, pipe, device, directory or badly named
// file in output/ is never followed or opened: it is skipped, and a note
// says so to the model and a warning to the log; so are objects over the
// bounds. Under bwrap, output/ stays on the sandbox's bounded tmpfs and
// its files leave as a tar archive on the tool's standard output (a host
// file bounded by max_file_size_mb), written by a small /bin/sh wrapper
// that runs the tool and then tar (so bwrap needs /bin/sh and tar on the
// host); the tool's own standard output is discarded. Outside bwrap,
// output/ is a host directory and what a tool writes there is bounded by
// the file size limit per file only. Artifacts are stored as the tool
// wrote them: secrets are hidden in what the model is sent (the text, the
// inline parts, previews, descriptions and notes, and the saved whole
// output), not inside saved files and data objects.
//
// The budget: everything of a result that a model or a client is sent is
// bounded by [Options.MaxOutputBytes] (100 KB), as the text is. The text
// part and the inline parts share it: an inline data object that does
// not fit is saved as an artifact instead (the model sees its
// reference), a preview that does not fit is left out with a note. An
// artifact's description, shown in each reference, is cut to 256 bytes.
// And the Structured value, which an MCP server (toolset serve) sends
// whole as structuredContent and many clients hand to the model, is at
// most MaxOutputBytes as JSON. As the platform does with a large output,
// an oversize result's data gets an artifact the model can name: the
// whole output (status, message and data) is saved as <tool>_output.txt
// whenever the structured result would be over the budget for them, even
// below SaveThresholdBytes. Then, while the structured result is over,
// the largest of its data, data_objects, artifact list and message is
// left out of it (nil or ""; the data objects are already the result's
// parts and artifacts, the parts name each artifact), and at last a
// status longer than 64 bytes is cut. Each omission is said
// in [Result.Omitted], which the structured result carries, and in a
// note part the model reads, naming the artifact that holds what was
// left out (or the text part, when it was not cut), or saying that none
// does when the whole output could not be saved (too large for MaxArtifactBytes, past MaxArtifacts, or the
// artifact store failed). The data is not saved a second time as an
// artifact of its own: the whole output already holds it. A result whose
// structured form fits is returned exactly as before, Omitted empty (and
// absent from the JSON).
//
// # Writing tools in Go
//
// Package toolpkg/pkgtool runs tools made with [toolset.NewTool] as a
// packaged executable (pkgtool.Main): --schema, --schema --config,
// runner_args.json through the core's call path, result.json as the
// platform's SDKs write it, progress on the status pipe, SIGTERM as
// context cancellation. The same tool runs in-process unchanged.
//
// # Building packages
//
// [Build] builds a source directory as the platform's CLI (sam toolset
// package) does, into <out>/<os>-<arch>/: build.sh, run directly by its
// own #! line (execute bit required), with SAM_TOOL_NAME,
// SAM_TOOL_BUILD_OUT (the absolute package directory it fills),
// SAM_TOOL_TARGET_OS, SAM_TOOL_TARGET_ARCH and SAM_TOOL_SDK_VERSION
// ([SDKVersion], the version of toolpkg/pkgtool); else Go tools
// cross-compiled with CGO_ENABLED=0 and GOWORK=off (./cmd/<name> when
// there is one); else pip install --target <package>/python from
// requirements.txt, else pyproject.toml (from local sources with PipArgs
// such as --no-index; --platform and --only-binary=:all: when
// cross-building); else the files as they are. Each step is bounded in
// time, its output to the log in size, and a failure ends with the tail
// of its stderr. The default target is this machine's, not the
// platform's linux/arm64, so that what is built runs here; the CLI's
// toolset package --platform URL asks a platform for its target.
// [ZipDir] zips the result deterministically.
//
// # Lifecycle
//
// A toolset's status ([Status]) is persisted in its state.json:
//
//   - created ([StatusCreated]): [Store.Create] made the record, no
//     package was uploaded yet;
//   - pending ([StatusPending]): a package was accepted, discovery runs
//     or waits for its turn;
//   - ready ([StatusReady]): every executable was discovered;
//   - failed ([StatusFailed]): discovery of the latest upload failed,
//     [Info.Errors] says why;
//   - removed ([StatusRemoved]): [Store.Remove] removed it; [Store.Create]
//     or an upload may make it again.
//
// [Store.StartUpload] creates the toolset if needed. A package that
// fails validation returns a [*ValidationError] and changes nothing.
// Otherwise it becomes the next version (numbers are never reused), with
// its zip, and the status goes pending, persisted, before StartUpload
// returns; discovery runs in the background, at most
// [Options.MaxParallelDiscovery] toolsets at a time, and the status then
// goes ready or failed ([Store.Wait] waits for it; [Store.Upload] is
// StartUpload then Wait, and a failed discovery is not its error).
// Uploads of one toolset are serialised: the next waits for the
// previous one's discovery.
//
// [Info] tells the latest upload from the version that serves:
// Version, Uploaded, Status and Errors are the latest upload's;
// [Info.Serving] is the version whose tools the store's Toolsets list
// (Info.Tools), the latest one discovered ready. A re-upload of a ready
// toolset keeps the old version serving while it is pending, and after
// it failed; once it is ready it serves from the next turn on. GetTools
// fails with a [*NotReadyError] only when nothing serves (no upload yet,
// every upload failed or pending, or the toolset removed), and with an
// error wrapping [ErrNotFound] for a name the store never had.
// [Info.Versions] keeps the last [MaxVersionHistory] uploads.
//
// On disk, a toolset keeps the folders and zips of its latest and its
// serving version ([Store.Package] exports a zip). The others are
// deleted once no call uses them; a tool listed from a deleted version
// fails with a [*StaleToolError] that the model sees, and the next turn
// lists the serving version's tools. [Store.Remove] deletes the zips and
// the stored configuration at once, and cancels a discovery running.
//
// One process at a time owns a store directory ([Open] takes an
// exclusive lock). [Store.Close] cancels the discoveries running, which
// leave their toolsets pending on disk; Open discovers again a toolset
// left pending (its serving version, if any, serves meanwhile), and
// cleans up what a crashed process left behind (temporary folders, work
// directories, versions neither latest nor serving). state.json files of
// earlier releases load: a ready record serves its version, and the
// history starts with it. A damaged state.json (unreadable,
// not JSON, naming files outside its package, holding what discovery
// would have refused, or naming a version whose folder is missing) does
// not stop the store from opening: it is logged as an error, the toolset
// is failed with an error that says to upload the package again, and its
// files stay as they are; the next upload replaces the record, with a
// version number above every folder on disk.
//
// # Sandbox
//
// A package is untrusted: its manifest, its --schema output, its
// processes and every file they write. [Options.Sandbox] picks how tools
// are isolated ([ModeBwrap], [ModePrlimit] or [ModeDirect]); the default,
// [ModeAuto], is the strongest that works on the machine. In every mode:
//
//   - result.json is opened without following links and without blocking,
//     must be a regular file and is read up to 16 MB; its content never
//     appears in an error beyond a short, printable, redacted preview;
//   - a tool's schema may not reference anything outside itself;
//   - what a package declares is bounded before it is used: [MaxTools]
//     tools, [MaxDescriptionBytes] per description, [MaxConfigFields]
//     configuration keys per tool, [MaxSecretBytes] of secret keys
//     and defaults, [MaxToolDefinitionBytes] of tool definitions; a
//     manifest's aliases cannot make checking it costly;
//   - manifest numbers are range-checked, and a store bounds what a
//     package may ask for ([Limits.MaxTimeoutSeconds],
//     [Limits.MaxResourceLimits]);
//   - every process a call starts ends with it (result, error, timeout or
//     cancellation), even one that left the process group: the tool is
//     the first process of a PID namespace. Where the kernel refuses
//     namespaces, a warning says so at start-up and only the process
//     group is killed.
//
// What the modes add:
//
//	                              direct   prlimit   bwrap
//	resource limits (CPU, file
//	size, open files, processes)  no       yes       yes
//	runs as nobody (65534) when
//	the host is root              no       yes       yes
//	max_processes per call        no       yes (1)   yes
//	network cut off (restrictive) no       no        yes
//	host files hidden             no       no        yes
//	hidden from other calls (3)   no       no        yes
//	total writes bounded          no       no        yes (2)
//	memory bounded                no       no        no (4)
//
// (1) counted per call when a user namespace can be made; else over every
// process of the user tools run as. (2) The work directory and /tmp are
// each a tmpfs of max_write_mb; the only host files a tool writes are
// result.json and its standard output and error, made by the host and
// each bounded by max_file_size_mb, the status pipe, and its toolset's
// scratch directory (whose total size is not bounded) (a tool that renames a file over
// result.json fails under bwrap). (3) Outside
// bwrap, the tools of every call run as one user and see the host's /proc:
// a tool can find another call's work directory (its command line names
// runner_args.json), read its arguments and configuration, secrets
// included, and replace its files. Use bwrap when packages of different
// trust share a store. (4) No mode limits the memory a tool allocates
// (the address-space limit breaks Go binaries): run the host under a
// memory cgroup (systemd's MemoryMax=, a container's limit) to bound it.
// The standard and permissive profiles share the host's network, its
// local services and abstract Unix sockets included.
//
// Under root, uid 0 is exempt from the process limit, so tools run as
// [ToolUID]: the store's directory and those above it must be searchable
// by that user (Open says so when they are not). What a mode cannot
// enforce is logged once, as a warning, when a store opens; a package
// that asks for the restrictive profile outside bwrap is warned about at
// upload.
//
// # Secrets
//
// A configuration key that any tool of the package declares secret is
// secret for all of them. Its values, given to [Store.Toolset] or taken
// from defaults, are hidden, replaced by "[secret]", wherever a tool's
// output reaches the host: in a [*Result] (status, message, data and
// data_objects, and so [Result.ModelText]), in a [*ToolFailure]'s message,
// and in a [*ExecError]'s standard error and its preview of a malformed
// result.json; in what --schema --config prints (the tools' names,
// descriptions, instructions and parameters, and its standard error when
// it fails); and an artifact whose name holds one is not saved (the model
// is shown the names). They are found raw or JSON-escaped (once or twice); in JSON
// output, a member whose key is secret is hidden whatever its type (a
// boolean has no text to search for). A secret value never appears in a
// [*ConfigError], in [ParseConfigValue]'s errors or in the store's log.
// [Info.Tools] holds the declared defaults, secret ones included: hide
// them before showing an Info to someone who may not read them.
//
// The limits: values shorter than 3 bytes, and encodings a tool may
// choose (base64, hex, ...), are not found: hiding stops a tool that
// leaks by accident, not a package that means to reveal what it was
// given. Hiding costs time linear in the output, and the secret keys
// and defaults of a package are bounded ([MaxSecretBytes]). A tool reads
// its secrets from runner_args.json, which only its user can read; but
// outside bwrap every call's tools run as one user, so a tool of another
// package can read them (note 3 of Sandbox).
package toolpkg
