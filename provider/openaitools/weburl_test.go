package openaitools_test

import (
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider/openaitools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An image at a URL whose scheme is upper case reaches the model as an
// image, as at its lower-case twin; a file URL in upper case is still
// only described.
func TestResponseOutputImageURLAnyCase(t *testing.T) {
	content := &toolset.Content{Parts: []toolset.Part{
		{MIMEType: "image/jpeg", URI: "HTTPS://example.com/a.jpg"},
		{MIMEType: "image/jpeg", URI: "Http://example.com/b.jpg"},
		{MIMEType: "image/jpeg", URI: "FILE:///etc/passwd"},
	}}
	item, err := openaitools.ResponseOutput(toolset.ToolCall{ID: "c1", Name: "chart"}, content, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"function_call_output","call_id":"c1","output":[`+
		`{"type":"input_image","image_url":"HTTPS://example.com/a.jpg"},`+
		`{"type":"input_image","image_url":"Http://example.com/b.jpg"},`+
		`{"type":"input_text","text":"[resource FILE:///etc/passwd (image/jpeg)]"}]}`, marshal(t, item))
}
