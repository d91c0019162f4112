package toolset

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Content is a tool result made of parts, for tools that return more than
// text (an MCP tool may return images or embedded resources). Provider
// adapters send the parts the provider supports and describe the others in
// text.
type Content struct {
	// Parts are the pieces of the result, in order.
	Parts []Part
	// Structured is the structured form of the result, if the tool gave one.
	Structured any
}

// Part is one piece of a [Content] result. A part with only Text is text;
// one with Data or a URI is media or a resource, described by MIMEType.
type Part struct {
	// Text is the text of a text part, or the text content of a resource
	// part.
	Text string
	// MIMEType is the media type of Data or of the resource at URI, such as
	// "image/png"; empty for text.
	MIMEType string
	// Data is the content of an inline media part (image, audio, file).
	Data []byte
	// URI locates a resource the result refers to instead of inlining it.
	URI string
}

// IsText reports whether p is a plain text part.
func (p Part) IsText() bool { return p.MIMEType == "" && p.Data == nil && p.URI == "" }

// ModelText renders the content as text: text parts as themselves, other
// parts as a short description, and, when there is no text at all, the
// structured result as JSON. A structured result that cannot be encoded
// is left out here; [ResultText] reports it as an error.
func (c *Content) ModelText() string {
	text, _ := c.modelText()
	return text
}

// modelText is ModelText, with the error of encoding the structured
// result, which ModelText leaves out.
func (c *Content) modelText() (string, error) {
	var parts []string
	hasText := false
	for _, p := range c.Parts {
		switch {
		case p.IsText():
			hasText = true
			parts = append(parts, p.Text)
		case p.URI != "":
			parts = append(parts, fmt.Sprintf("[resource %s (%s)]", p.URI, orUnknown(p.MIMEType)))
			if p.Text != "" {
				parts = append(parts, p.Text)
			}
		default:
			parts = append(parts, fmt.Sprintf("[%s, %d bytes]", orUnknown(p.MIMEType), len(p.Data)))
		}
	}
	if !hasText && c.Structured != nil {
		b, err := json.Marshal(c.Structured)
		if err != nil {
			return strings.Join(parts, "\n"), fmt.Errorf("toolset: encoding the structured result: %w", err)
		}
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n"), nil
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// ResultText renders a tool's result as the text a model is sent: a string
// as itself, JSON bytes as they are, a value with a ModelText method (such
// as [*Content]) through it, nil as "null", anything else as JSON. A value
// that cannot be encoded, including the structured result of a Content
// rendered as JSON, is an error; a panic of the value's own ModelText or
// MarshalJSON becomes a [*PanicError].
func ResultText(v any) (text string, err error) {
	defer func() {
		if p := recover(); p != nil {
			text, err = "", newPanicError("result encoding", "", "", p)
		}
	}()
	switch v := v.(type) {
	case nil:
		return "null", nil
	case string:
		return v, nil
	case json.RawMessage:
		return string(v), nil
	case []byte:
		return string(v), nil
	case *Content:
		if v == nil {
			return "null", nil
		}
		return v.modelText()
	case interface{ ModelText() string }:
		return v.ModelText(), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toolset: encoding the result: %w", err)
	}
	return string(b), nil
}
