package toolpkg

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzBoundStructured: whatever a result holds and whatever the budget,
// bounding it ends, and leaves it within the budget as JSON unless there
// is nothing more to leave out; a result that fits is left as it was.
func FuzzBoundStructured(f *testing.F) {
	f.Add("success", "hello", `{"a": 1}`, `[]`, 3, 1000, true)
	f.Add("partial", strings.Repeat("m", 5000), `"`+strings.Repeat("<", 3000)+`"`, `[{"name":"x"}]`, 0, 2000, false)
	f.Add(strings.Repeat("s", 200), "", `null`, ``, 64, 10, true)
	f.Fuzz(func(t *testing.T, status, message, data, objects string, artifacts, budget int, saved bool) {
		if budget < 0 || budget > 1<<20 || artifacts < 0 || artifacts > 100 {
			return
		}
		r := &Result{Status: status, Message: message}
		if json.Valid([]byte(data)) {
			r.Data = json.RawMessage(data)
		}
		if json.Valid([]byte(objects)) {
			r.DataObjects = json.RawMessage(objects)
		}
		for range artifacts {
			r.Artifacts = append(r.Artifacts, ArtifactRef{Name: "a.txt", Version: 1, Size: 10, MIMEType: "text/plain", Description: "d"})
		}
		var whole *ArtifactRef
		if saved {
			whole = &ArtifactRef{Name: "t_output.txt", Version: 2}
		}
		before := jsonSize(r)
		notes := boundStructured(r, budget, whole)
		if before <= budget {
			if len(notes) != 0 || jsonSize(r) != before {
				t.Fatalf("a result that fits (%d <= %d) was changed: %v", before, budget, notes)
			}
			return
		}
		if len(notes) == 0 || len(notes) != len(r.Omitted) {
			t.Fatalf("a result over the budget was changed without a note: %v, %v", notes, r.Omitted)
		}
		if jsonSize(r) > budget && (r.Data != nil || r.DataObjects != nil || r.Artifacts != nil || r.Message != "" || len(r.Status) > maxStatusBytes) {
			t.Fatalf("%d bytes over a budget of %d with more to leave out", jsonSize(r), budget)
		}
	})
}
