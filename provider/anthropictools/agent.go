package anthropictools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/adapter"
)

// DefaultMaxSteps (20) is how many times [RunLoop] asks the model unless
// [WithMaxSteps] says otherwise.
const DefaultMaxSteps = 20

// LoopOption configures [RunLoop].
type LoopOption func(*loopConfig)

type loopConfig struct {
	maxSteps int
	stream   func(delta string)
	opts     []Option
}

// WithStream has the loop ask the model for a stream of events and pass
// each piece of its text to fn as it arrives, in order. The pieces of one
// answer joined are its text. fn runs on the loop's goroutine; a panic in
// fn stops the loop with an error.
func WithStream(fn func(delta string)) LoopOption { return func(c *loopConfig) { c.stream = fn } }

// WithMaxSteps sets how many times the loop asks the model at most; a
// model still calling tools then stops the loop with a
// [*StepLimitError]. Values below 1 make the loop fail.
func WithMaxSteps(n int) LoopOption { return func(c *loopConfig) { c.maxSteps = n } }

// WithCallOptions passes the adapter's options to each step of the loop:
// [WithPreflight] to the conversion of the tools, [WithMaxConcurrency]
// and [WithApprover] to the running of the calls.
func WithCallOptions(opts ...Option) LoopOption {
	return func(c *loopConfig) { c.opts = append(c.opts, opts...) }
}

// LoopResult is where a [RunLoop] ended.
type LoopResult struct {
	// Messages is the conversation: the messages of the request, then
	// those the loop added (each assistant message, and the user message
	// of its tool results). Send it as the messages of the next request,
	// or of the next RunLoop to resume a loop that paused.
	Messages []anthropic.MessageParam
	// Message is the model's last reply, or nil if the model was not
	// asked or did not answer.
	Message *anthropic.Message
	// Text is the text of the model's answer, its text blocks joined,
	// once it answered without calling tools.
	Text string
	// Steps is how many times this loop asked the model.
	Steps int
}

// StepLimitError reports a loop that reached its step limit (see
// [WithMaxSteps]) with the model still calling tools.
type StepLimitError struct {
	// Steps is the limit reached.
	Steps int
	// Messages is the conversation so far, the last tool results
	// included.
	Messages []anthropic.MessageParam
}

// Error implements error.
func (e *StepLimitError) Error() string {
	return fmt.Sprintf("anthropictools: the model was still calling tools after %d steps", e.Steps)
}

// ModelError reports a request to the model that failed: the SDK's error
// (an *anthropic.Error for an HTTP error status).
type ModelError struct {
	// Step is the step whose request failed, from 1.
	Step int
	// Err is the error.
	Err error
}

// Error implements error.
func (e *ModelError) Error() string {
	return fmt.Sprintf("anthropictools: step %d: asking the model: %v", e.Step, e.Err)
}

// Unwrap returns the error.
func (e *ModelError) Unwrap() error { return e.Err }

// RunLoop runs an agent loop on the Messages API until the model answers
// without calling tools. Each step begins a turn of run
// ([toolset.RunContext.Turn]; run may be nil for a loop without a run),
// builds the tools of toolsets for agent ([toolset.BuildTools]), sends
// them with the conversation so far ([Tools]; the Tools of params are
// replaced), appends the model's message, runs its tool_use blocks
// ([RunCalls]) and appends a user message of their results.
//
// The result always holds the conversation so far, with an error too. The
// loop stops with an error when the model cannot be asked
// ([*ModelError]), when a call's error should stop the run ([*CallError]),
// and when the step limit is reached ([*StepLimitError]).
//
// Without an approver ([WithApprover] through [WithCallOptions]), a call
// waiting for a human's approval pauses the loop: the error wraps the
// [*toolset.ApprovalRequiredError], and the conversation ends with the
// model's message whose calls have not run. Record the decision
// ([toolset.RunContext.RecordApproval] or RecordDenial, on the same run or
// on one resumed with [toolset.ResumeRun]) and call RunLoop again with
// that conversation: a conversation that ends with an assistant message
// calling tools has those calls run first, all of them again, before the
// model is asked.
func RunLoop(ctx context.Context, client anthropic.Client, params anthropic.MessageNewParams, run *toolset.RunContext, agent string, toolsets []toolset.Toolset, opts ...LoopOption) (*LoopResult, error) {
	cfg := loopConfig{maxSteps: DefaultMaxSteps}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	res := &LoopResult{Messages: append([]anthropic.MessageParam(nil), params.Messages...)}
	if cfg.maxSteps < 1 {
		return res, fmt.Errorf("anthropictools: WithMaxSteps(%d): the limit must be at least 1", cfg.maxSteps)
	}
	if calls, ok, err := pendingCalls(res.Messages); err != nil {
		return res, err
	} else if ok {
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, agent, toolsets...)
		if err != nil {
			return res, err
		}
		results, err := adapter.RunCalls(turn, pkg, tools, calls, adapter.Apply(cfg.opts), tools.Execute, resultBlock)
		if err != nil {
			return res, err
		}
		res.Messages = append(res.Messages, anthropic.NewUserMessage(results...))
	}
	for res.Steps < cfg.maxSteps {
		res.Steps++
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, agent, toolsets...)
		if err != nil {
			return res, err
		}
		p := params
		if p.Tools, err = Tools(tools, cfg.opts...); err != nil {
			return res, err
		}
		p.Messages = res.Messages
		msg, err := ask(turn, client, p, cfg.stream)
		if err != nil {
			return res, &ModelError{Step: res.Steps, Err: err}
		}
		res.Message = msg
		res.Messages = append(res.Messages, msg.ToParam())
		if len(Calls(msg.Content)) == 0 {
			var text strings.Builder
			for _, b := range msg.Content {
				if b.Type == "text" {
					text.WriteString(b.Text)
				}
			}
			res.Text = text.String()
			return res, nil
		}
		results, err := RunCalls(turn, tools, msg.Content, cfg.opts...)
		if err != nil {
			return res, err
		}
		res.Messages = append(res.Messages, anthropic.NewUserMessage(results...))
	}
	return res, &StepLimitError{Steps: cfg.maxSteps, Messages: res.Messages}
}

// ask sends one request, streamed if stream is set.
func ask(ctx context.Context, client anthropic.Client, p anthropic.MessageNewParams, stream func(string)) (*anthropic.Message, error) {
	if stream == nil {
		return client.Messages.New(ctx, p)
	}
	s := client.Messages.NewStreaming(ctx, p)
	defer s.Close()
	var msg anthropic.Message
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, err
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			if err := callStream(stream, ev.Delta.Text); err != nil {
				return nil, err
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if msg.ID == "" {
		return nil, errors.New("the stream ended before the message started")
	}
	return &msg, nil
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

// pendingCalls returns the tool_use blocks of the conversation's last
// message, if it is the assistant's and calls tools.
func pendingCalls(msgs []anthropic.MessageParam) ([]toolset.ToolCall, bool, error) {
	if len(msgs) == 0 {
		return nil, false, nil
	}
	last := msgs[len(msgs)-1].OfAssistant
	if last == nil {
		return nil, false, nil
	}
	var calls []toolset.ToolCall
	for _, b := range last.Content {
		u := b.OfToolUse
		if u == nil {
			continue
		}
		args, err := inputJSON(u.Input)
		if err != nil {
			return nil, false, fmt.Errorf("anthropictools: the input of tool_use %q: %w", u.ID, err)
		}
		calls = append(calls, toolset.ToolCall{ID: u.ID, Name: u.Name, Args: args})
	}
	return calls, len(calls) > 0, nil
}

// inputJSON returns a tool_use block's input as JSON: the bytes of a
// reply's message as they came, or the value of a message built or
// decoded by the application.
func inputJSON(input any) (json.RawMessage, error) {
	switch in := input.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return in, nil
	case []byte:
		return in, nil
	}
	return json.Marshal(input)
}
