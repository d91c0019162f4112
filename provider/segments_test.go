package provider_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/provider"
	"github.com/stretchr/testify/assert"
)

func TestJoinText(t *testing.T) {
	img := &toolset.Part{MIMEType: "image/png"}
	assert.Equal(t, "", provider.JoinText(nil))
	assert.Equal(t, "a\nb", provider.JoinText([]provider.Segment{{Text: "a"}, {Media: img}, {Text: "b"}}))
	assert.Equal(t, "\nb", provider.JoinText([]provider.Segment{{Text: ""}, {Text: "b"}, {Media: img}}))
}

// A result of very many parts, as a hostile server may send, is joined in
// time linear in its text: 50,000 segments of 100 bytes each (5 MB) take
// far less than the seconds that copying the text once per segment did.
func TestJoinTextManySegments(t *testing.T) {
	img := &toolset.Part{MIMEType: "image/png"}
	text := strings.Repeat("x", 100)
	var segs []provider.Segment
	for range 50000 {
		segs = append(segs, provider.Segment{Text: text}, provider.Segment{Media: img})
	}
	start := time.Now()
	got := provider.JoinText(segs)
	elapsed := time.Since(start)
	assert.Len(t, got, 50000*101-1)
	assert.Less(t, elapsed, 2*time.Second)
}
