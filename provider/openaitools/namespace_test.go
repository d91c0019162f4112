package openaitools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/gotoolset/toolset/toolsettest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Prefixed toolset goes out as a namespace of its own names; the
// model's namespaced call runs the prefixed tool, and a call in an
// unknown namespace is an error the model sees.
func TestResponsesNamespaces(t *testing.T) {
	query := toolset.NewTool("query", "Run a query.", func(_ context.Context, in struct {
		SQL string `json:"sql"`
	}) (string, error) {
		return "rows for " + in.SQL, nil
	})
	db := toolset.NewFunction(query).Prefixed("db")
	whoami := toolset.NewTool("whoami", "The current user.", func(context.Context, struct{}) (string, error) { return "ann", nil })
	m, client := startCanned(t,
		`[{"type":"function_call","id":"fc1","call_id":"c1","namespace":"db","name":"query","arguments":"{\"sql\":\"select 1\"}","status":"completed"},`+
			`{"type":"function_call","id":"fc2","call_id":"c2","namespace":"nope","name":"query","arguments":"{}","status":"completed"}]`,
		answer)
	opt := openaitools.WithNamespace(db, "The customer database.")

	run := toolsettest.NewRun(t)
	turn := run.Turn(t.Context())
	tools, err := toolset.BuildTools(turn, "assistant", db, whoami)
	require.NoError(t, err)
	params, err := openaitools.ResponseTools(tools, opt)
	require.NoError(t, err)
	resp, err := client.Responses.New(turn, responses.ResponseNewParams{Model: "gpt-test", Tools: params,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Query.")}})
	require.NoError(t, err)
	calls := openaitools.ResponseCalls(resp.Output)
	require.Len(t, calls, 2)
	assert.Equal(t, "db_query", calls[0].Name)
	out, err := openaitools.RunResponseCalls(turn, tools, resp.Output, opt)
	require.NoError(t, err)
	b, err := json.Marshal(out)
	require.NoError(t, err)
	var outputs []struct {
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	require.NoError(t, json.Unmarshal(b, &outputs))
	require.Len(t, outputs, 2)
	assert.Equal(t, "rows for select 1", outputs[0].Output)
	assert.Contains(t, outputs[1].Output, "nope_query", "an unknown namespace names no tool")

	assert.JSONEq(t, `[{"type":"namespace","name":"db","description":"The customer database.","tools":[`+
		`{"type":"function","name":"query","description":"Run a query.","strict":false,`+
		`"parameters":{"properties":{"sql":{"type":"string"}},"additionalProperties":false,"type":"object","required":["sql"]}}]},`+
		`{"type":"function","name":"whoami","description":"The current user.","strict":false,"parameters":{"properties":{},"additionalProperties":false,"type":"object"}}]`,
		field(t, m.requests()[0], "tools"))
}
