package mcptoolset

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/gotoolset/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Content travels between MCP and toolset.Content as follows:
//
//	MCP content                      toolset.Part
//	text                             {Text}
//	image, audio                     {MIMEType, Data}
//	embedded resource, text          {URI, MIMEType, Text}
//	embedded resource, blob          {URI, MIMEType, Data}
//	resource link                    {URI, MIMEType}
//
// and back, so each kind keeps its kind through a round trip. A part with
// data but neither a URI nor an image or audio type goes out as an embedded
// resource with a made-up "urn:toolset:part:N" URI, since MCP has no
// content kind for plain binary data. Annotations and _meta are not carried,
// nor a resource link's name and description (its URI is).

// fromMCP converts the content of a tool result.
func fromMCP(res *mcp.CallToolResult) *toolset.Content {
	out := &toolset.Content{Parts: make([]toolset.Part, 0, len(res.Content)), Structured: res.StructuredContent}
	for _, c := range res.Content {
		out.Parts = append(out.Parts, partFromMCP(c))
	}
	return out
}

func partFromMCP(c mcp.Content) toolset.Part {
	switch c := c.(type) {
	case *mcp.TextContent:
		return toolset.Part{Text: c.Text}
	case *mcp.ImageContent:
		return toolset.Part{MIMEType: c.MIMEType, Data: nonNil(c.Data)}
	case *mcp.AudioContent:
		return toolset.Part{MIMEType: c.MIMEType, Data: nonNil(c.Data)}
	case *mcp.ResourceLink:
		return toolset.Part{URI: c.URI, MIMEType: c.MIMEType}
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return toolset.Part{Text: "[empty embedded resource]"}
		}
		p := toolset.Part{URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text}
		if c.Resource.Blob != nil {
			p.Data = c.Resource.Blob
		}
		return p
	}
	// Content kinds that tool results do not carry (sampling's tool use):
	// shown as JSON rather than dropped.
	b, err := json.Marshal(c)
	if err != nil {
		return toolset.Part{Text: fmt.Sprintf("[content of type %T]", c)}
	}
	return toolset.Part{Text: string(b)}
}

// nonNil keeps an empty payload distinguishable from no payload.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// toMCP converts a tool's result into an MCP result. structured says
// whether the tool declared a result schema, in which case the result also
// goes out as structured content.
func toMCP(v any, structured bool) (*mcp.CallToolResult, error) {
	switch c := v.(type) {
	case *toolset.Content:
		if c != nil {
			return contentToMCP(c)
		}
		v = nil
	case toolset.Content:
		return contentToMCP(&c)
	}
	text, err := toolset.ResultText(v)
	if err != nil {
		return nil, err
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if structured && v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding the structured result: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
	}
	return res, nil
}

func contentToMCP(c *toolset.Content) (*mcp.CallToolResult, error) {
	res := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(c.Parts)+1)}
	for i, p := range c.Parts {
		res.Content = append(res.Content, partToMCP(i, p))
	}
	if c.Structured != nil {
		b, err := json.Marshal(c.Structured)
		if err != nil {
			return nil, fmt.Errorf("encoding the structured result: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
		if len(c.Parts) == 0 {
			// Clients that read only content still see the result.
			res.Content = append(res.Content, &mcp.TextContent{Text: string(b)})
		}
	}
	return res, nil
}

func partToMCP(i int, p toolset.Part) mcp.Content {
	switch {
	case p.URI != "" && p.Data != nil:
		return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: p.URI, MIMEType: p.MIMEType, Blob: p.Data}}
	case p.URI != "" && p.Text != "":
		return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: p.URI, MIMEType: p.MIMEType, Text: p.Text}}
	case p.URI != "":
		return &mcp.ResourceLink{URI: p.URI, Name: linkName(p.URI), MIMEType: p.MIMEType}
	case p.Data != nil && strings.HasPrefix(p.MIMEType, "image/"):
		return &mcp.ImageContent{MIMEType: p.MIMEType, Data: p.Data}
	case p.Data != nil && strings.HasPrefix(p.MIMEType, "audio/"):
		return &mcp.AudioContent{MIMEType: p.MIMEType, Data: p.Data}
	case p.Data != nil:
		return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: fmt.Sprintf("urn:toolset:part:%d", i), MIMEType: p.MIMEType, Blob: p.Data,
		}}
	}
	return &mcp.TextContent{Text: p.Text}
}

// linkName names a resource link after the last element of its URI, which
// MCP requires and a Part does not carry.
func linkName(uri string) string {
	if name := path.Base(strings.TrimRight(uri, "/")); name != "." && name != "/" && name != "" {
		return name
	}
	return uri
}
