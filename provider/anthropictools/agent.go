package anthropictools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
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
// [*toolset.ApprovalRequiredError]; the calls that need no approval (and
// are not ordered after one that does) have run, and the conversation
// ends with the model's message and, if any ran, a user message of their
// results. Record the decisions ([toolset.RunContext.RecordApproval] or
// RecordDenial, on the same run or on one resumed with
// [toolset.ResumeRun]) and call RunLoop again with that conversation: the
// calls still without a result run first, their results joining that
// user message, before the model is asked. No call runs twice.
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
	o := provider.Apply(cfg.opts)
	if calls, partial, ok, err := pendingCalls(res.Messages); err != nil {
		return res, err
	} else if ok {
		turn := run.Turn(ctx)
		tools, err := toolset.BuildTools(turn, agent, toolsets...)
		if err != nil {
			return res, err
		}
		results, _, err := provider.RunPausing(turn, pkg, tools, calls, o, tools.Execute, resultsFor(tools, o))
		res.Messages = addResults(res.Messages, results, partial)
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
		results, _, err := provider.RunPausing(turn, pkg, tools, Calls(msg.Content), o, tools.Execute, resultsFor(tools, o))
		res.Messages = addResults(res.Messages, results, false)
		if err != nil {
			return res, err
		}
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
// assistant message that have no tool_result yet: the message is the
// last, or followed by a user message of the results of some of its
// calls (partial reports that one).
func pendingCalls(msgs []anthropic.MessageParam) (calls []toolset.ToolCall, partial, ok bool, err error) {
	i := len(msgs) - 1
	answered := map[string]bool{}
	if i >= 0 && msgs[i].OfUser != nil {
		for _, b := range msgs[i].OfUser.Content {
			if b.OfToolResult == nil {
				return nil, false, false, nil
			}
			answered[b.OfToolResult.ToolUseID] = true
		}
		partial = true
		i--
	}
	if i < 0 || msgs[i].OfAssistant == nil {
		return nil, false, false, nil
	}
	for _, b := range msgs[i].OfAssistant.Content {
		u := b.OfToolUse
		if u == nil || answered[u.ID] {
			continue
		}
		args, err := inputJSON(u.Input)
		if err != nil {
			return nil, false, false, fmt.Errorf("anthropictools: the input of tool_use %q: %w", u.ID, err)
		}
		calls = append(calls, toolset.ToolCall{ID: u.ID, Name: u.Name, Args: args})
	}
	return calls, partial, len(calls) > 0, nil
}

// addResults appends results to the conversation: to its last message
// when partial (a user message of the other results of the same calls),
// or as a new user message.
func addResults(msgs []anthropic.MessageParam, results []anthropic.ContentBlockParamUnion, partial bool) []anthropic.MessageParam {
	if len(results) == 0 {
		return msgs
	}
	if partial {
		last := *msgs[len(msgs)-1].OfUser
		last.Content = append(append([]anthropic.ContentBlockParamUnion(nil), last.Content...), results...)
		msgs[len(msgs)-1] = anthropic.MessageParam{OfUser: &last}
		return msgs
	}
	return append(msgs, anthropic.NewUserMessage(results...))
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
