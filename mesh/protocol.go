package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/gotoolset/toolset/toolpkg"
)

// JSONRPCVersion is the "jsonrpc" member of every message.
const JSONRPCVersion = "2.0"

// The methods of SAM's remote-tool protocol, and the extensions of this
// package (MethodCancel, MethodCatalog, MethodSync).
const (
	MethodInvoke      = "sam_remote_tool/invoke"
	MethodStatus      = "sam_remote_tool/status"
	MethodInit        = "sam_remote_tool/init"
	MethodInitRequest = "sam_remote_tool/init_request"
	MethodRemoved     = "sam_remote_tool/removed"

	// MethodCancel is an extension: the caller gives up a call.
	MethodCancel = "sam_remote_tool/cancel"
	// MethodCatalog is an extension: a runtime's tools, on request.
	MethodCatalog = "sam_remote_tool/catalog"
	// MethodSync is an extension: the platform's package notification.
	MethodSync = "toolset/sync"
	// MethodSyncReport is an extension: a runtime's sync result.
	MethodSyncReport = "toolset/sync_report"
)

// SAM's error codes, the "code" of an [RPCError].
const (
	CodeSandboxTimeout       = "SANDBOX_TIMEOUT"
	CodeSandboxFailed        = "SANDBOX_FAILED"
	CodeToolNotFound         = "TOOL_NOT_FOUND"
	CodeToolNotAvailable     = "TOOL_NOT_AVAILABLE"
	CodeImportError          = "IMPORT_ERROR"
	CodeExecutionError       = "EXECUTION_ERROR"
	CodeToolError            = "TOOL_ERROR"
	CodeArtifactError        = "ARTIFACT_ERROR"
	CodeInvalidRequest       = "INVALID_REQUEST"
	CodeInternalError        = "INTERNAL_ERROR"
	CodeInitError            = "INIT_ERROR"
	CodeAuthenticationFailed = "AUTHENTICATION_FAILED"
	CodeResourceExhausted    = "RESOURCE_EXHAUSTED"
)

// Headers of an invoke or init_request: SAM's replyTo and statusTo user
// properties.
const (
	HeaderReplyTo  = "replyTo"
	HeaderStatusTo = "statusTo"
)

// Size bounds of what crosses the broker. Every message is checked against
// them before it is decoded.
const (
	// MaxMessageBytes bounds every message this package sends or reads
	// (the embedded server's max_payload is DefaultMaxPayload, above it).
	// Larger bytes go by object reference.
	MaxMessageBytes = 1 << 20
	// MaxJSONDepth bounds the nesting of a message's JSON.
	MaxJSONDepth = 64
	// MaxIDBytes bounds a correlation ID, an agent name and a runtime ID:
	// each is one subject token.
	MaxIDBytes = 128
	// MaxStatusTextBytes bounds a status notification's status_text.
	MaxStatusTextBytes = 4096
	// MaxErrorMessageBytes bounds an error's message.
	MaxErrorMessageBytes = 16 << 10
	// MaxTimeoutSeconds bounds an invoke's timeout_seconds.
	MaxTimeoutSeconds = 24 * 3600
	// MaxTools bounds the tools of one toolset in a catalog.
	MaxTools = 1024
	// MaxToolsets bounds the toolsets of one catalog.
	MaxToolsets = 4096
	// MaxScopes bounds the scopes of an invoke and of an init answer.
	MaxScopes = 64
	// MaxScopeBytes bounds one scope name.
	MaxScopeBytes = 256
	// MaxInputArtifacts bounds the input artifacts of one invoke,
	// preloaded and referenced together.
	MaxInputArtifacts = 64
	// MaxInlineArtifactLimit bounds one preloaded artifact, decoded.
	MaxInlineArtifactLimit = 512 << 10
	// MaxInlineArtifactsTotal bounds the preloaded artifacts of one
	// invoke together, decoded.
	MaxInlineArtifactsTotal = MaxMessageBytes * 3 / 4
)

// Request is a JSON-RPC request (ID set) or notification (ID empty).
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      string          `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC response: Result or Error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      string          `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error with one of SAM's codes (CodeToolError...).
type RPCError struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("mesh: %s: %s", e.Code, e.Message)
}

// ErrorData is the "data" of an [RPCError] this package sends (an
// extension; a SAM peer ignores it).
type ErrorData struct {
	// Toolset and Tool name the tool, Tool without the toolset's prefix.
	Toolset string `json:"toolset,omitempty"`
	Tool    string `json:"tool,omitempty"`
	// ModelText is what the model would have read in process.
	ModelText string `json:"model_text,omitempty"`
	// ToolErrorCode is result.json's error_code of a tool's failure.
	ToolErrorCode string `json:"tool_error_code,omitempty"`
	// TimedOut is set with CodeSandboxTimeout.
	TimedOut bool `json:"timed_out,omitempty"`
	// TimeoutSeconds is the timeout that was reached.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// ExecutionTimeMS is how long the call ran.
	ExecutionTimeMS int64 `json:"execution_time_ms,omitempty"`
	// Problems list what is wrong with a configuration (CodeInitError).
	Problems []string `json:"problems,omitempty"`
	// Version is the package version the runtime holds, or was asked for.
	Version int `json:"version,omitempty"`
	// Runtime is the ID of the runtime that answered.
	Runtime string `json:"runtime,omitempty"`
	// Unavailable is set with CodeInitError when the configuration
	// leaves the tool out (a required value missing) rather than being
	// wrong: the toolset's other tools stay. MissingKeys lists the
	// required keys without a value.
	Unavailable bool     `json:"unavailable,omitempty"`
	MissingKeys []string `json:"missing_keys,omitempty"`
	// MissingScopes lists the required scopes an invoke did not carry.
	MissingScopes []string `json:"missing_scopes,omitempty"`
	// ArtifactParam is the artifact parameter of a CodeArtifactError,
	// Problems its one reason.
	ArtifactParam string `json:"artifact_param,omitempty"`
}

// InvokeParams are the params of MethodInvoke, SAM's fields.
type InvokeParams struct {
	TaskID             string                       `json:"task_id"`
	ToolName           string                       `json:"tool_name"`
	Args               json.RawMessage              `json:"args"`
	ToolConfig         map[string]any               `json:"tool_config,omitempty"`
	AppName            string                       `json:"app_name,omitempty"`
	UserID             string                       `json:"user_id,omitempty"`
	SessionID          string                       `json:"session_id,omitempty"`
	PreloadedArtifacts map[string]PreloadedArtifact `json:"preloaded_artifacts,omitempty"`
	ArtifactReferences map[string]ArtifactReference `json:"artifact_references,omitempty"`
	TimeoutSeconds     float64                      `json:"timeout_seconds,omitempty"`
	SandboxProfile     string                       `json:"sandbox_profile,omitempty"`

	// Version is an extension: the package version the caller listed
	// (also in the subject, invoke.{tool}.v{N}); 0 means any.
	Version int `json:"version,omitempty"`
	// ToolsetConfig is an extension: the agent's configuration of the
	// whole toolset (toolpkg.Config), so that the runtime applies the
	// same precedence as in process. ToolConfig, when set alone, is the
	// per-tool overlay.
	ToolsetConfig *WireConfig `json:"toolset_config,omitempty"`
	// Scopes is an extension: the scopes the caller's run carries
	// (toolpkg.Scopes) of those the tool requires; the runtime refuses
	// the call when they do not cover the tool's required_scopes.
	Scopes []string `json:"scopes,omitempty"`
	// Approved is an extension: the tool requires a human's approval
	// (InitParams.RequiresApproval) and the caller's run gave it. The
	// runtime refuses a call of such a tool without it.
	Approved bool `json:"approved,omitempty"`
	// ArtifactsResolved is an extension: the caller resolved every
	// artifact the arguments name for the tool's artifact parameters,
	// into PreloadedArtifacts or ArtifactReferences; one in neither
	// does not exist, and the runtime looks for it nowhere else.
	ArtifactsResolved bool `json:"artifacts_resolved,omitempty"`
}

// WireConfig is a toolpkg.Config on the wire.
type WireConfig struct {
	Toolset map[string]any            `json:"toolset,omitempty"`
	Tools   map[string]map[string]any `json:"tools,omitempty"`
	Exclude []string                  `json:"exclude,omitempty"`
}

// PreloadedArtifact is an input artifact carried inline, SAM's fields.
type PreloadedArtifact struct {
	Filename string            `json:"filename"`
	Content  string            `json:"content"` // base64
	MIMEType string            `json:"mime_type,omitempty"`
	Version  int               `json:"version,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// ArtifactReference names an input artifact in the shared artifact store,
// SAM's fields, with the extension SourceVersion.
type ArtifactReference struct {
	Filename string `json:"filename"`
	Version  int    `json:"version,omitempty"`
	// SourceVersion is an extension: the version of the artifact in the
	// caller's own store, when the caller copied it into the shared store
	// (where Version counts the copies). The tool is told SourceVersion,
	// as it would be in process.
	SourceVersion int `json:"source_version,omitempty"`
}

// InvokeResult is the result of MethodInvoke, SAM's fields.
type InvokeResult struct {
	ToolResult       *ToolResult       `json:"tool_result"`
	ExecutionTimeMS  int64             `json:"execution_time_ms"`
	TimedOut         bool              `json:"timed_out"`
	CreatedArtifacts []CreatedArtifact `json:"created_artifacts,omitempty"`
}

// CreatedArtifact is an artifact a call saved, SAM's fields (the JSON
// form of toolpkg.ArtifactRef).
type CreatedArtifact struct {
	Filename    string `json:"filename"`
	Version     int    `json:"version"`
	MIMEType    string `json:"mime_type,omitempty"`
	SizeBytes   int64  `json:"size_bytes"`
	Description string `json:"description,omitempty"`
}

// ToolResult is tool_result: what an in-process call of a packaged tool
// returns, so that the model reads the same text either way. Text is the
// model's text (toolpkg.Result.ModelText or toolset.Content.ModelText);
// the other fields are those of a *toolpkg.Result, set when the call
// returned one.
type ToolResult struct {
	Text string `json:"text"`
	// Kind is "result" (a *toolpkg.Result), "content" (a
	// *toolset.Content) or "text".
	Kind        string          `json:"kind"`
	Status      string          `json:"status,omitempty"`
	Message     string          `json:"message,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
	DataObjects json.RawMessage `json:"data_objects,omitempty"`
	ErrorCode   string          `json:"error_code,omitempty"`
	Omitted     []string        `json:"omitted,omitempty"`
	// Structured is the Structured value of a *toolset.Content, as JSON.
	Structured json.RawMessage `json:"structured,omitempty"`
	// Truncated says Text was cut to the runtime's output cap.
	Truncated bool `json:"truncated,omitempty"`
}

// The kinds of a ToolResult.
const (
	ResultKindResult  = "result"
	ResultKindContent = "content"
	ResultKindText    = "text"
)

// StatusParams are the params of MethodStatus, SAM's fields, with the
// extensions State and Fraction.
type StatusParams struct {
	TaskID     string `json:"task_id"`
	StatusText string `json:"status_text"`
	// Timestamp is RFC 3339 with nanoseconds.
	Timestamp string `json:"timestamp"`

	// State is an extension: StateAccepted when a runtime takes the
	// call, StateRunning on every heartbeat, StateProgress (or "") for
	// a line of the status pipe.
	State string `json:"state,omitempty"`
	// Fraction is an extension: how much is done, 0 to 1, negative
	// when unknown; set with StateProgress.
	Fraction *float64 `json:"fraction,omitempty"`
	// Runtime is an extension: the ID of the runtime that runs the call.
	Runtime string `json:"runtime,omitempty"`
}

// The states of a StatusParams.
const (
	StateAccepted = "accepted"
	StateRunning  = "running"
	StateProgress = "progress"
)

// InitParams are the params of MethodInit, SAM's fields, and the result of
// an init_request.
type InitParams struct {
	ToolName           string                           `json:"tool_name"`
	Description        string                           `json:"description"`
	Parameters         json.RawMessage                  `json:"parameters"`
	ArtifactParams     map[string]toolpkg.ArtifactParam `json:"artifact_params,omitempty"`
	Instructions       string                           `json:"instructions,omitempty"`
	ConfigSchema       []toolpkg.ConfigField            `json:"config_schema,omitempty"`
	CtxFacadeParamName string                           `json:"ctx_facade_param_name,omitempty"`

	// Extensions.
	Toolset        string `json:"toolset,omitempty"`
	Tool           string `json:"tool,omitempty"` // name inside the package
	Version        int    `json:"version,omitempty"`
	Runtime        string `json:"runtime,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
	// Auth says the tool takes the run's credentials (toolpkg.ToolInfo.Auth).
	Auth bool `json:"auth,omitempty"`
	// RequiresApproval says a call waits for a human's approval (the
	// reserved configuration key hil), and RequiredScopes lists the
	// scopes a run must carry to see the tool (required_scopes): the
	// effective values under the configuration of an init_request,
	// toolpkg.ToolPolicy. A broadcast init, made without an agent's
	// configuration, leaves them out.
	RequiresApproval bool     `json:"requires_approval,omitempty"`
	RequiredScopes   []string `json:"required_scopes,omitempty"`
}

// InitRequestParams are the params of MethodInitRequest, SAM's fields, with
// the extensions Version and ToolsetConfig (see InvokeParams).
type InitRequestParams struct {
	ToolName      string         `json:"tool_name"`
	ToolConfig    map[string]any `json:"tool_config,omitempty"`
	Version       int            `json:"version,omitempty"`
	ToolsetConfig *WireConfig    `json:"toolset_config,omitempty"`
}

// RemovedParams are the params of MethodRemoved, SAM's field, with the
// extensions Version and Runtime.
type RemovedParams struct {
	ToolName string `json:"tool_name"`
	Version  int    `json:"version,omitempty"`
	Runtime  string `json:"runtime,omitempty"`
}

// CancelParams are the params of MethodCancel (an extension), sent on
// the cancel subject of the call.
type CancelParams struct {
	TaskID string `json:"task_id,omitempty"`
}

// Catalog is what a runtime answers on the catalog subject (an extension):
// every toolset version it serves, with its tools under their default
// configuration.
type Catalog struct {
	Runtime  string           `json:"runtime"`
	Toolsets []CatalogToolset `json:"toolsets"`
}

// CatalogToolset is one toolset of a Catalog.
type CatalogToolset struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
	// Status is ready or failed (toolpkg.Status).
	Status string       `json:"status"`
	Tools  []InitParams `json:"tools,omitempty"`
	Errors []string     `json:"errors,omitempty"`
	// Unavailable lists, by tool, the tools the default configuration
	// leaves out (a required value missing), and why.
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// SyncNotice is the params of MethodSync: a toolset's version was
// published (Removed false) or the toolset was removed.
type SyncNotice struct {
	Toolset string `json:"toolset"`
	Version int    `json:"version,omitempty"`
	Removed bool   `json:"removed,omitempty"`
	// Digest is the object store's digest of the package ("SHA-256=...").
	Digest string `json:"digest,omitempty"`
}

// SyncReport is what a runtime says about one version it synced, on the
// sync_report subject.
type SyncReport struct {
	Runtime string   `json:"runtime"`
	Toolset string   `json:"toolset"`
	Version int      `json:"version"`
	Status  string   `json:"status"` // SyncReady or SyncFailed
	Tools   []string `json:"tools,omitempty"`
	Errors  []string `json:"errors,omitempty"`
}

// The statuses of a SyncReport.
const (
	SyncReady   = "ready"
	SyncFailed  = "failed"
	SyncRemoved = "removed"
)

// ErrTooLarge reports a message above its size bound.
var ErrTooLarge = errors.New("mesh: message too large")

// ErrTooDeep reports JSON nested deeper than MaxJSONDepth.
var ErrTooDeep = errors.New("mesh: JSON nested too deep")

// Decode decodes the JSON data into v after checking that it is at most
// max bytes (MaxMessageBytes when max <= 0) and nested at most
// MaxJSONDepth levels. Unknown fields are ignored, as a SAM peer's
// extensions must be; a trailing value after the first is an error.
func Decode(data []byte, max int, v any) error {
	if max <= 0 {
		max = MaxMessageBytes
	}
	if len(data) > max {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(data), max)
	}
	if err := checkDepth(data, MaxJSONDepth); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("mesh: malformed JSON: %w", err)
	}
	if dec.More() {
		return errors.New("mesh: malformed JSON: data after the value")
	}
	return nil
}

// checkDepth reports JSON nested more than max levels, without decoding.
func checkDepth(data []byte, max int) error {
	depth := 0
	inString, escaped := false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				return fmt.Errorf("%w: more than %d levels", ErrTooDeep, max)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// DecodeRequest decodes a request or notification with Decode and checks
// its envelope: jsonrpc "2.0", the method wanted, an ID that can be a
// subject token when idRequired.
func DecodeRequest(data []byte, method string, idRequired bool) (*Request, error) {
	var req Request
	if err := Decode(data, MaxMessageBytes, &req); err != nil {
		return nil, err
	}
	if req.JSONRPC != JSONRPCVersion {
		return nil, fmt.Errorf("mesh: jsonrpc is %q, want %q", cut(req.JSONRPC, 16), JSONRPCVersion)
	}
	if req.Method != method {
		return nil, fmt.Errorf("mesh: method is %q, want %q", cut(req.Method, 64), method)
	}
	if idRequired || req.ID != "" {
		if err := CheckID("id", req.ID); err != nil {
			return nil, err
		}
	}
	return &req, nil
}

// DecodeResponse decodes a response with Decode and checks its envelope.
func DecodeResponse(data []byte) (*Response, error) {
	var resp Response
	if err := Decode(data, MaxMessageBytes, &resp); err != nil {
		return nil, err
	}
	if resp.JSONRPC != JSONRPCVersion {
		return nil, fmt.Errorf("mesh: jsonrpc is %q, want %q", cut(resp.JSONRPC, 16), JSONRPCVersion)
	}
	if err := CheckID("id", resp.ID); err != nil {
		return nil, err
	}
	if (resp.Error == nil) == (resp.Result == nil) {
		return nil, errors.New("mesh: a response holds exactly one of result and error")
	}
	if resp.Error != nil && len(resp.Error.Message) > MaxErrorMessageBytes {
		resp.Error.Message = cut(resp.Error.Message, MaxErrorMessageBytes)
	}
	return &resp, nil
}

// encodeRequest marshals a request or notification with params p, bounded
// by MaxMessageBytes.
func encodeRequest(id, method string, p any) ([]byte, error) {
	params, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("mesh: encode %s: %w", method, err)
	}
	return bounded(json.Marshal(Request{JSONRPC: JSONRPCVersion, ID: id, Method: method, Params: params}))
}

// encodeResult marshals a response with result r.
func encodeResult(id string, r any) ([]byte, error) {
	res, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("mesh: encode result: %w", err)
	}
	return bounded(json.Marshal(Response{JSONRPC: JSONRPCVersion, ID: id, Result: res}))
}

// encodeError marshals an error response; data may be nil.
func encodeError(id, code, message string, data *ErrorData) ([]byte, error) {
	e := &RPCError{Code: code, Message: cut(message, MaxErrorMessageBytes)}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return nil, fmt.Errorf("mesh: encode error data: %w", err)
		}
		e.Data = raw
	}
	return bounded(json.Marshal(Response{JSONRPC: JSONRPCVersion, ID: id, Error: e}))
}

func bounded(b []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, fmt.Errorf("mesh: encode: %w", err)
	}
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(b), MaxMessageBytes)
	}
	return b, nil
}

// Timestamp formats t as a StatusParams.Timestamp.
func Timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// cut returns s cut to at most n bytes at a character boundary.
func cut(s string, n int) string { return textcut.Prefix(s, n) }
