package provider

import (
	"strings"

	"github.com/gotoolset/toolset"
)

// Segment is a piece of a tool result as a provider is sent it: text, or
// one media part the provider accepts in a tool result.
type Segment struct {
	// Text is the text of a text segment.
	Text string
	// Media is the media part, or nil for a text segment.
	Media *toolset.Part
}

// Segments splits a result into the segments a provider is sent. A
// [*toolset.Content] keeps its order: each part that supported accepts
// becomes a media segment, and each run of other parts becomes one text
// segment, rendered as [toolset.Content.ModelText] renders them (media the
// provider cannot take described in words). A content with no text at all
// ends with its structured result as JSON. Any other result is one text
// segment, rendered with [toolset.ResultText]. A panic of the result's
// own encoding (its ModelText or MarshalJSON) is a [*toolset.PanicError].
func Segments(result any, supported func(toolset.Part) bool) ([]Segment, error) {
	c, ok := result.(*toolset.Content)
	if !ok || c == nil {
		text, err := toolset.ResultText(result)
		if err != nil {
			return nil, err
		}
		return []Segment{{Text: text}}, nil
	}
	var out []Segment
	var run []toolset.Part
	hasText := false
	flush := func() {
		if len(run) > 0 {
			out = append(out, Segment{Text: (&toolset.Content{Parts: run}).ModelText()})
			run = nil
		}
	}
	for i := range c.Parts {
		p := c.Parts[i]
		if p.IsText() {
			hasText = true
		}
		if !p.IsText() && supported(p) {
			flush()
			out = append(out, Segment{Media: &c.Parts[i]})
			continue
		}
		run = append(run, p)
	}
	flush()
	if !hasText && c.Structured != nil {
		// Through ResultText, which recovers a panicking MarshalJSON.
		text, err := toolset.ResultText(&toolset.Content{Structured: c.Structured})
		if err != nil {
			return nil, err
		}
		out = append(out, Segment{Text: text})
	}
	if len(out) == 0 {
		out = append(out, Segment{Text: ""})
	}
	return out, nil
}

// HasMedia reports whether segs hold a media segment.
func HasMedia(segs []Segment) bool {
	for _, s := range segs {
		if s.Media != nil {
			return true
		}
	}
	return false
}

// JoinText joins the text of text segments with newlines, as
// [toolset.Content.ModelText] joins parts.
func JoinText(segs []Segment) string {
	// A result (an MCP server's, say) may hold any number of parts: the
	// text is built in one buffer, in time linear in its length.
	var b strings.Builder
	first := true
	for _, seg := range segs {
		if seg.Media != nil {
			continue
		}
		if !first {
			b.WriteByte('\n')
		}
		b.WriteString(seg.Text)
		first = false
	}
	return b.String()
}

// IsImage reports whether mimeType is an image type that every provider
// takes in a tool result: JPEG, PNG, GIF or WebP.
func IsImage(mimeType string) bool {
	switch mimeType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return true
	}
	return false
}

// IsWebURL reports whether uri is an http or https URL, which a provider
// fetches itself. The scheme is matched without regard to ASCII case, as
// RFC 3986 has it ("HTTPS://" is "https://"); only ASCII letters fold, so
// a scheme that merely folds to "https" in Unicode (with U+017F, the long
// s) is no web URL.
func IsWebURL(uri string) bool {
	return hasASCIIPrefixFold(uri, "https://") || hasASCIIPrefixFold(uri, "http://")
}

// hasASCIIPrefixFold reports whether s begins with prefix, a lower-case
// ASCII string, with ASCII letters of s matched in either case.
func hasASCIIPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}
