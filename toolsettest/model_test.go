package toolsettest

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failures collects what a model reports as off the script.
type failures struct {
	mu   sync.Mutex
	errs []string
}

func (f *failures) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, err.Error())
}

func (f *failures) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errs...)
}

func startModel(t *testing.T, api API, steps ...Step) (*ScriptedModel, *failures) {
	t.Helper()
	f := &failures{}
	m, err := newModel(api, steps, f.add)
	require.NoError(t, err)
	t.Cleanup(m.Close)
	return m, f
}

// post sends body to the model's path and returns the status and reply.
func post(t *testing.T, m *ScriptedModel, path, body string) (int, string) {
	t.Helper()
	resp, err := m.Client().Post(m.URL()+path, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// errorMessage returns the message of an error reply.
func errorMessage(t *testing.T, reply string) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(reply), &e), reply)
	return e.Error.Message
}

func TestScriptedModelRequestPastTheScriptFailsTheTest(t *testing.T) {
	m, f := startModel(t, OpenAIChat, Answer("done"))
	status, _ := post(t, m, "/v1/chat/completions", `{"model":"m","messages":[]}`)
	assert.Equal(t, http.StatusOK, status)
	status, reply := post(t, m, "/v1/chat/completions", `{"model":"m","messages":[]}`)
	assert.Equal(t, http.StatusBadRequest, status, "a status the SDKs do not retry")
	assert.Equal(t, "request 2 is past the script of 1 steps", errorMessage(t, reply))
	assert.Equal(t, []string{"request 2 is past the script of 1 steps"}, f.all())
	assert.EqualError(t, m.Err(), "request 2 is past the script of 1 steps")
	assert.Len(t, m.Requests(), 2)
}

func TestScriptedModelRefusesWhatOpenAIRefuses(t *testing.T) {
	m, f := startModel(t, OpenAIChat, Answer("done"))
	for _, body := range []string{
		`{"model":"m","messages":[],"tools":[]}`,
		`{"model":"m","messages":[],"tool_choice":"auto"}`,
		`{"model":"m","messages":[],"parallel_tool_calls":true}`,
	} {
		status, reply := post(t, m, "/v1/chat/completions", body)
		assert.Equal(t, http.StatusBadRequest, status, body)
		assert.Regexp(t, `empty array|only allowed when 'tools' are specified`, errorMessage(t, reply), body)
	}
	assert.Empty(t, f.all(), "the API's refusals are the SDK call's error, not the script's")
	assert.Equal(t, 1, m.Remaining(), "a refused request plays no step")
	status, _ := post(t, m, "/v1/chat/completions", `{"model":"m","messages":[]}`)
	assert.Equal(t, http.StatusOK, status)
}

func TestScriptedModelOffScriptRequestsFail(t *testing.T) {
	tests := []struct {
		name, path, body, want string
		api                    API
	}{
		{"other path", "/v1/embeddings", `{}`, `unexpected POST "/v1/embeddings" for the OpenAI Chat Completions API`, OpenAIChat},
		{"stream", "/v1/responses", `{"model":"m","stream":true,"input":[]}`, "request 1 asks for a stream, which the scripted OpenAI Responses API does not send", OpenAIResponses},
		{"Gemini stream", "/v1beta/models/g:streamGenerateContent", `{}`, `unexpected POST "/v1beta/models/g:streamGenerateContent" for the Gemini generateContent API`, Gemini},
		{"not JSON", "/v1/responses", `{"model":`, "request 1 is not a OpenAI Responses request: unexpected end of JSON input", OpenAIResponses},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, f := startModel(t, tt.api, Answer("done"))
			status, reply := post(t, m, tt.path, tt.body)
			assert.NotEqual(t, http.StatusOK, status)
			assert.Equal(t, tt.want, errorMessage(t, reply))
			assert.Equal(t, []string{tt.want}, f.all())
		})
	}
}

func TestScriptedModelStepWithArgumentsTheAPICannotCarryFails(t *testing.T) {
	for _, api := range []API{Anthropic, Gemini} {
		m, f := startModel(t, api, CallTools(toolset.ToolCall{Name: "f", Args: json.RawMessage(`[1]`)}))
		path := "/v1/messages"
		if api == Gemini {
			path = "/v1beta/models/g:generateContent"
		}
		status, _ := post(t, m, path, `{"model":"m"}`)
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Equal(t, []string{`step 1: the arguments of the call of "f" must be a JSON object for this API`}, f.all(), api)
	}
}

func TestScriptedModelDecideErrorFailsTheTest(t *testing.T) {
	m, f := startModel(t, OpenAIResponses,
		Decide(func(ModelRequest) (Step, error) {
			return Decide(func(ModelRequest) (Step, error) { return Answer("done"), nil }), nil
		}),
		Decide(func(req ModelRequest) (Step, error) { return Step{}, io.ErrUnexpectedEOF }),
		Decide(func(req ModelRequest) (Step, error) { return Answer(req.Results[0].Text), nil }))
	for range 3 {
		status, _ := post(t, m, "/v1/responses", `{"model":"m","input":"hi"}`)
		assert.Equal(t, http.StatusBadRequest, status)
	}
	assert.Equal(t, []string{
		"request 1: a decided step must call tools or answer, not decide again",
		"request 2: unexpected EOF",
		"request 3: the step panicked: runtime error: index out of range [0] with length 0",
	}, f.all())
}

func TestScriptedModelCallIDs(t *testing.T) {
	calls := CallTools(toolset.ToolCall{Name: "a"}, toolset.ToolCall{ID: "mine", Name: "b"}, toolset.ToolCall{Name: "c"})
	m, _ := startModel(t, Anthropic, calls, calls)
	_, first := post(t, m, "/v1/messages", `{"model":"m"}`)
	_, second := post(t, m, "/v1/messages", `{"model":"m"}`)
	for _, want := range []string{`"id":"call_1","input":{},"name":"a"`, `"id":"mine","input":{},"name":"b"`, `"id":"call_2","input":{},"name":"c"`} {
		assert.Contains(t, first, want)
	}
	assert.Contains(t, second, `"id":"call_3"`, "IDs are numbered across the script")

	g, _ := startModel(t, Gemini, calls)
	_, reply := post(t, g, "/v1beta/models/g:generateContent", `{}`)
	assert.Contains(t, reply, `{"functionCall":{"args":{},"name":"a"}}`, "Gemini sends calls without IDs")
	assert.Contains(t, reply, `{"functionCall":{"args":{},"id":"mine","name":"b"}}`)
}

func TestScriptedModelReadsResults(t *testing.T) {
	tests := []struct {
		api        API
		path, body string
	}{
		{OpenAIChat, "/v1/chat/completions", `{"model":"m","tools":[{"type":"function","function":{"name":"a","description":"A.","parameters":{"type":"object"},"strict":true}}],"messages":[` +
			`{"role":"tool","tool_call_id":"call_1","content":"one"},{"role":"tool","tool_call_id":"x","content":[{"type":"text","text":"two"},{"type":"text","text":"lines"}]}]}`},
		{OpenAIResponses, "/v1/responses", `{"model":"m","tools":[{"type":"function","name":"a","description":"A.","parameters":{"type":"object"},"strict":true},{"type":"web_search"}],"input":[` +
			`{"type":"function_call_output","call_id":"call_1","output":"one"},{"type":"function_call_output","call_id":"x","output":[{"type":"input_text","text":"two"},{"type":"input_text","text":"lines"},{"type":"input_image","image_url":"data:"}]}]}`},
		{Anthropic, "/v1/messages", `{"model":"m","tools":[{"name":"a","description":"A.","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"hi"},{"role":"user","content":[` +
			`{"type":"tool_result","tool_use_id":"call_1","content":"one"},{"type":"tool_result","tool_use_id":"x","is_error":true,"content":[{"type":"text","text":"two"},{"type":"text","text":"lines"},{"type":"image","source":{}}]}]}]}`},
		{Gemini, "/v1beta/models/m:generateContent", `{"tools":[{"functionDeclarations":[{"name":"a","description":"A.","parametersJsonSchema":{"type":"object"}}]}],"contents":[{"role":"user","parts":[` +
			`{"functionResponse":{"id":"call_1","name":"a","response":{"output":"one"}}},{"functionResponse":{"id":"x","name":"b","response":{"error":"two\nlines"},"parts":[{"inlineData":{}}]}}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.api.String(), func(t *testing.T) {
			m, f := startModel(t, tt.api, CallTools(toolset.ToolCall{Name: "a"}), Answer("done"))
			post(t, m, tt.path, `{"model":"m"}`)
			status, reply := post(t, m, tt.path, tt.body)
			require.Equal(t, http.StatusOK, status, reply)
			require.Empty(t, f.all())
			req := m.Requests()[1]
			assert.Equal(t, "m", req.Model)
			assert.Equal(t, []string{"a"}, req.ToolNames())
			assert.Equal(t, "A.", req.Tools[0].Description)
			assert.JSONEq(t, `{"type":"object"}`, string(req.Tools[0].Parameters))
			assert.Equal(t, tt.api == OpenAIChat || tt.api == OpenAIResponses, req.Tools[0].Strict)
			require.Len(t, req.Results, 2)
			assert.Equal(t, ToolResult{CallID: "call_1", Name: "a", Text: "one"}, req.Results[0], "the name of the model's own call")
			assert.Equal(t, "x", req.Results[1].CallID)
			assert.Equal(t, "two\nlines", req.Results[1].Text)
			assert.Equal(t, tt.api == Anthropic || tt.api == Gemini, req.Results[1].IsError)
			assert.Equal(t, map[API]int{OpenAIResponses: 1, Anthropic: 1, Gemini: 1}[tt.api], req.Results[1].Media)
		})
	}
}

// FuzzScriptedModelDecode feeds request bodies to every API's reader: an
// error or a request, never a panic.
func FuzzScriptedModelDecode(f *testing.F) {
	f.Add([]byte(`{"model":"m","tools":[{"type":"function","function":{"name":"a"}}],"messages":[{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"x"}]}]}`))
	f.Add([]byte(`{"model":"m","tools":[],"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image"}]}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","is_error":true,"content":"x"}]}]}`))
	f.Add([]byte(`{"tools":[{"functionDeclarations":[{"name":"a","parameters":{}}]}],"contents":[{"parts":[{"functionResponse":{"response":{"output":{"a":1}}}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for api, w := range wires {
			var req ModelRequest
			if _, err := w.decode(body, &req); err != nil {
				continue
			}
			for _, r := range req.Results {
				if r.Media < 0 {
					t.Fatalf("%v: negative media count in %+v", api, r)
				}
			}
		}
	})
}

func TestScriptedModelStepsNotPlayedFailTheTest(t *testing.T) {
	tb := run("loop", func(tb *fakeTB) {
		ctb := &cleanupTB{fakeTB: tb}
		m := NewScriptedModel(ctb, Gemini, Answer("one"), Answer("two"))
		post(t, m, "/v1beta/models/g:generateContent", `{}`)
		ctb.cleanup()
	})
	assert.Equal(t, "scripted model: 1 of 2 steps were not played", tb.output())
}

// cleanupTB is a fakeTB that runs its cleanups when told.
type cleanupTB struct {
	*fakeTB
	fns []func()
}

func (c *cleanupTB) Cleanup(fn func()) { c.fns = append(c.fns, fn) }

func (c *cleanupTB) cleanup() {
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
}

func TestScriptedModelStreamsChatCompletions(t *testing.T) {
	m, f := startModel(t, OpenAIChat,
		CallTools(toolset.ToolCall{ID: "call_1", Name: "f", Args: json.RawMessage(`{"c":"üüü"}`)}),
		Answer("Hi there"))
	var lines []string
	for range 2 {
		status, reply := post(t, m, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
		require.Equal(t, http.StatusOK, status, reply)
		for l := range strings.SplitSeq(reply, "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	assert.Empty(t, f.all())
	// The arguments are cut in halves of whole characters.
	chunk := func(n int, delta, finish string) string {
		return `data: {"choices":[{"delta":` + delta + `,"finish_reason":` + finish + `,"index":0,"logprobs":null}],"created":1700000000,"id":"chatcmpl-` +
			strconv.Itoa(n) + `","model":"m","object":"chat.completion.chunk"}`
	}
	assert.Equal(t, []string{
		chunk(1, `{"content":"","role":"assistant"}`, "null"),
		chunk(1, `{"tool_calls":[{"function":{"arguments":"","name":"f"},"id":"call_1","index":0,"type":"function"}]}`, "null"),
		chunk(1, `{"tool_calls":[{"function":{"arguments":"{\"c\":\""},"index":0}]}`, "null"),
		chunk(1, `{"tool_calls":[{"function":{"arguments":"üüü\"}"},"index":0}]}`, "null"),
		chunk(1, `{}`, `"tool_calls"`),
		"data: [DONE]",
		chunk(2, `{"content":"","role":"assistant"}`, "null"),
		chunk(2, `{"content":"Hi "}`, "null"),
		chunk(2, `{"content":"there"}`, "null"),
		chunk(2, `{}`, `"stop"`),
		"data: [DONE]",
	}, lines)
}

func TestScriptedModelStreamsAnthropicMessages(t *testing.T) {
	m, f := startModel(t, Anthropic,
		CallTools(toolset.ToolCall{ID: "call_1", Name: "f", Args: json.RawMessage(`{"c":"üüü"}`)}),
		Answer("Hi there"))
	var names, data []string
	for range 2 {
		status, reply := post(t, m, "/v1/messages", `{"model":"m","stream":true,"messages":[]}`)
		require.Equal(t, http.StatusOK, status, reply)
		for l := range strings.SplitSeq(reply, "\n") {
			if name, ok := strings.CutPrefix(l, "event: "); ok {
				names = append(names, name)
			} else if d, ok := strings.CutPrefix(l, "data: "); ok {
				data = append(data, d)
			}
		}
	}
	assert.Empty(t, f.all())
	assert.Equal(t, []string{
		"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
		"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
	}, names)
	require.Len(t, data, len(names))
	for i, d := range data {
		var e struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &e), d)
		assert.Equal(t, names[i], e.Type, "each event's data names its event")
	}
	assert.JSONEq(t, `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"call_1","name":"f","input":{}}}`, data[1])
	assert.JSONEq(t, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"c\":\""}}`, data[2])
	assert.JSONEq(t, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"üüü\"}"}}`, data[3])
	assert.JSONEq(t, `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":0}}`, data[5])
	assert.JSONEq(t, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi "}}`, data[9])
	assert.JSONEq(t, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"there"}}`, data[10])
}
