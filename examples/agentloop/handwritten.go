package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/openai/openai-go/v3"
)

// runByHand is the agent loop written out, as RunChatLoop runs it. Each turn builds the tools for that turn, asks the
// model, and runs its tool calls, until the model answers in text.
func runByHand(ctx context.Context, out io.Writer, client openai.Client, model string) (string, error) {
	// One run for the user's request: made once, ended when it is over,
	// each turn begun with Turn.
	rc := toolset.NewRun("run-1", toolset.WithValue(Role, "traveller"))
	defer rc.End()
	messages := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a travel assistant. Use the tools; call independent tools in parallel."),
		openai.UserMessage(question),
	}
	fmt.Fprintln(out, "user:", question)
	toolsets := travelTools()
	for step := range 6 {
		turn := rc.Turn(ctx)
		tools, err := toolset.BuildTools(turn, "travel-assistant", toolsets...)
		if err != nil {
			return "", err
		}
		params, err := openaitools.ChatTools(tools)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(out, "\nturn %d: tools offered: %s\n", step+1, strings.Join(tools.Names(), ", "))
		completion, err := client.Chat.Completions.New(turn, openai.ChatCompletionNewParams{
			Model: model, Messages: messages, Tools: params,
		})
		if err != nil {
			return "", err
		}
		if len(completion.Choices) == 0 {
			return "", errors.New("the model sent no choices")
		}
		msg := completion.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		messages = append(messages, msg.ToParam())
		for _, c := range msg.ToolCalls {
			fmt.Fprintf(out, "  -> %s %s %s\n", c.ID, c.Function.Name, c.Function.Arguments)
		}
		start := time.Now()
		results, err := openaitools.RunChatCalls(turn, tools, msg.ToolCalls, openaitools.WithApprover(askUser(out)))
		if err != nil {
			return "", err // an error that should stop the run
		}
		for _, r := range results {
			text := r.OfTool.Content.OfString.Value
			fmt.Fprintf(out, "  <- %s %s\n", r.OfTool.ToolCallID, strings.ReplaceAll(text, "\n", "\n     "))
		}
		fmt.Fprintf(out, "  (%s in %.1fs)\n", plural(len(results), "call"), time.Since(start).Seconds())
		messages = append(messages, results...)
	}
	return "", errors.New("no answer after 6 turns")
}
