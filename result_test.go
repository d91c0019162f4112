package toolset_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// summary renders itself for the model.
type summary struct{ n int }

func (s summary) ModelText() string { return fmt.Sprintf("found %d rows", s.n) }

// TestResultText renders each kind of result as the text a model is sent.
func TestResultText(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"a string as itself", "plain <text> & \"quotes\"", "plain <text> & \"quotes\""},
		{"JSON bytes as they are", json.RawMessage(`{ "a" : 1 }`), `{ "a" : 1 }`},
		{"bytes as they are", []byte("raw"), "raw"},
		{"nil", nil, "null"},
		{"a ModelText method", summary{n: 3}, "found 3 rows"},
		{"anything else as JSON", forecast{City: "Paris", Temp: 21.5}, `{"city":"Paris","temp":21.5}`},
		{"a number", 42, "42"},
		{"Content", &toolset.Content{Parts: []toolset.Part{{Text: "hello"}}}, "hello"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := toolset.ResultText(c.v)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}

	_, err := toolset.ResultText(make(chan int))
	require.ErrorContains(t, err, "toolset: encoding the result")
}

// TestContentModelText renders text parts as themselves, media and
// resources as a short description, and the structured result only when
// there is no text.
func TestContentModelText(t *testing.T) {
	png := toolset.Part{MIMEType: "image/png", Data: make([]byte, 1024)}
	doc := toolset.Part{URI: "file:///r/report.pdf", MIMEType: "application/pdf", Text: "Q3 report"}
	assert.True(t, toolset.Part{Text: "hi"}.IsText())
	assert.False(t, png.IsText())
	assert.False(t, doc.IsText())

	c := &toolset.Content{Parts: []toolset.Part{{Text: "Here is the chart:"}, png, doc}, Structured: map[string]int{"rows": 3}}
	assert.Equal(t, "Here is the chart:\n[image/png, 1024 bytes]\n[resource file:///r/report.pdf (application/pdf)]\nQ3 report", c.ModelText(),
		"with text, the structured result is not repeated")

	c = &toolset.Content{Parts: []toolset.Part{{Data: []byte{1, 2}}, {URI: "mem://x"}}, Structured: map[string]int{"rows": 3}}
	assert.Equal(t, "[unknown type, 2 bytes]\n[resource mem://x (unknown type)]\n{\"rows\":3}", c.ModelText(),
		"without text, the structured result is what the model reads")

	text, err := toolset.ResultText(c)
	require.NoError(t, err)
	assert.Equal(t, c.ModelText(), text, "ResultText renders a Content as its ModelText")
	assert.Empty(t, (&toolset.Content{}).ModelText())
	assert.Empty(t, (&toolset.Content{Structured: make(chan int)}).ModelText(), "ModelText leaves out what cannot be encoded")
}
