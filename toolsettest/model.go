package toolsettest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/gotoolset/toolset"
)

// API is a provider's wire protocol, spoken by a [ScriptedModel].
type API int

// The APIs a [ScriptedModel] speaks, one for each provider adapter.
const (
	// OpenAIChat is OpenAI's Chat Completions API (provider/openaitools:
	// ChatTools, RunChatCalls), at POST /v1/chat/completions.
	OpenAIChat API = iota + 1
	// OpenAIResponses is OpenAI's Responses API (provider/openaitools:
	// ResponseTools, RunResponseCalls), at POST /v1/responses.
	OpenAIResponses
	// Anthropic is Anthropic's Messages API (provider/anthropictools), at
	// POST /v1/messages.
	Anthropic
	// Gemini is the Gemini API's generateContent (provider/geminitools), at
	// POST /v1beta/models/{model}:generateContent.
	Gemini
)

// String returns the API's name.
func (a API) String() string {
	switch a {
	case OpenAIChat:
		return "OpenAI Chat Completions"
	case OpenAIResponses:
		return "OpenAI Responses"
	case Anthropic:
		return "Anthropic Messages"
	case Gemini:
		return "Gemini generateContent"
	}
	return fmt.Sprintf("API(%d)", int(a))
}

// Step is one reply of a [ScriptedModel]: tool calls ([CallTools]), a text
// answer ([Answer]), or a reply decided when the request arrives
// ([Decide]).
type Step struct {
	calls  []toolset.ToolCall
	text   string
	decide func(ModelRequest) (Step, error)
}

// CallTools is a reply in which the model calls tools, in the order given:
// each call's name and arguments as given (no arguments send {}), and its
// ID, or call_1, call_2, ... (numbered across the script) when the ID is
// empty. For [Gemini] an empty ID is sent as no ID, as the Gemini API
// does. OpenAI's APIs carry arguments as a string, so any bytes can be
// sent, invalid JSON too; [Anthropic] and [Gemini] carry a JSON object, and
// a step whose arguments are not one fails.
func CallTools(calls ...toolset.ToolCall) Step {
	return Step{calls: append([]toolset.ToolCall(nil), calls...)}
}

// Answer is a reply in which the model answers with text and calls no
// tool: the end of an agent loop's run.
func Answer(text string) Step { return Step{text: text} }

// Decide is a reply decided when its request arrives: decide reads the
// request (the tool results it carries, say) and returns the step to play,
// which must be [CallTools] or [Answer]. An error fails the test, and the
// request is answered with status 400 and the error's text.
func Decide(decide func(req ModelRequest) (Step, error)) Step {
	return Step{decide: decide}
}

// ModelRequest is a request a [ScriptedModel] was sent, as the model reads
// it.
type ModelRequest struct {
	// Model is the model the request names.
	Model string
	// Tools are the tools the model was sent, in order; nil when the
	// request has none.
	Tools []SentTool
	// Results are the tool results the request carries, in order: those
	// of the whole conversation as the request holds it (a Chat
	// Completions or Messages request repeats the conversation, a
	// Responses request that continues a previous response does not).
	Results []ToolResult
	// Body is the request body.
	Body json.RawMessage
}

// ToolNames returns the names of the tools the model was sent, in order.
func (r ModelRequest) ToolNames() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names
}

// SentTool is a tool as a model was sent it.
type SentTool struct {
	// Name is the tool's name.
	Name string
	// Description is the tool's description.
	Description string
	// Parameters is the parameter schema, as sent.
	Parameters json.RawMessage
	// Strict reports that the tool was sent in OpenAI's strict mode.
	Strict bool
}

// ToolResult is the result of a tool call as a model was sent it.
type ToolResult struct {
	// CallID is the ID of the call.
	CallID string
	// Name is the name of the tool called: the name in the result
	// ([Gemini]), or the name of the call this model made with CallID.
	Name string
	// Text is the result's text: its text parts joined with newlines, or,
	// for [Gemini], the "output" or "error" field (a string as itself,
	// another value as JSON).
	Text string
	// IsError reports a result sent as an error: Anthropic's is_error, an
	// "error" field for Gemini. OpenAI's APIs have no such flag.
	IsError bool
	// Media counts the result's parts that are not text (images,
	// documents).
	Media int
}

// maxRequestBytes bounds the body of a request a ScriptedModel reads.
const maxRequestBytes = 32 << 20

// maxFailures bounds the failures a ScriptedModel keeps for [ScriptedModel.Err].
const maxFailures = 16

// ScriptedModel is a model that follows a script: an HTTP server on
// 127.0.0.1 speaking a provider's wire JSON, for testing agent loops with
// the provider's real SDK client and adapter. Each request is answered by
// the next [Step] of the script and recorded ([ScriptedModel.Requests]).
//
// For [OpenAIChat] and [Anthropic], a request with "stream": true is
// answered as the API streams, in server-sent events: the text cut after
// each space and each call's arguments in two pieces (chat.completion.chunk
// events then [DONE]; message_start, content block and message_delta
// events, then message_stop). The other APIs do not stream: a request for
// a stream does not follow the script.
//
// A request that does not follow the script (past its end, to another
// path, streamed where the API does not, or that a step refuses) fails the test, or for a model
// from [StartScriptedModel] is kept for [ScriptedModel.Err], and is
// answered with status 400, which the SDKs do not retry. A request the
// real API would refuse with status 400 is refused the same way without
// using a step, and fails nothing: the SDK call returns the error. For
// [OpenAIChat], that is an empty tools array, or tool_choice or
// parallel_tool_calls without tools.
//
// Point the SDK's client at [ScriptedModel.BaseURL] with
// [ScriptedModel.Client] as its HTTP client, and any API key.
type ScriptedModel struct {
	api   API
	wire  wire
	srv   *httptest.Server
	fail  func(error)
	steps []Step

	mu       sync.Mutex
	next     int
	ids      int
	names    map[string]string // call ID → tool name, of the calls made
	requests []ModelRequest
	failures []error
}

// NewScriptedModel starts a model that speaks api and plays steps, one a
// request. A request that does not follow the script fails t. The model is
// closed when the test ends, and steps it did not play then fail t too: a
// loop that stopped early does not pass unnoticed.
func NewScriptedModel(t testing.TB, api API, steps ...Step) *ScriptedModel {
	t.Helper()
	m, err := newModel(api, steps, func(err error) { t.Errorf("scripted model: %v", err) })
	if err != nil {
		t.Fatalf("scripted model: %v", err)
	}
	t.Cleanup(func() {
		m.Close()
		if n := m.Remaining(); n > 0 {
			t.Errorf("scripted model: %d of %d steps were not played", n, len(m.steps))
		}
	})
	return m
}

// StartScriptedModel starts a model that speaks api and plays steps, for a
// program rather than a test (a demo that runs without an API key, an
// Example). A request that does not follow the script is kept for
// [ScriptedModel.Err]. The caller closes the model.
func StartScriptedModel(api API, steps ...Step) (*ScriptedModel, error) {
	return newModel(api, steps, nil)
}

func newModel(api API, steps []Step, fail func(error)) (*ScriptedModel, error) {
	w, ok := wires[api]
	if !ok {
		return nil, fmt.Errorf("no API %d: use OpenAIChat, OpenAIResponses, Anthropic or Gemini", int(api))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on 127.0.0.1: %w", err)
	}
	m := &ScriptedModel{api: api, wire: w, fail: fail, steps: append([]Step(nil), steps...), names: map[string]string{}}
	m.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(m.serve)}}
	m.srv.Start()
	return m, nil
}

// URL returns the server's root URL, http://127.0.0.1:port.
func (m *ScriptedModel) URL() string { return m.srv.URL }

// BaseURL returns the base URL to configure the provider's SDK client
// with: the root URL followed by /v1/ for OpenAI's APIs, the root URL
// itself for Anthropic's and Gemini's, whose SDKs add the version.
func (m *ScriptedModel) BaseURL() string {
	if m.api == OpenAIChat || m.api == OpenAIResponses {
		return m.srv.URL + "/v1/"
	}
	return m.srv.URL
}

// Client returns an HTTP client for the model, whose idle connections are
// closed with it.
func (m *ScriptedModel) Client() *http.Client { return m.srv.Client() }

// Close stops the model, waiting for the requests being answered, and
// closes its client's idle connections.
func (m *ScriptedModel) Close() {
	m.srv.Client().CloseIdleConnections()
	m.srv.Close()
}

// Requests returns the requests the model was sent so far, in order,
// including those it refused.
func (m *ScriptedModel) Requests() []ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ModelRequest(nil), m.requests...)
}

// Err returns the requests that did not follow the script so far (the
// first 16), joined; nil when every request did.
func (m *ScriptedModel) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return errors.Join(m.failures...)
}

// Remaining returns how many steps of the script have not been played.
func (m *ScriptedModel) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps) - m.next
}

func (m *ScriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	model, ok := m.wire.match(r.URL.Path)
	if r.Method != http.MethodPost || !ok {
		m.refuse(w, http.StatusNotFound, fmt.Errorf("unexpected %s %.200q for the %v API", r.Method, r.URL.Path, m.api), true)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		m.refuse(w, http.StatusBadRequest, fmt.Errorf("reading the request: %w", err), true)
		return
	}
	req := ModelRequest{Model: model, Body: body}
	rules, err := m.wire.decode(body, &req)
	if err != nil {
		m.refuse(w, http.StatusBadRequest, fmt.Errorf("request %d is not a %v request: %w", m.count()+1, m.api, err), true)
		return
	}
	m.mu.Lock()
	for i := range req.Results {
		if req.Results[i].Name == "" {
			req.Results[i].Name = m.names[req.Results[i].CallID]
		}
	}
	m.requests = append(m.requests, req)
	n := len(m.requests)
	streamed, canStream := m.wire.(streamer)
	if rules.stream && !canStream {
		m.mu.Unlock()
		m.refuse(w, http.StatusBadRequest, fmt.Errorf("request %d asks for a stream, which the scripted %v API does not send", n, m.api), true)
		return
	}
	if rules.refusal != "" {
		m.mu.Unlock()
		m.refuse(w, http.StatusBadRequest, errors.New(rules.refusal), false)
		return
	}
	if m.next >= len(m.steps) {
		m.mu.Unlock()
		m.refuse(w, http.StatusBadRequest, fmt.Errorf("request %d is past the script of %d steps", n, len(m.steps)), true)
		return
	}
	step := m.steps[m.next]
	m.next++
	m.mu.Unlock()

	if step.decide != nil {
		if step, err = decide(step.decide, req); err == nil && step.decide != nil {
			err = errors.New("a decided step must call tools or answer, not decide again")
		}
		if err != nil {
			m.refuse(w, http.StatusBadRequest, fmt.Errorf("request %d: %w", n, err), true)
			return
		}
	}
	calls := m.identify(step.calls)
	if rules.stream {
		events, err := streamed.stream(n, req.Model, calls, step.text)
		if err != nil {
			m.refuse(w, http.StatusBadRequest, fmt.Errorf("step %d: %w", n, err), true)
			return
		}
		writeEvents(w, events)
		return
	}
	reply, err := m.wire.reply(n, req.Model, calls, step.text)
	if err != nil {
		m.refuse(w, http.StatusBadRequest, fmt.Errorf("step %d: %w", n, err), true)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

// sseEvent is one server-sent event: its name, if any, and its data, a
// value sent as JSON or a string sent as it is.
type sseEvent struct {
	name string
	data any
}

// writeEvents sends events as server-sent events, flushing each.
func writeEvents(w http.ResponseWriter, events []sseEvent) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	for _, e := range events {
		data, ok := e.data.(string)
		if !ok {
			b, err := json.Marshal(e.data)
			if err != nil {
				return
			}
			data = string(b)
		}
		if e.name != "" {
			if _, err := fmt.Fprintf(w, "event: %s\n", e.name); err != nil {
				return
			}
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// decide plays a decided step; a panic is an error.
func decide(fn func(ModelRequest) (Step, error), req ModelRequest) (step Step, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the step panicked: %v", p)
		}
	}()
	return fn(req)
}

func (m *ScriptedModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// identify gives the calls without an ID one (but for Gemini) and
// remembers the tool each ID calls.
func (m *ScriptedModel) identify(calls []toolset.ToolCall) []toolset.ToolCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]toolset.ToolCall, len(calls))
	for i, c := range calls {
		if c.ID == "" && m.api != Gemini {
			m.ids++
			c.ID = fmt.Sprintf("call_%d", m.ids)
		}
		if c.ID != "" {
			m.names[c.ID] = c.Name
		}
		out[i] = c
	}
	return out
}

// refuse answers a request with an error in the shape the SDKs read, and,
// if it did not follow the script, reports it.
func (m *ScriptedModel) refuse(w http.ResponseWriter, status int, err error, failure bool) {
	if failure {
		m.mu.Lock()
		if len(m.failures) < maxFailures {
			m.failures = append(m.failures, err)
		}
		m.mu.Unlock()
		if m.fail != nil {
			m.fail(err)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": "error",
		"error": map[string]any{
			"type": "invalid_request_error", "code": status, "status": "INVALID_ARGUMENT", "message": err.Error(),
		},
	})
}

// wire is one API's JSON.
type wire interface {
	// match reports whether path is the API's endpoint, and the model it
	// names (Gemini's paths name one).
	match(path string) (model string, ok bool)
	// decode reads a request body into req, and what the API's rules say
	// of it.
	decode(body []byte, req *ModelRequest) (rules, error)
	// reply is the n-th reply: calls, or else text.
	reply(n int, model string, calls []toolset.ToolCall, text string) (any, error)
}

// streamer is a wire that can send a reply as a stream of events.
type streamer interface {
	// stream is the n-th reply as the events of a stream.
	stream(n int, model string, calls []toolset.ToolCall, text string) ([]sseEvent, error)
}

// rules is what an API's rules say of a request.
type rules struct {
	// stream reports a request for a stream of events.
	stream bool
	// refusal is why the API refuses the request, or "".
	refusal string
}

var wires = map[API]wire{
	OpenAIChat:      chatWire{},
	OpenAIResponses: responsesWire{},
	Anthropic:       anthropicWire{},
	Gemini:          geminiWire{},
}

// contentText reads a message content or a tool result's output: a string,
// or an array of parts whose text parts are joined with newlines and the
// others counted.
func contentText(raw json.RawMessage) (text string, media int, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", 0, nil
	}
	if raw[0] == '"' {
		err = json.Unmarshal(raw, &text)
		return text, 0, err
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", 0, fmt.Errorf("content is neither a string nor an array of parts: %w", err)
	}
	first := true
	for _, p := range parts {
		if p.Text == nil {
			media++
			continue
		}
		if !first {
			text += "\n"
		}
		text += *p.Text
		first = false
	}
	return text, media, nil
}

// addResult adds the result of call id, its content read by
// [contentText].
func (r *ModelRequest) addResult(id string, content json.RawMessage, isError bool) error {
	text, media, err := contentText(content)
	if err != nil {
		return fmt.Errorf("the result of call %.100q: %w", id, err)
	}
	r.Results = append(r.Results, ToolResult{CallID: id, Text: text, IsError: isError, Media: media})
	return nil
}

// objectArgs returns a call's arguments as the JSON object Anthropic and
// Gemini carry: {} for none.
func objectArgs(c toolset.ToolCall) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if len(c.Args) == 0 {
		return json.RawMessage("{}"), nil
	}
	if err := json.Unmarshal(c.Args, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("the arguments of the call of %q must be a JSON object for this API", c.Name)
	}
	return c.Args, nil
}

// stringArgs returns a call's arguments as the string OpenAI carries: {}
// for none.
func stringArgs(c toolset.ToolCall) string {
	if len(c.Args) == 0 {
		return "{}"
	}
	return string(c.Args)
}
