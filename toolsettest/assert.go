package toolsettest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
)

// AssertNames checks the names of the turn's tools, in the order the model
// is sent them. It reports whether they match.
func AssertNames(t testing.TB, tools *toolset.ToolList, want ...string) bool {
	t.Helper()
	got := tools.Names()
	if slices.Equal(got, want) {
		return true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "toolsettest: tool names differ\n  want: %s\n  got:  %s", strings.Join(want, ", "), strings.Join(got, ", "))
	if missing := minus(want, got); len(missing) > 0 {
		fmt.Fprintf(&b, "\n  missing: %s", strings.Join(missing, ", "))
	}
	if extra := minus(got, want); len(extra) > 0 {
		fmt.Fprintf(&b, "\n  unexpected: %s", strings.Join(extra, ", "))
	}
	if len(minus(want, got)) == 0 && len(minus(got, want)) == 0 {
		b.WriteString("\n  (same names, different order)")
	}
	t.Errorf("%s", b.String())
	return false
}

// minus returns the names of a that are not in b, in order.
func minus(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// AssertSchema checks the parameter schema of the tool named name against
// want, a JSON document; key order and spacing do not matter. It reports
// whether they are equal.
func AssertSchema(t testing.TB, tools *toolset.ToolList, name, want string) bool {
	t.Helper()
	tool, ok := tools.Lookup(name)
	if !ok {
		t.Errorf("toolsettest: no tool %q this turn; the tools are: %s", name, strings.Join(tools.Names(), ", "))
		return false
	}
	got, err := tool.ParametersJSON()
	if err != nil {
		t.Errorf("toolsettest: tool %q: %v", name, err)
		return false
	}
	wantText, err := canonical([]byte(want))
	if err != nil {
		t.Errorf("toolsettest: the wanted schema of %q is not valid JSON: %v", name, err)
		return false
	}
	gotText, err := canonical(got)
	if err != nil {
		t.Errorf("toolsettest: the schema of %q is not valid JSON: %v", name, err)
		return false
	}
	if wantText == gotText {
		return true
	}
	t.Errorf("toolsettest: the parameter schema of %q differs:\n%s", name, lineDiff("want", wantText, "got", gotText))
	return false
}

// canonical returns a JSON document indented with sorted keys, so that two
// equal documents give the same text.
func canonical(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if dec.More() {
		return "", errors.New("data after the JSON value")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// AssertConflicts checks that err is a [*toolset.NameConflictError] whose
// conflicts are exactly want: the clashing names, in the order the error
// lists them, each with its contributors as the error names them
// (`Prefixed#0 "db"`, `Tool#1 "search"`, "Combined#0/Function#1").
// It reports whether they match.
func AssertConflicts(t testing.TB, err error, want ...toolset.NameConflict) bool {
	t.Helper()
	var nce *toolset.NameConflictError
	if !errors.As(err, &nce) {
		t.Errorf("toolsettest: want a *toolset.NameConflictError, got %s", describeErr(err))
		return false
	}
	if reflect.DeepEqual(normalize(nce.Conflicts), normalize(want)) {
		return true
	}
	t.Errorf("toolsettest: name conflicts differ:\n%s", lineDiff("want", conflictText(want), "got", conflictText(nce.Conflicts)))
	return false
}

func normalize(cs []toolset.NameConflict) []toolset.NameConflict {
	if len(cs) == 0 {
		return nil
	}
	return cs
}

func conflictText(cs []toolset.NameConflict) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%q contributed by: %s\n", c.Name, strings.Join(c.Contributors, ", "))
	}
	return b.String()
}

// AssertInvalidNames checks that err is a [*toolset.NameConflictError]
// whose invalid names are exactly names, in the order the error lists
// them. It reports whether they match.
func AssertInvalidNames(t testing.TB, err error, names ...string) bool {
	t.Helper()
	var nce *toolset.NameConflictError
	if !errors.As(err, &nce) {
		t.Errorf("toolsettest: want a *toolset.NameConflictError, got %s", describeErr(err))
		return false
	}
	var got []string
	for _, n := range nce.Invalid {
		got = append(got, n.Name)
	}
	if slices.Equal(got, names) {
		return true
	}
	t.Errorf("toolsettest: invalid names differ\n  want: %q\n  got:  %q", names, got)
	return false
}

func describeErr(err error) string {
	if err == nil {
		return "no error"
	}
	return fmt.Sprintf("%T: %v", err, err)
}
