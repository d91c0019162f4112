package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bytes of runner_args.json are what every packaged tool, built with
// any SDK, reads: the keys, their order and the JSON type of each value
// are pinned here.
func TestInvocationJSONIsPinned(t *testing.T) {
	full := Invocation{
		ToolName: "forecast", Args: json.RawMessage(`{"city":"Oslo"}`),
		ToolConfig: map[string]any{"api_url": "https://api.example", "port": 443},
		ResultFile: "/w/result.json", OutputDir: "/w/output",
		TaskID: "task-1", UserID: "u", SessionID: "s", AppName: "app",
		ArtifactPaths: map[string]string{"doc": "/w/input/a.txt", "files[0]": "/w/input/b.csv"},
		ArtifactMetadata: map[string]ArtifactInfo{
			"doc": {Filename: "a.txt", MIMEType: "text/plain", Version: 2, LocalPath: "/w/input/a.txt"},
		},
		StatusPipe: "/w/status.pipe", IPCSocket: "/w/ipc.sock",
		OAuthToken: "tok", AuthHeaders: map[string]string{"Authorization": "Bearer x"},
		VolumeMounts: NoVolumeMounts,
	}
	b, err := json.Marshal(full)
	require.NoError(t, err)
	assert.Equal(t, `{"tool_name":"forecast","args":{"city":"Oslo"},`+
		`"tool_config":{"api_url":"https://api.example","port":443},`+
		`"result_file":"/w/result.json","output_dir":"/w/output",`+
		`"task_id":"task-1","user_id":"u","session_id":"s","app_name":"app",`+
		`"artifact_paths":{"doc":"/w/input/a.txt","files[0]":"/w/input/b.csv"},`+
		`"artifact_metadata":{"doc":{"filename":"a.txt","mime_type":"text/plain","version":2,"local_path":"/w/input/a.txt"}},`+
		`"status_pipe":"/w/status.pipe","ipc_socket":"/w/ipc.sock",`+
		`"tool_oauth_token":"tok","tool_auth_headers":{"Authorization":"Bearer x"},`+
		`"volume_mounts":{}}`, string(b))

	// What the runtime writes for a call with no artifacts, credentials
	// or IPC socket: every key present, the empty ones empty.
	bare := Invocation{ToolName: "t", Args: json.RawMessage(`{}`), ToolConfig: map[string]any{},
		ArtifactPaths: map[string]string{}, ArtifactMetadata: map[string]ArtifactInfo{}, AuthHeaders: map[string]string{},
		VolumeMounts: NoVolumeMounts}
	b, err = json.Marshal(bare)
	require.NoError(t, err)
	assert.Equal(t, `{"tool_name":"t","args":{},"tool_config":{},"result_file":"","output_dir":"",`+
		`"task_id":"","user_id":"","session_id":"","app_name":"","artifact_paths":{},"artifact_metadata":{},`+
		`"status_pipe":"","ipc_socket":"","tool_oauth_token":"","tool_auth_headers":{},"volume_mounts":{}}`, string(b))

	var back Invocation
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, bare, back)
}

// A file from a runtime that sent volume_mounts as a list, or left keys
// out, still reads: the tool gets what it needs from the rest.
func TestInvocationReadsWhatOtherRuntimesSend(t *testing.T) {
	var inv Invocation
	require.NoError(t, json.Unmarshal([]byte(`{"tool_name":"t","args":{"a":1},"result_file":"/r","volume_mounts":[]}`), &inv))
	assert.Equal(t, "t", inv.ToolName)
	assert.Equal(t, "/r", inv.ResultFile)
	assert.JSONEq(t, `[]`, string(inv.VolumeMounts))

	// A value of the wrong JSON type is an error, not a silent zero.
	err := json.Unmarshal([]byte(`{"tool_name":"t","artifact_paths":{"doc":7}}`), &inv)
	require.Error(t, err)
}
