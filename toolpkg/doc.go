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
package toolpkg
