package openaitools

import (
	"slices"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// WithNamespace sends the tools of p, a [toolset.Prefixed] among the
// turn's toolsets, to the Responses API as one namespace tool: named by
// p's prefix, described by description (what the group's tools are for),
// and holding each of p's tools by its name without the prefix. The
// model's calls name the namespace and the tool, and [RunResponseCalls]
// runs the prefixed tool. Deferred tools and the tool search stay out of
// namespaces. Chat Completions has no namespaces: [ChatTools] ignores
// this option.
func WithNamespace(p *toolset.Prefixed, description string) Option {
	prefix, sep := p.Prefix()
	return func(o *provider.Options) {
		if prefix != "" {
			ns := []provider.Namespace{{Prefix: prefix, Separator: sep, Description: description}}
			if o.Namespaces != nil {
				ns = append(slices.Clip(*o.Namespaces), ns[0])
			}
			o.Namespaces = &ns
		}
	}
}

// namespaceOf returns the namespace a tool named name belongs to, and its
// name in it; false for none.
func namespaceOf(name string, ns []provider.Namespace) (int, string, bool) {
	for i, n := range ns {
		if rest, ok := strings.CutPrefix(name, n.Prefix+n.Separator); ok && rest != "" {
			return i, rest, true
		}
	}
	return 0, "", false
}

// group puts the functions of fs that belong to a namespace of ns into
// one namespace tool each, where the namespace's first function was; out
// is fs as sent, one for one.
func group(out []responses.ToolUnionParam, fs []function, ns []provider.Namespace) []responses.ToolUnionParam {
	at := make(map[int]int, len(ns)) // namespace -> its index in grouped
	grouped := make([]responses.ToolUnionParam, 0, len(out))
	for i, f := range fs {
		n, rest, ok := namespaceOf(f.name, ns)
		if !ok || f.deferred || f.search {
			grouped = append(grouped, out[i])
			continue
		}
		j, seen := at[n]
		if !seen {
			j = len(grouped)
			at[n] = j
			grouped = append(grouped, responses.ToolUnionParam{OfNamespace: &responses.NamespaceToolParam{
				Name: ns[n].Prefix, Description: ns[n].Description,
			}})
		}
		nt := grouped[j].OfNamespace
		nt.Tools = append(nt.Tools, responses.NamespaceToolToolUnionParam{OfFunction: &responses.NamespaceToolToolFunctionParam{
			Name:        rest,
			Description: optString(f.description),
			Parameters:  f.params,
			Strict:      openai.Bool(f.strict),
		}})
	}
	return grouped
}

// fullName is the name of the tool a function call calls: namespace,
// separator and name for a call in a namespace (the separator of ns's
// namespace of that name, or "_").
func fullName(fc responses.ResponseFunctionToolCall, ns []provider.Namespace) string {
	if fc.Namespace == "" {
		return fc.Name
	}
	for _, n := range ns {
		if n.Prefix == fc.Namespace {
			return n.Prefix + n.Separator + fc.Name
		}
	}
	return fc.Namespace + "_" + fc.Name
}

// needsMapping reports whether items hold a call that is not a plain
// function call: a namespaced one, or a tool_search_call to execute.
func needsMapping(items []responses.ResponseOutputItemUnion) bool {
	for i := range items {
		switch items[i].Type {
		case "tool_search_call":
			return true
		case "function_call":
			if items[i].Namespace != "" {
				return true
			}
		}
	}
	return false
}

// namespaces returns the namespaces of o.
func namespaces(o provider.Options) []provider.Namespace {
	if o.Namespaces == nil {
		return nil
	}
	return *o.Namespaces
}
