// Package toolpkg loads and runs packaged remote toolsets. A package is a
// zip that carries tools as executables (a static Go binary, or a Python
// console script with its dependencies extracted under python/) and a
// manifest.yaml at its root. Its tools run outside the program's process:
// each call is a fresh subprocess, in a sandbox, killed with all its
// processes at its timeout. The format and the protocol follow a platform
// design in public use, so a package built for that platform loads here
// unchanged.
//
// # Loading and running a package
//
// A [Store] keeps packages in a directory. [Store.Upload] checks a zip's
// structure before anything is extracted ([ValidateZip]), extracts it
// atomically as the toolset's next version, and discovers its tools: it
// runs "<executable> --schema" for each executable, whose JSON output
// gives each tool's description, parameters, configuration schema and
// timeout ([Store.StartUpload] returns at once and discovers in the
// background; [Store.Wait] waits). [Store.Toolset] returns a
// [toolset.Toolset] whose tools are named <toolset>__<tool>; each call
// returns the tool's result ([*Result], or a [*toolset.Content] with its
// artifacts) or its error ([*ToolFailure], which the model sees):
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
// A re-upload becomes the toolset's next version; the previous one serves
// until the new one is discovered ready, and a version that fails
// validation or discovery changes nothing that serves ([Status] tells the
// lifecycle, [Info] the record).
//
// # Entry points
//
//   - [Open] opens a store; [Options] choose the sandbox mode, the limits
//     on packages ([Limits]), artifacts ([ArtifactOptions]), the hook that
//     answers a tool's LLM calls, traces and the Python interpreter.
//   - [Store.Upload], [Store.UploadFile], [Store.StartUpload] and
//     [Store.Wait] upload a package and discover it; [Store.Info],
//     [Store.List] and [Store.Remove] read and remove records;
//     [Store.Package] exports a stored zip.
//   - [Store.Toolset] and [Store.ToolsetWithConfig] give a toolset to an
//     agent, configured as [Config] describes (layered values, reserved
//     keys auth, hil and required_scopes, secrets); [Store.SetConfig]
//     stores the toolset's own configuration.
//   - [ValidateZip] and [ParseManifest] check a package without a store;
//     [Pack], [Build] and [ZipDir] make one from a source directory (the
//     command cmd/toolset wraps them).
//   - Package toolpkg/pkgtool makes tools written with the toolset library
//     into a package's executable; the same tools run in-process unchanged.
//
// Settings are passed as a pointer to a struct, nil meaning the defaults
// (a zero field takes its default too), as log/slog's handlers take theirs:
// [Open] takes an *[Options], [Pack] a *[PackOptions], [ValidateZip] a
// *[Limits].
//
// Errors the model sees, so that it can try again differently:
// [*ToolFailure], [*toolset.TimeoutError], [*ArtifactError],
// [*StaleToolError]. Errors a program branches on: [*ValidationError] and
// [*ManifestError] (a refused package), [*ConfigError], [*NotReadyError],
// [*AuthRequiredError] (the tool asks for credentials) and [*ExecError]
// (the tool broke the protocol or crashed; it should stop the run).
//
// # Security
//
// A package is untrusted: its zip, its manifest, its --schema output, its
// processes and every file they write. Everything a package declares is
// bounded and checked before use; no path it names may leave it; a result
// is read without following links and with a size cap; every process a
// call starts ends with the call; and the values of secret configuration
// keys are hidden from what its tools return, from errors and from logs.
// How far a tool is kept from the host depends on the sandbox mode:
// [ModeBwrap] (bubblewrap) hides the host's files, cuts the network of
// restrictive tools and bounds what a call writes; [ModePrlimit] sets
// resource limits only; [ModeDirect] isolates nothing. [ModeAuto], the
// default, picks the strongest that works, and a store logs what its mode
// cannot enforce. See [Mode] for the full table, and [Config] for secrets.
//
// # The format and the protocol
//
// What a package is (the zip's rules, manifest.yaml, how an executable is
// recognised and run, how a package is built), and the protocol between
// the runtime and a package's process (the environment, --schema,
// runner_args.json, result.json, exit status and signals, the status
// pipe, llm/call over the IPC socket, trace context, the scratch
// directory, artifacts in and out) are described in PROTOCOL.md, next to
// this package's source:
// https://github.com/gotoolset/toolset/blob/main/toolpkg/PROTOCOL.md
package toolpkg
