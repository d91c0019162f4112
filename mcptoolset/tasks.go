package mcptoolset

import (
	"encoding/json"
	"fmt"

	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ExtensionTasks is the identifier of the MCP Tasks extension (SEP-2663,
// 2026-07-28): a server may answer a tools/call with a task, which the
// client polls with tasks/get and may cancel with tasks/cancel. A
// [Server] declares it, and so does a [Toolset]'s client; see the package
// documentation's "Tasks" section.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// MetaLongRunning is the tool metadata key that marks a tool as long
// running: a [Server] serves a call of a tool whose value is "true" as a
// task to a client that declared [ExtensionTasks] (see [WithTasks]).
const MetaLongRunning = "mcp.longRunning"

// MetaTaskProgress is the _meta key under which a [Server]'s tasks/get
// result carries the last progress the tool reported: an object with
// "seq" (a count of the reports so far), "message" and, when the tool knew
// it, "fraction" (0 to 1). The status message carries the report's
// message too, for clients that do not know the key.
const MetaTaskProgress = "io.gotoolset/progress"

// metaRelatedTask is the _meta key (from the 2025-11-25 revision) naming
// the task a message relates to. A Server puts it on its CreateTaskResult
// too, where the SDK's client, which decodes a tools/call answer as a
// CallToolResult only, keeps it.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// The statuses of a task (SEP-2663), as [TaskError.Status] reports them.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
	// TaskExpired is not a status of the protocol: a [TaskError] reports
	// it for a task the server no longer knows (tasks/get answered "not
	// found", as a server does once a task's retention ran out) or that
	// did not end within [WithMaxTaskWait].
	TaskExpired = "expired"
)

// Method names of the Tasks extension.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
)

// maxTaskIDBytes bounds a task ID a request may name; the server's own
// are far shorter.
const maxTaskIDBytes = 256

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string          `json:"taskId"`
	RequestState   string          `json:"requestState,omitempty"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// taskWire is a Task on the wire: a CreateTaskResult (resultType "task"),
// a tasks/get result (resultType "complete"), and, with only ResultType
// set, the acknowledgement of tasks/cancel and tasks/update.
type taskWire struct {
	mcp.ResultBase
	ResultType    string          `json:"resultType,omitempty"`
	TaskID        string          `json:"taskId,omitempty"`
	Status        string          `json:"status,omitempty"`
	StatusMessage string          `json:"statusMessage,omitempty"`
	CreatedAt     string          `json:"createdAt,omitempty"`
	LastUpdatedAt string          `json:"lastUpdatedAt,omitempty"`
	TTLSeconds    *int64          `json:"ttlSeconds,omitempty"`
	PollInterval  int64           `json:"pollIntervalMilliseconds,omitempty"`
	RequestState  string          `json:"requestState,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         *taskRPCError   `json:"error,omitempty"`
}

// taskRPCError is the JSON-RPC error of a failed task.
type taskRPCError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// TaskError reports a remote tool call that the server ran as a task
// (see [ExtensionTasks]) and that did not complete: it failed with a
// JSON-RPC error, was cancelled, or expired. A [Toolset] returns it
// wrapped in a [*ServerError] for "call tool"; errors.As finds it.
type TaskError struct {
	// Server is the server's name (see [WithName]).
	Server string
	// Tool is the tool's name on the server.
	Tool string
	// TaskID is the server's ID of the task.
	TaskID string
	// Status is [TaskFailed], [TaskCancelled] or [TaskExpired].
	Status string
	// Message is the server's status message or error message, cut to
	// 1 KiB; it may be empty.
	Message string
	// Code is the JSON-RPC error code of a failed task, or 0.
	Code int64
}

// Error implements error.
func (e *TaskError) Error() string {
	msg := ""
	if e.Message != "" {
		msg = ": " + e.Message
	}
	return fmt.Sprintf("mcptoolset: task %s of tool %q on MCP server %q %s%s",
		textcut.Clip(e.TaskID, 80), textcut.Clip(e.Tool, maxLoggedName), e.Server, e.Status, msg)
}
