// Package toolpkg loads packaged remote toolsets: zips that carry tools as
// executables (a static Go binary, or a script with its dependencies
// extracted beside it) and a manifest.yaml at their root. The format,
// protocol and sandbox profiles follow a platform design in public use, so a
// package built for that platform loads here unchanged.
//
// A [Store] keeps packages in a directory. [Store.Upload] checks a zip's
// structure before anything is extracted ([ValidateZip]: sizes counted while
// reading, entry count, path traversal, symlinks, .whl and .venv, the
// manifest and its executables), extracts it atomically as the toolset's
// next version, and runs discovery: "<executable> --schema" for each
// executable, whose JSON output gives each tool's description, parameter
// schema, configuration schema and timeout. A toolset's status goes
// created → pending → ready or failed, and is persisted.
//
// [Store.Toolset] returns a toolset.Toolset whose tools are named
// <toolset>__<tool>. Each call runs "<executable> runner_args.json" in a
// fresh work directory, in the sandbox ([ModeBwrap], [ModePrlimit] or
// [ModeDirect]; the default is the strongest that works on the machine),
// kills the process group at the timeout, and returns the tool's result
// ([*Result]) or its error ([*ToolFailure], which the model sees).
//
// [Pack] builds a package from a source directory; the command
// cmd/toolset wraps it and the rest for the command line.
//
// # What a package can and cannot do
//
// A package is untrusted: its manifest, its --schema output, its
// processes and every file they write. In every mode:
//
//   - result.json is opened without following links and without blocking,
//     must be a regular file and is read up to 16 MB; its content never
//     appears in an error beyond a short, printable, redacted preview;
//   - a tool's schema may not reference anything outside itself;
//   - the values and defaults of every configuration key that any tool of
//     the package declares secret are hidden from results, errors and
//     stderr, raw or JSON-escaped (once or twice); a secret key's value is
//     hidden in JSON output whatever its type (a boolean has no text to
//     search for). Values shorter than 3 bytes, and encodings a tool may
//     choose (base64, hex, ...), are not found: hiding stops a tool that
//     leaks by accident, not a package that means to reveal what it was
//     given. Hiding costs time linear in the output;
//   - what a package declares is bounded before it is used: MaxTools
//     tools, MaxDescriptionBytes per description, MaxConfigFields
//     configuration keys per tool, MaxSecretBytes of secret keys
//     and defaults; a manifest's aliases cannot make checking it costly;
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
// each bounded by max_file_size_mb (a tool that renames a file over
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
// enforce is logged once, as a warning, when a store opens.
package toolpkg
