package pkgtool

// Version is the version of this SDK: of the protocol it speaks (the
// --schema output, runner_args.json, result.json, the status pipe) and
// of its API. toolpkg's build passes it to a package's build.sh as
// SAM_TOOL_SDK_VERSION, where the platform's CLI passes the version of
// its own Go SDK, so that a script may check what it builds against.
const Version = "0.1.0"
