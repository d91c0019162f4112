package openaitools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/openai/openai-go/v3"
)

// DefaultMaxSteps (20) is how many times [RunChatLoop] asks the model
// unless [WithMaxSteps] says otherwise.
const DefaultMaxSteps = 20

// LoopOption configures [RunChatLoop].
type LoopOption func(*loopConfig)

type loopConfig struct {
	maxSteps int
	stream   func(delta string)
	opts     []Option
}

// WithMaxSteps sets how many times the loop asks the model at most; a
// model still calling tools then stops the loop with a
// [*StepLimitError]. Values below 1 make the loop fail.
func WithMaxSteps(n int) LoopOption { return func(c *loopConfig) { c.maxSteps = n } }

// WithStream has the loop ask the model for a stream of events and pass
// each piece of its text to fn as it arrives, in order. The pieces of one
// answer joined are its text. fn runs on the loop's goroutine; a panic in
// fn stops the loop with an error.
func WithStream(fn func(delta string)) LoopOption { return func(c *loopConfig) { c.stream = fn } }

// WithCallOptions passes the adapter's options to each step of the loop:
// [WithStrict] and [WithPreflight] to the conversion of the tools,
// [WithMaxConcurrency] and [WithApprover] to the running of the calls.
func WithCallOptions(opts ...Option) LoopOption {
	return func(c *loopConfig) { c.opts = append(c.opts, opts...) }
}

// ChatLoopResult is where a [RunChatLoop] ended.
type ChatLoopResult struct {
	// Messages is the conversation: the messages of the request, then
	// those the loop added (each assistant message and its tool
	// messages). Send it as the messages of the next request, or of the
	// next RunChatLoop to resume a loop that paused.
	Messages []openai.ChatCompletionMessageParamUnion
	// Completion is the model's last reply, or nil if the model was not
	// asked or did not answer.
	Completion *openai.ChatCompletion
	// Text is the text of the model's answer, once it answered without
	// calling tools.
	Text string
	// Steps is how many times this loop asked the model.
	Steps int
}

// StepLimitError reports a loop that reached its step limit (see
// [WithMaxSteps]) with the model still calling tools.
type StepLimitError struct {
	// Steps is the limit reached.
	Steps int
	// Messages is the conversation so far, the last tool messages
	// included.
	Messages []openai.ChatCompletionMessageParamUnion
}

// Error implements error.
func (e *StepLimitError) Error() string {
	return fmt.Sprintf("openaitools: the model was still calling tools after %d steps", e.Steps)
}

// ModelError reports a request to the model that failed: the SDK's error
// (an *openai.Error for an HTTP error status) or a reply that cannot be
// used.
type ModelError struct {
	// Step is the step whose request failed, from 1.
	Step int
	// Err is the error.
	Err error
}

// Error implements error.
func (e *ModelError) Error() string {
	return fmt.Sprintf("openaitools: step %d: asking the model: %v", e.Step, e.Err)
}

// Unwrap returns the error.
func (e *ModelError) Unwrap() error { return e.Err }

// RunChatLoop runs an agent loop on the Chat Completions API until the
// model answers without calling tools. Each step begins a turn of run
// ([toolset.RunContext.Turn]; run may be nil for a loop without a run),
// builds the tools of toolsets for agent ([toolset.BuildTools]), sends
// them with the conversation so far ([ChatTools]; the Tools of params are
// replaced), appends the model's message, runs its tool calls
// ([RunChatCalls]) and appends their results.
//
// The result always holds the conversation so far, with an error too. The
// loop stops with an error when the model cannot be asked or its reply
// cannot be used ([*ModelError]), when a call's error should stop the run
// ([*CallError]), and when the step limit is reached ([*StepLimitError]).
//
// Without an approver ([WithApprover] through [WithCallOptions]), a call
// waiting for a human's approval pauses the loop: the error wraps the
// [*toolset.ApprovalRequiredError], and the conversation ends with the
// model's message calling tools, followed by the tool messages of the
// calls that ran: the calls waiting for approval, and those ordered after
// them, are held back while the others run. Record the decisions
// ([toolset.RunContext.RecordApproval] or RecordDenial, on the same run or
// on one resumed with [toolset.ResumeRun]) and call RunChatLoop again with
// that conversation: a conversation that ends so has the calls without a
// tool message run first, before the model is asked.
func RunChatLoop(ctx context.Context, client openai.Client, params openai.ChatCompletionNewParams, run *toolset.RunContext, agent string, toolsets []toolset.Toolset, opts ...LoopOption) (*ChatLoopResult, error) {
	cfg := loopConfig{maxSteps: DefaultMaxSteps}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	res := &ChatLoopResult{Messages: append([]openai.ChatCompletionMessageParamUnion(nil), params.Messages...)}
	if cfg.maxSteps < 1 {
		return res, fmt.Errorf("openaitools: WithMaxSteps(%d): the limit must be at least 1", cfg.maxSteps)
	}
	if calls, ok := pendingCalls(res.Messages); ok {
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, agent, toolsets...)
		if err != nil {
			return res, err
		}
		tcs, err := calls()
		if err != nil {
			return res, err
		}
		results, _, err := provider.RunPausing(turn, pkg, tools, tcs, provider.Apply(cfg.opts), execute(tools), chatMessage)
		res.Messages = append(res.Messages, results...)
		if err != nil {
			return res, err
		}
	}
	for res.Steps < cfg.maxSteps {
		res.Steps++
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, agent, toolsets...)
		if err != nil {
			return res, err
		}
		p := params
		if p.Tools, err = ChatTools(tools, cfg.opts...); err != nil {
			return res, err
		}
		p.Messages = res.Messages
		completion, err := ask(turn, client, p, cfg.stream)
		if err != nil {
			return res, &ModelError{Step: res.Steps, Err: err}
		}
		res.Completion = completion
		if len(completion.Choices) == 0 {
			return res, &ModelError{Step: res.Steps, Err: errors.New("the reply has no choices")}
		}
		msg := completion.Choices[0].Message
		res.Messages = append(res.Messages, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			res.Text = msg.Content
			return res, nil
		}
		tcs, err := ChatCalls(msg.ToolCalls)
		if err != nil {
			return res, err
		}
		results, _, err := provider.RunPausing(turn, pkg, tools, tcs, provider.Apply(cfg.opts), execute(tools), chatMessage)
		res.Messages = append(res.Messages, results...)
		if err != nil {
			return res, err
		}
	}
	return res, &StepLimitError{Steps: cfg.maxSteps, Messages: res.Messages}
}

// ask sends one request, streamed if stream is set.
func ask(ctx context.Context, client openai.Client, p openai.ChatCompletionNewParams, stream func(string)) (*openai.ChatCompletion, error) {
	if stream == nil {
		return client.Chat.Completions.New(ctx, p)
	}
	s := client.Chat.Completions.NewStreaming(ctx, p)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		chunk := s.Current()
		if !acc.AddChunk(chunk) {
			return nil, errors.New("the stream sent a chunk that does not follow the ones before")
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Index == 0 && chunk.Choices[0].Delta.Content != "" {
			if err := callStream(stream, chunk.Choices[0].Delta.Content); err != nil {
				return nil, err
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	completion := acc.ChatCompletion
	return &completion, nil
}

// callStream passes delta to the application's stream function, under
// recover.
func callStream(fn func(string), delta string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the stream function panicked: %v", p)
		}
	}()
	fn(delta)
	return nil
}

// pendingCalls reports whether the conversation ends with an assistant
// message calling tools (and perhaps the tool messages of some of its
// calls), and returns a function reading its calls that have no tool
// message yet.
func pendingCalls(msgs []openai.ChatCompletionMessageParamUnion) (func() ([]toolset.ToolCall, error), bool) {
	answered := map[string]bool{}
	i := len(msgs) - 1
	for ; i >= 0 && msgs[i].OfTool != nil; i-- {
		answered[msgs[i].OfTool.ToolCallID] = true
	}
	if i < 0 {
		return nil, false
	}
	last := msgs[i].OfAssistant
	if last == nil || len(last.ToolCalls) == 0 {
		return nil, false
	}
	return func() ([]toolset.ToolCall, error) {
		out := make([]toolset.ToolCall, 0, len(last.ToolCalls))
		for _, c := range last.ToolCalls {
			f := c.OfFunction
			if f == nil {
				id := ""
				if c.OfCustom != nil {
					id = c.OfCustom.ID
				}
				return nil, &CallTypeError{ID: id, Type: "custom"}
			}
			if !answered[f.ID] {
				out = append(out, toolset.ToolCall{ID: f.ID, Name: f.Function.Name, Args: json.RawMessage(f.Function.Arguments)})
			}
		}
		return out, nil
	}, true
}
