// Package protocol declares what crosses the boundary between the toolpkg
// runtime and a package's process, so that the runtime, which writes it,
// and the pkgtool SDK, which reads it, share one declaration. The
// protocol is described in toolpkg's PROTOCOL.md.
package protocol

import "encoding/json"

// InvocationFile is the name of the file a call's invocation is written
// to, in the call's work directory; its path is the executable's one
// argument.
const InvocationFile = "runner_args.json"

// Invocation is runner_args.json: what the runtime passes to one call of
// a packaged tool. The runtime writes every field, empty when it does not
// offer what the field stands for.
type Invocation struct {
	// ToolName is the tool's name from --schema, without the toolset's.
	ToolName string `json:"tool_name"`
	// Args are the model's arguments, checked against the parameters.
	Args json.RawMessage `json:"args"`
	// ToolConfig is the tool's resolved configuration, secrets included.
	ToolConfig map[string]any `json:"tool_config"`
	// ResultFile is where the tool writes result.json.
	ResultFile string `json:"result_file"`
	// OutputDir is an empty directory: files the tool writes there are
	// saved as artifacts by the runtime.
	OutputDir string `json:"output_dir"`
	TaskID    string `json:"task_id"`
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id"`
	AppName   string `json:"app_name"`
	// ArtifactPaths maps each artifact parameter (or "param[i]" for a
	// list) to the local path of its file, under input/.
	ArtifactPaths map[string]string `json:"artifact_paths"`
	// ArtifactMetadata maps the same keys to each artifact's metadata.
	ArtifactMetadata map[string]ArtifactInfo `json:"artifact_metadata"`
	// StatusPipe is the FIFO the tool may write progress lines to.
	StatusPipe string `json:"status_pipe"`
	// IPCSocket is a Unix socket speaking llm/call, or empty.
	IPCSocket string `json:"ipc_socket"`
	// OAuthToken and AuthHeaders are the credentials the deployer gave
	// the tool. Never log them.
	OAuthToken  string            `json:"tool_oauth_token"`
	AuthHeaders map[string]string `json:"tool_auth_headers"`
	// VolumeMounts is the volume_mounts object, which maps a tool's
	// volume parameters to their mounts, as sent: this runtime mounts
	// none and sends {}. It is kept raw so that a runtime that sends
	// something else (an older one sent []) does not make the whole file
	// unreadable.
	VolumeMounts json.RawMessage `json:"volume_mounts"`
}

// ArtifactInfo describes an input artifact: one value of
// artifact_metadata.
type ArtifactInfo struct {
	Filename  string `json:"filename"`
	MIMEType  string `json:"mime_type"`
	Version   int    `json:"version"`
	LocalPath string `json:"local_path"`
}

// NoVolumeMounts is the volume_mounts of a runtime that mounts no volume.
var NoVolumeMounts = json.RawMessage(`{}`)
