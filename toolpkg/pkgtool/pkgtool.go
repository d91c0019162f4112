// Package pkgtool turns tools made with the toolset library into a
// packaged tool executable, as toolpkg and the reference platform run
// them: one call in main,
//
//	func main() {
//		pkgtool.Main(forecastTool, alertsTool)
//	}
//
// and the binary speaks the protocol of a packaged tool:
//
//   - "<exe> --schema" prints {"tools": {...}}: each tool's description,
//     parameters (its JSON Schema), and the config_schema and
//     timeout_seconds given in [Options];
//   - "<exe> --schema --config FILE" does the same with FILE (a JSON
//     object: the tool configuration of one agent) on the context the
//     tools are built under, so that a tool's [toolset.WithPrepare]
//     function may edit its description or parameters from [Config] (a
//     prepare function cannot rename a tool);
//   - "<exe> runner_args.json" reads the arguments file, runs the tool
//     named by tool_name through the library's call path (the arguments
//     are validated against the tool's schema first), and writes
//     result.json at result_file. A tool's error, a panic and invalid
//     arguments are written as the platform's SDKs write them: exit 0
//     with "error" set, newlines folded to " | ". Exit code 1 means bad
//     usage or an unreadable arguments file.
//
// SIGTERM and SIGINT cancel the tool's context, so a tool that watches it
// can clean up and still write its result within the runtime's grace
// period.
//
// The same [toolset.Tool] runs in-process or packaged, unchanged: inside
// a packaged call, [FromContext] returns the call's [Invocation] (its
// configuration, output directory, input artifacts and credentials), and
// [Status] writes progress to the status pipe; in-process, FromContext
// returns nil and Status does nothing.
//
// What a handler returns becomes result.json's result: a [*Result] as it
// is; a string as the message; a [*toolset.Content] as its text parts
// (the message) and its structured value (the data), with each inline
// media part a data object of disposition inline; anything else as data
// (JSON), a non-object value wrapped as {"result": value}.
package pkgtool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/toolpkg/internal/protocol"
)

// Options configure [Run]. A nil *Options declares nothing beyond the
// tools themselves.
type Options struct {
	// ConfigSchema lists, by tool name, the configuration keys each tool
	// takes: its config_schema in --schema.
	ConfigSchema map[string][]ConfigField
	// TimeoutSeconds sets, by tool name, a tool's timeout_seconds in
	// --schema (it overrides the manifest's).
	TimeoutSeconds map[string]int
	// Instructions sets, by tool name, a tool's instructions in --schema.
	Instructions map[string]string
	// ArtifactParams names, by tool name, the parameters that take
	// artifact names: artifact_params in --schema. Each maps to whether
	// the artifact is required.
	ArtifactParams map[string]map[string]ArtifactParam
}

// ArtifactParam describes a parameter that takes the name of an
// artifact, which the runtime loads into input/ before the call.
type ArtifactParam struct {
	// Required makes the call fail when the artifact cannot be loaded.
	Required bool `json:"required,omitempty"`
	// List says the parameter takes a list of names.
	List bool `json:"is_list,omitempty"`
}

// ConfigField is one configuration key of a tool, as config_schema
// declares it.
type ConfigField struct {
	Key         string   `json:"key"`
	Type        string   `json:"type"` // string, integer or boolean
	Description string   `json:"description,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Secret      bool     `json:"secret,omitempty"`
	Default     any      `json:"default,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// Invocation is what the runtime passed to one packaged call:
// runner_args.json, as the runtime of toolpkg writes it. Its fields are
// ToolName, Args, ToolConfig, ResultFile, OutputDir (an empty directory:
// files the tool writes there are saved as artifacts), TaskID, UserID,
// SessionID, AppName, ArtifactPaths (each artifact parameter, or
// "param[i]" for a list, to the local path of its file, under input/),
// ArtifactMetadata (the same keys to an [ArtifactInfo]), StatusPipe,
// IPCSocket, OAuthToken and AuthHeaders (the credentials the deployer
// gave the tool: never log them) and VolumeMounts.
type Invocation = protocol.Invocation

// ArtifactInfo describes an input artifact: its Filename, MIMEType,
// Version and LocalPath.
type ArtifactInfo = protocol.ArtifactInfo

type invocationKey struct{}
type configKey struct{}

// FromContext returns the invocation of the packaged call ctx belongs to,
// or nil when the tool runs in-process.
func FromContext(ctx context.Context) *Invocation {
	inv, _ := ctx.Value(invocationKey{}).(*Invocation)
	return inv
}

// Config returns the tool configuration: the invocation's tool_config in
// a packaged call, the --config file's content during discovery, and nil
// in-process.
func Config(ctx context.Context) map[string]any {
	if inv := FromContext(ctx); inv != nil {
		return inv.ToolConfig
	}
	c, _ := ctx.Value(configKey{}).(map[string]any)
	return c
}

// Status reports progress of a packaged call on its status pipe, as a
// JSON line {"status": message}, best effort: it never blocks and drops
// the message when no one reads the pipe. In-process it does nothing.
//
// A tool that reports progress with [toolset.ReportProgress] instead
// reaches the status pipe the same way when packaged, and whatever
// progress callback its caller set when it runs in-process.
func Status(ctx context.Context, message string) {
	if inv := FromContext(ctx); inv != nil {
		writeStatus(inv.StatusPipe, message)
	}
}

// writeStatus writes {"status": message} to the status pipe at path,
// best effort and without blocking.
func writeStatus(path, message string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	line, _ := json.Marshal(map[string]string{"status": message})
	_, _ = f.Write(append(line, '\n'))
}

// Result is a tool result in the platform's form, for a handler that
// wants to set its status or attach data objects.
type Result struct {
	// Status is success (when empty), partial, pending or error.
	Status  string
	Message string
	// Data is inline structured data for the model.
	Data any
	// DataObjects are files or blobs the runtime stores as artifacts or
	// shows inline, as their Disposition says.
	DataObjects []DataObject
	// ErrorCode is a machine-readable code, such as AUTH_REQUIRED.
	ErrorCode string
}

// DataObject is one data object of a [Result].
type DataObject struct {
	Name    string
	Content []byte
	// MIMEType defaults to text/plain.
	MIMEType string
	// Disposition is auto (when empty), artifact, inline or
	// artifact_with_preview.
	Disposition string
	Description string
	Preview     string
}

// Main runs the tools as a packaged tool executable, with os.Args and
// the standard streams, and exits with its code. opts may follow in
// [Run]; Main declares no configuration.
func Main(tools ...toolset.Tool) {
	os.Exit(Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, nil, tools...))
}

// MainWith is [Main] with options.
func MainWith(opts *Options, tools ...toolset.Tool) {
	os.Exit(Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, opts, tools...))
}

// maxArgsFile bounds runner_args.json and a --config file.
const maxArgsFile = 64 << 20

// Run is [Main] without the exit: it serves one command line (args
// without the program name) and returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, opts *Options, tools ...toolset.Tool) int {
	if opts == nil {
		opts = &Options{}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	switch {
	case len(args) == 1 && args[0] == "--schema":
		return schema(ctx, nil, stdout, stderr, opts, tools)
	case len(args) == 3 && args[0] == "--schema" && args[1] == "--config":
		data, err := readBounded(args[2])
		if err != nil {
			fmt.Fprintf(stderr, "reading the --config file: %v\n", err)
			return 1
		}
		var cfg map[string]any
		if err := json.Unmarshal(data, &cfg); err != nil {
			fmt.Fprintf(stderr, "the --config file %s is not a JSON object: %v\n", args[2], err)
			return 1
		}
		return schema(ctx, cfg, stdout, stderr, opts, tools)
	case len(args) == 1 && !strings.HasPrefix(args[0], "-"):
		return invoke(ctx, args[0], stderr, tools)
	}
	fmt.Fprintln(stderr, "usage: <tool> --schema [--config FILE] | <tool> runner_args.json")
	return 1
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxArgsFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxArgsFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxArgsFile)
	}
	return data, nil
}

// build lists the tools as the library would offer them, under a context
// carrying cfg for their prepare functions.
func build(ctx context.Context, cfg map[string]any, inv *Invocation, tools []toolset.Tool) (*toolset.ToolList, error) {
	if inv != nil {
		ctx = context.WithValue(ctx, invocationKey{}, inv)
	} else if cfg != nil {
		ctx = context.WithValue(ctx, configKey{}, cfg)
	}
	return toolset.BuildTools(ctx, "pkgtool", toolset.NewFunction(tools...))
}

type schemaEntry struct {
	Description    string                   `json:"description"`
	Parameters     json.RawMessage          `json:"parameters"`
	ConfigSchema   []ConfigField            `json:"config_schema,omitempty"`
	TimeoutSeconds int                      `json:"timeout_seconds,omitempty"`
	Instructions   string                   `json:"instructions,omitempty"`
	ArtifactParams map[string]ArtifactParam `json:"artifact_params,omitempty"`
}

func schema(ctx context.Context, cfg map[string]any, stdout, stderr io.Writer, opts *Options, tools []toolset.Tool) int {
	list, err := build(ctx, cfg, nil, tools)
	if err != nil {
		fmt.Fprintf(stderr, "the tools cannot be listed: %v\n", err)
		return 1
	}
	// The tools in declaration order, which toolpkg keeps for the model.
	var b []byte
	b = append(b, `{"tools":{`...)
	for i, t := range list.Tools() {
		params, err := t.ParametersJSON()
		if err != nil {
			fmt.Fprintf(stderr, "tool %q: parameters: %v\n", t.Name, err)
			return 1
		}
		name := t.Name
		e, err := json.Marshal(schemaEntry{
			Description: t.Description, Parameters: params,
			ConfigSchema: opts.ConfigSchema[name], TimeoutSeconds: opts.TimeoutSeconds[name],
			Instructions: opts.Instructions[name], ArtifactParams: opts.ArtifactParams[name],
		})
		if err != nil {
			fmt.Fprintf(stderr, "tool %q: encoding its schema: %v\n", t.Name, err)
			return 1
		}
		k, _ := json.Marshal(name)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, k...), ':'), e...)
	}
	b = append(b, "}}"...)
	b = append(b, '\n')
	if _, err := stdout.Write(b); err != nil {
		return 1
	}
	return 0
}

// resultFile is result.json.
type resultFile struct {
	Result *wireResult `json:"result,omitempty"`
	Error  string      `json:"error"`
}

type wireResult struct {
	Schema        string       `json:"_schema"`
	SchemaVersion string       `json:"_schema_version"`
	Status        string       `json:"status"`
	Message       string       `json:"message"`
	Data          any          `json:"data"`
	DataObjects   []wireObject `json:"data_objects"`
	ErrorCode     *string      `json:"error_code"`
}

type wireObject struct {
	Name        string `json:"name"`
	Content     string `json:"content"`
	IsBinary    bool   `json:"is_binary"`
	MIMEType    string `json:"mime_type"`
	Disposition string `json:"disposition"`
	Description string `json:"description,omitempty"`
	Preview     string `json:"preview,omitempty"`
}

func invoke(ctx context.Context, argsPath string, stderr io.Writer, tools []toolset.Tool) int {
	data, err := readBounded(argsPath)
	if err != nil {
		fmt.Fprintf(stderr, "reading the arguments file: %v\n", err)
		return 1
	}
	var inv Invocation
	if err := json.Unmarshal(data, &inv); err != nil {
		fmt.Fprintf(stderr, "the arguments file %s is not valid runner arguments: %v\n", argsPath, err)
		return 1
	}
	if inv.ResultFile == "" {
		fmt.Fprintf(stderr, "the arguments file %s names no result_file\n", argsPath)
		return 1
	}
	if inv.ToolConfig == nil {
		inv.ToolConfig = map[string]any{}
	}
	rf := call(ctx, &inv, tools)
	b, err := json.Marshal(rf)
	if err != nil {
		b, _ = json.Marshal(resultFile{Error: fold("encoding the result: " + err.Error())})
	}
	if err := os.WriteFile(inv.ResultFile, b, 0o600); err != nil {
		fmt.Fprintf(stderr, "writing %s: %v\n", inv.ResultFile, err)
		return 1
	}
	return 0
}

// call runs the tool and returns result.json's content.
func call(ctx context.Context, inv *Invocation, tools []toolset.Tool) (rf resultFile) {
	defer func() {
		if p := recover(); p != nil {
			rf = resultFile{Error: fold(fmt.Sprintf("the tool panicked: %v", p))}
		}
	}()
	list, err := build(ctx, inv.ToolConfig, inv, tools)
	if err != nil {
		return resultFile{Error: fold(err.Error())}
	}
	if _, ok := list.Lookup(inv.ToolName); !ok {
		return resultFile{Error: fold(fmt.Sprintf("no tool %q in this executable; its tools: %s", inv.ToolName, strings.Join(list.Names(), ", ")))}
	}
	args := inv.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	ctx = context.WithValue(ctx, invocationKey{}, inv)
	if inv.StatusPipe != "" {
		ctx = toolset.WithProgress(ctx, func(p toolset.Progress) { writeStatus(inv.StatusPipe, p.Message) })
	}
	out, err := list.Execute(ctx, toolset.ToolCall{ID: inv.TaskID, Name: inv.ToolName, Args: args})
	if err != nil {
		if text, ok := toolset.ErrorText(err); ok {
			return resultFile{Error: fold(text)}
		}
		return resultFile{Error: fold(err.Error())}
	}
	r, err := toResult(out)
	if err != nil {
		return resultFile{Error: fold(err.Error())}
	}
	return resultFile{Result: r}
}

// fold puts an error message on one line, as the SDKs do.
func fold(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Join(strings.Split(s, "\n"), " | ")
}

func toResult(out any) (*wireResult, error) {
	r := &wireResult{Schema: "ToolResult", SchemaVersion: "1.0", Status: "success", DataObjects: []wireObject{}}
	switch v := out.(type) {
	case *Result:
		if v == nil {
			break
		}
		if v.Status != "" {
			r.Status = v.Status
		}
		r.Message = v.Message
		r.Data = dataObject(v.Data)
		for _, o := range v.DataObjects {
			r.DataObjects = append(r.DataObjects, wire(o))
		}
		if v.ErrorCode != "" {
			code := v.ErrorCode
			r.ErrorCode = &code
		}
	case string:
		r.Message = v
	case *toolset.Content:
		if v == nil {
			break
		}
		var texts []string
		for i, p := range v.Parts {
			switch {
			case p.IsText():
				texts = append(texts, p.Text)
			case p.Data != nil:
				r.DataObjects = append(r.DataObjects, wire(DataObject{
					Name: fmt.Sprintf("part-%d", i), Content: p.Data, MIMEType: p.MIMEType, Disposition: "inline",
				}))
			default:
				texts = append(texts, fmt.Sprintf("[resource %s (%s)]", p.URI, p.MIMEType))
			}
		}
		r.Message = strings.Join(texts, "\n")
		r.Data = dataObject(v.Structured)
	case nil:
	default:
		r.Data = dataObject(v)
	}
	// The data must encode; say so here rather than write a broken file.
	if _, err := json.Marshal(r.Data); err != nil {
		return nil, fmt.Errorf("encoding the tool's result: %w", err)
	}
	return r, nil
}

// dataObject returns v as result.json's data, which the SDKs keep an
// object: anything else is wrapped as {"result": v}.
func dataObject(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v // reported by the caller
	}
	var probe any
	if json.Unmarshal(b, &probe) == nil {
		if _, ok := probe.(map[string]any); ok {
			return json.RawMessage(b)
		}
	}
	return map[string]any{"result": json.RawMessage(b)}
}

func wire(o DataObject) wireObject {
	w := wireObject{Name: o.Name, MIMEType: o.MIMEType, Disposition: o.Disposition, Description: o.Description, Preview: o.Preview}
	if w.MIMEType == "" {
		w.MIMEType = "text/plain"
	}
	if w.Disposition == "" {
		w.Disposition = "auto"
	}
	if isText(o.Content) {
		w.Content = string(o.Content)
	} else {
		w.Content = base64.StdEncoding.EncodeToString(o.Content)
		w.IsBinary = true
	}
	return w
}

func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range string(b) {
		if c == '\uFFFD' || (c < 0x20 && c != '\n' && c != '\r' && c != '\t') {
			return false
		}
	}
	return true
}
