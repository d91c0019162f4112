// Command tooldemo is a packaged tool executable used by the tests of
// toolpkg. It follows the protocol: "--schema" prints the tools (the
// content of schema.json beside the executable when there is one), and
// "tooldemo runner_args.json" runs one tool and writes result.json.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"
)

const defaultSchema = `{"tools": {
  "echo": {
    "description": "Echo the text back, with the tool's configuration.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "What to echo"}}, "required": ["text"]},
    "config_schema": [
      {"key": "greeting", "type": "string", "description": "Put before the text", "default": "hello"},
      {"key": "api_key", "type": "string", "secret": true},
      {"key": "retries", "type": "integer", "default": 2},
      {"key": "verbose", "type": "boolean"}
    ]
  },
  "fail": {"description": "Return an error the model sees.", "parameters": {"type": "object", "properties": {"reason": {"type": "string"}}}},
  "crash": {"description": "Exit 1, printing its API key to stderr.", "parameters": {"type": "object", "properties": {}},
    "config_schema": [{"key": "api_key", "type": "string", "secret": true}]},
  "hang": {"description": "Start a child that sleeps, then hang.", "parameters": {"type": "object", "properties": {"marker": {"type": "string"}}, "required": ["marker"]}},
  "spin": {"description": "Spin on the CPU forever.", "parameters": {"type": "object", "properties": {}}},
  "big": {"description": "Return n bytes of data.", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
  "slow": {"description": "Wait until the file named until exists (at most ms milliseconds), then say which version this is.", "parameters": {"type": "object", "properties": {"ms": {"type": "integer"}, "until": {"type": "string"}}}},
  "connect": {"description": "Try to open a TCP connection.", "parameters": {"type": "object", "properties": {"addr": {"type": "string"}}, "required": ["addr"]}},
  "garbage": {"description": "Write a malformed result.json.", "parameters": {"type": "object", "properties": {}}},
  "noresult": {"description": "Exit 0 without writing result.json.", "parameters": {"type": "object", "properties": {}}},
  "fs": {"description": "Try to read and to write files.", "parameters": {"type": "object", "properties": {"read": {"type": "array", "items": {"type": "string"}}, "write": {"type": "array", "items": {"type": "string"}}}}}
}}`

type runnerArgs struct {
	ToolName   string          `json:"tool_name"`
	Args       json.RawMessage `json:"args"`
	ToolConfig map[string]any  `json:"tool_config"`
	ResultFile string          `json:"result_file"`
	OutputDir  string          `json:"output_dir"`
}

type result struct {
	Result *toolResult `json:"result,omitempty"`
	Error  string      `json:"error"`
}

type toolResult struct {
	Schema        string `json:"_schema"`
	SchemaVersion string `json:"_schema_version"`
	Status        string `json:"status"`
	Message       string `json:"message"`
	Data          any    `json:"data"`
	DataObjects   []any  `json:"data_objects"`
}

func main() {
	dir := filepath.Dir(os.Args[0])
	if len(os.Args) == 2 && os.Args[1] == "--schema" {
		if b, err := os.ReadFile(filepath.Join(dir, "schema.json")); err == nil {
			os.Stdout.Write(b)
			return
		}
		fmt.Println(defaultSchema)
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tooldemo --schema | tooldemo runner_args.json")
		os.Exit(1)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the args file:", err)
		os.Exit(1)
	}
	var ra runnerArgs
	if err := json.Unmarshal(raw, &ra); err != nil {
		fmt.Fprintln(os.Stderr, "decoding the args file:", err)
		os.Exit(1)
	}
	var args map[string]any
	_ = json.Unmarshal(ra.Args, &args)
	ok := func(msg string, data any) {
		write(ra.ResultFile, result{Result: &toolResult{Schema: "ToolResult", SchemaVersion: "1.0", Status: "success", Message: msg, Data: data, DataObjects: []any{}}})
	}
	switch ra.ToolName {
	case "echo":
		var keys []string
		var all map[string]any
		_ = json.Unmarshal(raw, &all)
		for k := range all {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		version, _ := os.ReadFile(filepath.Join(dir, "version.txt"))
		ok(fmt.Sprint(ra.ToolConfig["greeting"], ", ", args["text"]), map[string]any{
			"text": args["text"], "config": ra.ToolConfig, "keys": keys,
			"version": strings.TrimSpace(string(version)), "env": os.Environ(),
			"result_file": ra.ResultFile, "output_dir": ra.OutputDir,
		})
	case "fail":
		write(ra.ResultFile, result{Error: fmt.Sprint("cannot do that: ", args["reason"])})
	case "crash":
		fmt.Fprintf(os.Stderr, "crash: the key %v was rejected\n", ra.ToolConfig["api_key"])
		os.Exit(1)
	case "hang":
		cmd := exec.Command("sleep", fmt.Sprint(args["marker"]))
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "starting sleep:", err)
			os.Exit(1)
		}
		time.Sleep(time.Hour)
	case "spin":
		for {
		}
	case "big":
		n, _ := args["n"].(float64)
		ok("big", strings.Repeat("x", int(n)))
	case "objects":
		// n data objects of size bytes each, of the disposition asked,
		// with a description of desc bytes (not in the default schema).
		n, _ := args["n"].(float64)
		size, _ := args["size"].(float64)
		desc, _ := args["desc"].(float64)
		disp, _ := args["disposition"].(string)
		var objs []any
		for i := range int(n) {
			objs = append(objs, map[string]any{
				"name": fmt.Sprintf("obj%d.txt", i), "content": strings.Repeat("y", int(size)), "mime_type": "text/plain",
				"disposition": disp, "description": strings.Repeat("d", int(desc)),
			})
		}
		write(ra.ResultFile, result{Result: &toolResult{Schema: "ToolResult", SchemaVersion: "1.0", Status: "success", Message: "objects", Data: map[string]any{"n": n}, DataObjects: objs}})
	case "slow":
		ms, _ := args["ms"].(float64)
		until, _ := args["until"].(string)
		deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(until); until != "" && err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		version, _ := os.ReadFile(filepath.Join(dir, "version.txt"))
		ok(strings.TrimSpace(string(version)), nil)
	case "connect":
		conn, err := net.DialTimeout("tcp", fmt.Sprint(args["addr"]), time.Second)
		if err != nil {
			ok("no connection", map[string]any{"connected": false, "error": err.Error()})
			return
		}
		conn.Close()
		ok("connected", map[string]any{"connected": true})
	case "garbage":
		os.WriteFile(ra.ResultFile, []byte("not json{"), 0o644)
	case "fs":
		out := map[string]any{}
		for _, p := range list(args["read"]) {
			_, err := os.ReadFile(p)
			out["read "+p] = errText(err)
		}
		for _, p := range list(args["write"]) {
			out["write "+p] = errText(os.WriteFile(p, []byte("x"), 0o644))
		}
		ok("fs", out)
	case "noresult":
	case "linkresult":
		os.Remove(ra.ResultFile) // in bwrap, the host made it: this fails
		// Make result.json a symbolic link to a file of the host.
		if err := os.Symlink(fmt.Sprint(args["target"]), ra.ResultFile); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "fiforesult":
		os.Remove(ra.ResultFile) // in bwrap, the host made it: this fails
		if err := syscall.Mkfifo(ra.ResultFile, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "dirresult":
		os.Remove(ra.ResultFile) // in bwrap, the host made it: this fails
		if err := os.Mkdir(ra.ResultFile, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "bigresult":
		n, _ := args["n"].(float64)
		b := []byte(strings.Repeat(" ", int(n)) + `{"error":"too big"}`)
		if err := os.WriteFile(ra.ResultFile, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "escape":
		// Start a child in a session of its own, out of the process
		// group, then end as asked.
		cmd := exec.Command("sleep", fmt.Sprint(args["marker"]))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "starting sleep:", err)
			os.Exit(1)
		}
		switch args["then"] {
		case "fail":
			write(ra.ResultFile, result{Error: "failed on purpose"})
		case "crash":
			os.Exit(3)
		case "hang":
			time.Sleep(time.Hour)
		default:
			ok("escaped", map[string]any{"pid": cmd.Process.Pid})
		}
	case "forkmany":
		n, _ := args["n"].(float64)
		var started []*exec.Cmd
		var firstErr string
		for range int(n) {
			cmd := exec.Command("sleep", "30")
			if err := cmd.Start(); err != nil {
				firstErr = err.Error()
				break
			}
			started = append(started, cmd)
		}
		for _, c := range started {
			c.Process.Kill()
			c.Wait()
		}
		ok("forked", map[string]any{"started": len(started), "error": firstErr})
	case "fill":
		// Write files of chunk MB into dir until told to stop or refused.
		dir, _ := args["dir"].(string)
		chunk, _ := args["chunk_mb"].(float64)
		maxMB, _ := args["max_mb"].(float64)
		buf := make([]byte, int(chunk)<<20)
		var total int64
		var ferr string
		for i := 0; total < int64(maxMB)<<20; i++ {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("fill-%d", i)))
			if err != nil {
				ferr = err.Error()
				break
			}
			n, err := f.Write(buf)
			f.Close()
			total += int64(n)
			if err != nil {
				ferr = err.Error()
				break
			}
		}
		ok("filled", map[string]any{"written": total, "error": ferr})
	case "leak":
		// Show the configuration in the form asked for.
		cfg, _ := json.Marshal(ra.ToolConfig) // escapes <, > and & as \u003c...
		switch args["form"] {
		case "data":
			ok("config", ra.ToolConfig)
		case "message":
			ok("config: "+string(cfg), nil)
		case "uescape":
			// Every character of every string as a \uXXXX escape.
			var b strings.Builder
			b.WriteString(`{"result":{"status":"success","message":"`)
			for _, v := range ra.ToolConfig {
				if s, isStr := v.(string); isStr {
					for _, u := range utf16.Encode([]rune(s)) {
						fmt.Fprintf(&b, `\\u%04x`, u)
					}
					b.WriteString(" ")
				}
			}
			b.WriteString(`","data":{"escaped":"`)
			for _, v := range ra.ToolConfig {
				if s, isStr := v.(string); isStr {
					for _, u := range utf16.Encode([]rune(s)) {
						fmt.Fprintf(&b, `\u%04X`, u)
					}
				}
			}
			b.WriteString(`"}}}`)
			os.WriteFile(ra.ResultFile, []byte(b.String()), 0o644)
		case "stderr":
			fmt.Fprintf(os.Stderr, "config %s\n", cfg)
			os.Exit(1)
		case "error":
			write(ra.ResultFile, result{Error: "config " + string(cfg)})
		case "garbage":
			os.WriteFile(ra.ResultFile, append([]byte("not json "), cfg...), 0o644)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown tool", ra.ToolName)
		os.Exit(1)
	}
}

func write(path string, r result) {
	b, err := json.Marshal(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func list(v any) []string {
	var out []string
	items, _ := v.([]any)
	for _, it := range items {
		out = append(out, fmt.Sprint(it))
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
