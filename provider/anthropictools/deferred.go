package anthropictools

import (
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
)

// WithDeferLoading sends deferred tools ([toolset.WithDeferred]) through
// Anthropic's own tool search, so that the tools array of a run stays the
// same, byte for byte, as searches reveal tools, and the prompt cache is
// kept. [Tools] sends the turn's whole catalogue
// ([toolset.ToolList.Catalog]): each deferred tool in its place with
// defer_loading set, revealed or not, and Anthropic leaves it out of the
// prompt until it is referenced. [RunCalls] sends the result of the
// turn's tool search ([toolset.NewToolSearch], which runs in the
// application as any other tool) as tool_reference blocks naming the tools
// found, which loads them; a found name that is not a deferred tool of
// the turn is left out, since Anthropic refuses a reference to a tool it
// was not sent. The search still records its reveals in the run, so a
// found tool can be called from the next step on, as without this option.
//
// Anthropic has no way to restrict the model to some of the tools sent:
// a tool hidden in a later turn (by a filter, say) leaves the array, and
// the cache is rebuilt from it.
func WithDeferLoading() Option { return func(o *provider.Options) { o.DeferLoading = true } }

func convertDeferred(t toolset.Tool) (anthropic.ToolUnionParam, error) {
	p, err := convert(t)
	if err == nil && t.Deferred() {
		p.OfTool.DeferLoading = anthropic.Bool(true)
	}
	return p, err
}

// resultsFor returns the conversion of the outcomes of tools' calls for the
// options o.
func resultsFor(tools *toolset.ToolList, o provider.Options) func(provider.Outcome) (anthropic.ContentBlockParamUnion, error) {
	if !o.DeferLoading {
		return resultBlock
	}
	var deferred map[string]bool // made at the first search result
	return func(oc provider.Outcome) (anthropic.ContentBlockParamUnion, error) {
		var found toolset.ToolSearchResult
		switch r := oc.Result.(type) {
		case toolset.ToolSearchResult:
			found = r
		case *toolset.ToolSearchResult:
			if r == nil {
				return resultBlock(oc)
			}
			found = *r
		default:
			return resultBlock(oc)
		}
		if t, ok := tools.Lookup(oc.Call.Name); oc.IsError || !ok || !t.IsToolSearch() {
			return resultBlock(oc) // not a search's result
		}
		if deferred == nil {
			deferred = map[string]bool{}
			for t := range tools.Catalog() {
				if t.Deferred() {
					deferred[t.Name] = true
				}
			}
		}
		return referenceBlock(oc.Call.ID, found, deferred), nil
	}
}

// referenceBlock is the tool_result of a search: a tool_reference block for
// each tool found that is one of the turn's deferred tools, once, in the
// search's order; with none, the search's note as text.
func referenceBlock(id string, found toolset.ToolSearchResult, deferred map[string]bool) anthropic.ContentBlockParamUnion {
	r := &anthropic.ToolResultBlockParam{ToolUseID: id}
	seen := make(map[string]bool, len(found.Tools))
	for _, t := range found.Tools {
		if !deferred[t.Name] || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfToolReference: &anthropic.ToolReferenceBlockParam{ToolName: t.Name}})
	}
	if len(r.Content) == 0 {
		note := "No tools matched; try other words."
		if len(found.Tools) == 0 && found.Note != "" {
			note = found.Note
		}
		r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: note}}}
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: r}
}
