package provider_test

import (
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/stretchr/testify/assert"
)

// The scheme of a web URL is matched in either ASCII case (RFC 3986);
// anything else that merely looks like one is not a web URL.
func TestIsWebURL(t *testing.T) {
	for _, uri := range []string{
		"https://example.com/a.png", "http://example.com/a.png",
		"HTTPS://example.com/a.png", "Http://example.com/a.png", "hTtPs://example.com",
	} {
		assert.True(t, provider.IsWebURL(uri), uri)
	}
	for _, uri := range []string{
		"", "https", "https:/", "https:example.com", " https://example.com",
		"file:///etc/passwd", "FILE:///etc/passwd", "data:image/png;base64,AAAA", "ftp://example.com",
		"javascript://%0aalert(1)", "httpss://example.com", "htt://example.com",
		"httpſ://example.com", // U+017F folds to "s" in Unicode, not in ASCII
		"HTTPſ://example.com", "http\u212a://x",
		"\x00https://example.com",
	} {
		assert.False(t, provider.IsWebURL(uri), "%q", uri)
	}
}

// An image at a URL whose scheme is upper case is a media segment, as
// at its lower-case twin; one at a file URL is still described in words.
func TestSegmentsWebURLAnyCase(t *testing.T) {
	web := func(p toolset.Part) bool { return provider.IsImage(p.MIMEType) && provider.IsWebURL(p.URI) }
	segs, err := provider.Segments(&toolset.Content{Parts: []toolset.Part{
		{MIMEType: "image/png", URI: "HTTPS://example.com/a.png"},
		{MIMEType: "image/png", URI: "FILE:///etc/passwd"},
	}}, web)
	assert.NoError(t, err)
	if assert.Len(t, segs, 2) {
		assert.Equal(t, "HTTPS://example.com/a.png", segs[0].Media.URI)
		assert.Nil(t, segs[1].Media, "a file URL is no web URL in any case")
		assert.Equal(t, "[resource FILE:///etc/passwd (image/png)]", segs[1].Text, "described, not fetched")
	}
}
