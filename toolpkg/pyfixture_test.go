package toolpkg

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Python package the tests build, laid out as "pip install --target
// <out>/python" leaves one: python/bin/pytools is a pip console script
// whose "#!" line names the build machine's interpreter, the tool's module
// is python/pytools, its vendored dependency python/tinyfmt, and
// python/sam_tool_sdk is a minimal stand-in for the platform's Python SDK
// (the real one is not installable here).

// pyManifest is written the way the platform's documentation shows
// manifests: no runtime, no version, documented keys, and one key this
// runtime does not know.
const pyManifest = `description: Python tools built with the platform's conventions
tools:
  pytools:
    executable: pytools
    description: A console script in the pip layout
    tool_dir: src/pytools
    timeout_seconds: 5
    schema_refresh_seconds: 3600
    author: someone
`

const pyConsoleScript = `#!/opt/buildbox/bin/python3.12
# -*- coding: utf-8 -*-
import re
import sys
from pytools.cli import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\.pyw|\.exe)?$", "", sys.argv[0])
    sys.exit(main())
`

const pyTinyfmt = `"""A small vendored pure-Python dependency."""


def banner(text):
    return "** " + text + " **"
`

const pyCLI = `import json
import os
import signal
import sys
import time

import tinyfmt
from sam_tool_sdk import ToolResult, run, tool


@tool("greet", "Greet someone, reporting progress on the status pipe.",
      {"type": "object", "properties": {"name": {"type": "string"}, "flood": {"type": "string"}}, "required": ["name"]},
      instructions="Greet people by name with pytools__greet.")
def greet(args, ctx):
    for i in range(3):
        ctx.status("step %d of 3" % (i + 1))
    flood = args.get("flood")
    if flood == "garbage":
        ctx.raw_status(b"not json\n{\"status\": 7}\n\x00\xff\xfe\n" + b"x" * 200000 + b"\n", patient=True)
        ctx.raw_status(b"{\"status\": \"after the garbage\"}\n", patient=True)
    elif flood == "lots":
        for i in range(20000):
            ctx.status("flood %d" % i)
        ctx.status("flood done")
    return ToolResult(message=tinyfmt.banner("hello, " + args["name"]), data={"name": args["name"]})


@tool("where", "Say which interpreter and path the tool runs with.", {"type": "object", "properties": {}})
def where(args, ctx):
    return ToolResult(message="where", data={
        "executable": sys.executable, "pythonpath": os.environ.get("PYTHONPATH", ""),
        "sdk": sys.modules["sam_tool_sdk"].__file__, "argv0": sys.argv[0],
        "scratch": os.environ.get("TOOLPKG_SCRATCH_DIR"),
    })


@tool("term", "Sleep until SIGTERM, then write the result during the grace period.",
      {"type": "object", "properties": {"linger": {"type": "number"}}}, timeout_seconds=1)
def term(args, ctx):
    def on_term(signum, frame):
        time.sleep(args.get("linger", 0.2))
        ctx.finish(ToolResult(message="cleaned up after SIGTERM", data={"signal": signum}))
        sys.exit(0)
    signal.signal(signal.SIGTERM, on_term)
    ctx.status("waiting for SIGTERM")
    while True:
        time.sleep(0.05)


@tool("ignore_term", "Ignore SIGTERM and sleep forever.", {"type": "object", "properties": {}}, timeout_seconds=1)
def ignore_term(args, ctx):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(0.05)


@tool("ledger", "Append an entry to a ledger kept between calls.",
      {"type": "object", "properties": {"entry": {"type": "string"}, "link": {"type": "string"}}, "required": ["entry"]})
def ledger(args, ctx):
    d = os.environ.get("TOOLPKG_SCRATCH_DIR")
    if not d:
        raise RuntimeError("no scratch directory")
    if args.get("link"):
        os.symlink(args["link"], os.path.join(d, "ledger.txt"))
        return ToolResult(message="linked")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "ledger.txt")
    with open(p, "a") as f:
        f.write(args["entry"] + "\n")
    with open(p) as f:
        entries = f.read().split()
    return ToolResult(message="%d entries" % len(entries), data={"entries": entries})


@tool("login", "Needs credentials the run does not have.", {"type": "object", "properties": {}})
def login(args, ctx):
    return ToolResult(status="error", message="sign in to the ledger service first", error_code="AUTH_REQUIRED")


@tool("approve", "Ask a human before going on.", {"type": "object", "properties": {}})
def approve(args, ctx):
    return ToolResult(status="pending", message="waiting for approval", data={"approval": {"question": "Pay 10 EUR?"}})


@tool("ask", "Ask the agent's model through the IPC socket.", {"type": "object", "properties": {"prompt": {"type": "string"}}})
def ask(args, ctx):
    return ToolResult(message=ctx.llm_call("be brief", args.get("prompt", "hi")))


def _query_override(config):
    db = config.get("database")
    if not db:
        return None
    return {"name": "query_" + db, "description": "Query the %s database." % db,
            "instructions": "Use query_%s for questions about %s." % (db, db),
            "parameters": {"type": "object", "properties": {"sql": {"type": "string"}, "table": {"type": "string", "enum": config.get("tables", "").split(",")}}, "required": ["sql"]}}


@tool("query", "Query a database.", {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]},
      config_schema=[{"key": "database", "type": "string", "description": "Which database"},
                     {"key": "tables", "type": "string", "description": "Tables, comma-separated"}],
      dynamic=_query_override)
def query(args, ctx):
    return ToolResult(message="ran %s on %s" % (args["sql"], ctx.config.get("database", "(none)")))


def main():
    return run(sys.argv[1:])
`

const pySDK = `"""A minimal stand-in for the platform's Python tool SDK: --schema
[--config FILE], runner_args.json in, result.json out, the status pipe
written without blocking, llm/call over the IPC socket."""
import json
import os
import socket
import sys

_TOOLS = {}


class ToolResult:
    def __init__(self, status="success", message="", data=None, error_code=None):
        self.status, self.message, self.data, self.error_code = status, message, data, error_code

    def doc(self):
        return {"result": {"_schema": "ToolResult", "_schema_version": "1.0", "status": self.status,
                           "message": self.message, "data": self.data, "data_objects": [],
                           "error_code": self.error_code}, "error": ""}


class LLMNotAvailable(Exception):
    pass


def tool(name, description, parameters, config_schema=None, instructions=None, dynamic=None, timeout_seconds=None):
    def deco(fn):
        _TOOLS[name] = dict(fn=fn, description=description, parameters=parameters, timeout_seconds=timeout_seconds,
                            config_schema=config_schema, instructions=instructions, dynamic=dynamic)
        return fn
    return deco


def _schema(config):
    out = {}
    for name, t in _TOOLS.items():
        entry = {"description": t["description"], "parameters": t["parameters"]}
        if t["config_schema"]:
            entry["config_schema"] = t["config_schema"]
        if t["instructions"]:
            entry["instructions"] = t["instructions"]
        if t["timeout_seconds"]:
            entry["timeout_seconds"] = t["timeout_seconds"]
        if config is not None and t["dynamic"]:
            over = t["dynamic"](config)
            if over:
                name = over.pop("name", name)
                entry.update(over)
        out[name] = entry
    return out


class Context:
    def __init__(self, ra):
        self.ra = ra
        self.config = ra.get("tool_config") or {}
        self._done = False
        self._pipe = None
        if ra.get("status_pipe"):
            try:
                self._pipe = os.open(ra["status_pipe"], os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                self._pipe = None

    def raw_status(self, data, patient=False):
        if self._pipe is None:
            return
        while data:
            try:
                n = os.write(self._pipe, data)
            except BlockingIOError:
                if not patient:
                    return
                import time
                time.sleep(0.001)
                continue
            except OSError:
                return
            data = data[n:]

    def status(self, text):
        self.raw_status((json.dumps({"status": text}) + "\n").encode())

    def llm_call(self, system_prompt, user_prompt):
        path = self.ra.get("ipc_socket")
        if not path:
            raise LLMNotAvailable("LLM calls are not available: the runtime offers no IPC socket")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        req = {"jsonrpc": "2.0", "id": 1, "method": "llm/call",
               "params": {"system_prompt": system_prompt, "user_prompt": user_prompt, "temperature": 0}}
        s.sendall((json.dumps(req) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        s.close()
        resp = json.loads(buf)
        if resp.get("error"):
            raise RuntimeError("llm/call failed: %s" % resp["error"].get("message"))
        return resp["result"]["text"]

    def finish(self, res):
        if self._done:
            return
        self._done = True
        tmp = self.ra["result_file"]
        with open(tmp, "w") as f:
            json.dump(res.doc(), f)


def run(argv):
    if argv and argv[0] == "--schema":
        config = None
        if len(argv) == 3 and argv[1] == "--config":
            with open(argv[2]) as f:
                config = json.load(f)
        json.dump({"tools": _schema(config)}, sys.stdout)
        return 0
    if len(argv) != 1:
        print("usage: <tool> --schema [--config FILE] | <tool> runner_args.json", file=sys.stderr)
        return 1
    with open(argv[0]) as f:
        ra = json.load(f)
    ctx = Context(ra)
    names = {n: n for n in _TOOLS}
    for n, t in _TOOLS.items():
        if t["dynamic"]:
            over = t["dynamic"](ctx.config) or {}
            names[over.get("name", n)] = n
    try:
        res = _TOOLS[names[ra["tool_name"]]]["fn"](ra.get("args") or {}, ctx)
        ctx.finish(res)
    except Exception as e:
        if not ctx._done:
            ctx._done = True
            with open(ra["result_file"], "w") as f:
                json.dump({"result": None, "error": ("%s: %s" % (type(e).__name__, e)).replace("\n", " | ")}, f)
    return 0
`

// pyFiles are the files of the Python package.
func pyFiles() []zfile {
	return []zfile{
		{name: "manifest.yaml", data: []byte(pyManifest)},
		{name: "python/bin/pytools", data: []byte(pyConsoleScript), mode: 0o755},
		{name: "python/pytools/__init__.py", data: []byte("")},
		{name: "python/pytools/cli.py", data: []byte(pyCLI)},
		{name: "python/tinyfmt/__init__.py", data: []byte(pyTinyfmt)},
		{name: "python/tinyfmt-1.0.dist-info/METADATA", data: []byte("Metadata-Version: 2.1\nName: tinyfmt\nVersion: 1.0\n")},
		{name: "python/sam_tool_sdk/__init__.py", data: []byte(pySDK)},
	}
}

// pyPackage is the Python package as a zip.
func pyPackage(t testing.TB) []byte { return makeZip(t, pyFiles()...) }

// pyRestrictivePackage is the Python package under the restrictive
// profile.
func pyRestrictivePackage(t testing.TB) []byte {
	files := pyFiles()
	files[0].data = []byte(strings.Replace(pyManifest, "    timeout_seconds: 5\n", "    timeout_seconds: 5\n    sandbox_profile: restrictive\n", 1))
	return makeZip(t, files...)
}

// pyOptions returns store options for Python tools in mode: the default
// interpreter (python3 on PATH, whatever wrapper it is), unless the user
// tools run as cannot reach it in that mode, as under prlimit with a
// pyenv interpreter in root's home; then the system's.
func pyOptions(t testing.TB, mode Mode) Options {
	t.Helper()
	opts := Options{Sandbox: mode}
	in, err := resolvePython("python3")
	if err != nil {
		t.Logf("python3: %v", err)
		t.Skip(skipPython)
	}
	if in.reachable(&sandbox{mode: mode, runAs: toolCredentialFor(mode)}) != nil {
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			t.Skipf("%s cannot be run by uid %d and there is no /usr/bin/python3", in.exe, ToolUID)
		}
		opts.Python = "/usr/bin/python3"
	}
	return opts
}

// toolCredentialFor returns who tools run as in mode.
func toolCredentialFor(mode Mode) *syscall.Credential {
	if mode == ModeDirect {
		return nil
	}
	return toolCredential()
}

// pyStore opens a store for mode with the Python package uploaded, ready.
func pyStore(t *testing.T, mode Mode, opts Options) (*Store, *Toolset) {
	t.Helper()
	base := pyOptions(t, mode)
	if opts.Python == "" {
		opts.Python = base.Python
	}
	opts.Sandbox = mode
	s := openStore(t, opts)
	info := upload(t, s, "pyt", pyPackage(t))
	require.Equal(t, StatusReady, info.Status, "discovery errors: %v", info.Errors)
	return s, s.Toolset("pyt", nil)
}
