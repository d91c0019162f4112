package mcptoolset

import (
	"bytes"
	"strings"
	"testing"
)

// The tail kept of a server's stderr is its last MaxStderrTail bytes,
// however it was cut into writes, and what is written is passed on whole.
func TestStderrTailIsTheLastBytesWritten(t *testing.T) {
	var all bytes.Buffer
	for i := range 5000 {
		all.WriteString(strings.Repeat(string(rune('a'+i%26)), i%7))
		all.WriteString("é\n")
	}
	data := all.Bytes()
	for _, chunk := range []int{1, 3, 100, MaxStderrTail - 1, MaxStderrTail, 3 * MaxStderrTail, len(data)} {
		var out bytes.Buffer
		w := &tailWriter{w: &out}
		for p := data; len(p) > 0; p = p[min(chunk, len(p)):] {
			if _, err := w.Write(p[:min(chunk, len(p))]); err != nil {
				t.Fatal(err)
			}
		}
		got, cut := w.tail()
		want := data[len(data)-MaxStderrTail:]
		for len(want) > 0 && want[0]&0xC0 == 0x80 {
			want = want[1:]
		}
		if got != string(want) || !cut {
			t.Errorf("chunks of %d: tail %q (cut %v), want the last %d bytes", chunk, got[:min(40, len(got))], cut, len(want))
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Errorf("chunks of %d: %d bytes passed on, want all %d", chunk, out.Len(), len(data))
		}
	}
	w := &tailWriter{}
	_, _ = w.Write([]byte("short\n"))
	if got, cut := w.tail(); got != "short\n" || cut {
		t.Errorf("tail %q (cut %v), want all of it", got, cut)
	}
}
