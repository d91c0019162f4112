package openaitools

import (
	"context"
	"encoding/json"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// WithDeferLoading sends deferred tools ([toolset.WithDeferred]) through
// the Responses API's own tool search, so that the tools array of a run
// stays the same, byte for byte, as searches reveal tools, and the prompt
// cache is kept. [ResponseTools] sends the turn's whole catalogue
// ([toolset.ToolList.Catalog]): each deferred tool in its place with
// defer_loading set, revealed or not, and the turn's tool search
// ([toolset.NewToolSearch]) as a tool_search tool that the application
// executes (execution "client"). [RunResponseCalls] runs the model's
// tool_search_call items with that search, which records its reveals in
// the run as it does without this option, and answers each with a
// tool_search_output item holding the definitions of the tools found; a
// found name that is not a deferred tool of the turn is left out. An
// application that runs the search itself answers it with
// [ResponseOutputFor], which takes the turn's tools, not [ResponseOutput].
//
// Chat Completions has no tool search of its own: [ChatTools] and
// [RunChatCalls] ignore this option, and the library's search shows the
// tools it finds from the next turn on.
func WithDeferLoading() Option { return func(o *provider.Options) { o.DeferLoading = true } }

// runResponseCalls is RunResponseCalls with defer loading or namespaces:
// the function calls (a namespaced one by its full name) and the
// client-executed tool_search_call items, in item order, the latter run by
// the turn's tool search.
func runResponseCalls(ctx context.Context, tools *toolset.ToolList, items []responses.ResponseOutputItemUnion, o provider.Options) ([]responses.ResponseInputItemUnionParam, error) {
	search := "tool_search" // the name a call is reported under when the turn has no search
	for t := range tools.All() {
		if t.IsToolSearch() {
			search = t.Name
			break
		}
	}
	var calls []toolset.ToolCall
	var searches map[string]bool
	for _, it := range items {
		switch it.Type {
		case "function_call":
			fc := it.AsFunctionCall()
			calls = append(calls, toolset.ToolCall{ID: fc.CallID, Name: fullName(fc, namespaces(o)), Args: json.RawMessage(fc.Arguments)})
		case "tool_search_call":
			c, ok := searchCall(it, search)
			if !ok {
				continue
			}
			if searches == nil {
				searches = map[string]bool{}
			}
			searches[c.ID] = true
			calls = append(calls, c)
		}
	}
	if searches == nil {
		return provider.RunCalls(ctx, pkg, tools, calls, o, execute(tools), responseOutput)
	}
	return provider.RunCalls(ctx, pkg, tools, calls, o, execute(tools), func(oc provider.Outcome) (responses.ResponseInputItemUnionParam, error) {
		if !searches[oc.Call.ID] {
			return responseOutput(oc)
		}
		return searchOutput(tools, oc, o.Strict)
	})
}

// searchOutput is the tool_search_output item of a search's outcome: the
// definitions of the tools found that are deferred tools of the turn, once
// each, in the search's order. A search that failed, or found none of
// them, loads nothing.
func searchOutput(tools *toolset.ToolList, oc provider.Outcome, strict bool) (responses.ResponseInputItemUnionParam, error) {
	item := &responses.ResponseToolSearchOutputItemParam{
		CallID:    openai.String(oc.Call.ID),
		Execution: responses.ResponseToolSearchOutputItemParamExecutionClient,
		Status:    responses.ResponseToolSearchOutputItemParamStatusCompleted,
		Tools:     []responses.ResponseToolSearchOutputItemParamToolUnion{},
	}
	var found []toolset.FoundTool
	switch r := oc.Result.(type) {
	case toolset.ToolSearchResult:
		found = r.Tools
	case *toolset.ToolSearchResult:
		if r != nil {
			found = r.Tools
		}
	}
	if oc.IsError || len(found) == 0 {
		return responses.ResponseInputItemUnionParam{OfToolSearchOutput: item}, nil
	}
	want := make(map[string]int, len(found)) // name -> rank
	for i, f := range found {
		if _, dup := want[f.Name]; !dup {
			want[f.Name] = i
		}
	}
	defs := make([]*responses.FunctionToolParam, len(found))
	for t := range tools.Catalog() {
		i, ok := want[t.Name]
		if !ok || !t.Deferred() {
			continue
		}
		f, err := convert(t, strict)
		if err != nil {
			return responses.ResponseInputItemUnionParam{}, err
		}
		f.deferred = true
		defs[i] = f.responseTool()
	}
	for _, d := range defs {
		if d != nil {
			item.Tools = append(item.Tools, responses.ResponseToolSearchOutputItemParamToolUnion{OfFunction: d})
		}
	}
	return responses.ResponseInputItemUnionParam{OfToolSearchOutput: item}, nil
}

// searchCall returns a tool_search_call item that the application is to
// execute as a call of the tool search named search; false for one
// OpenAI executed itself.
func searchCall(it responses.ResponseOutputItemUnion, search string) (toolset.ToolCall, bool) {
	sc := it.AsToolSearchCall()
	if sc.Execution != "client" {
		return toolset.ToolCall{}, false
	}
	args := json.RawMessage(sc.JSON.Arguments.Raw())
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	return toolset.ToolCall{ID: sc.CallID, Name: search, Args: args}, true
}
