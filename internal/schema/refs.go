package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gotoolset/toolset/internal/jsontext"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/invopop/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// A tool's schema must be self-contained. Schemas come from places the
// program does not control (an MCP server, a package), and a validator that
// followed a "$ref" to "file:///etc/shadow" or "http://169.254.169.254/"
// would read local files or reach the network on their behalf, and could
// quote what it found back to the model. So:
//
//   - "$ref", "$dynamicRef" and "$recursiveRef" must be fragments ("#",
//     "#/$defs/x", "#anchor"): they resolve inside the resource that holds
//     them, which is always part of the same document, whatever "$id"
//     says;
//   - "$schema" must name one of the drafts the validator has built in
//     (2020-12, 2019-09, draft-07, draft-06, draft-04);
//   - "$id" (and, in a draft-04 document or part of one, "id") must be a fragment or an
//     absolute http(s) URL with a host and no user information: with every
//     reference a fragment it names only a part of the document, but a
//     "file:" base or a relative one would be resolved against the local
//     disk by any other reader the schema is handed to;
//   - "$anchor" may be anything: it only names a part of the document.
//
// [Parse], [CheckRefs] and [Validator.Compile] refuse other schemas with a
// *[RefError]. The check looks at every member of every object of the
// document, values of "const", "default" and the like included: a
// reference may point into any part of it. Whatever slips past it, the
// validator itself never loads a URL.

// RefError is a schema keyword that refers to something outside the
// schema: a file, a URL, or a meta-schema the validator does not know.
type RefError struct {
	// Keyword is "$ref", "$dynamicRef", "$recursiveRef", "$schema", "$id"
	// or "id".
	Keyword string
	// Ref is the keyword's value, cut to at most MaxQuoted bytes.
	Ref string
	// Location is the JSON Pointer of the object holding the keyword, such
	// as "/properties/city" (cut like Ref); it is empty for the root.
	Location string
}

// Error implements error. The words a user sees are those of the public
// error the root package turns a RefError into.
func (e *RefError) Error() string {
	return fmt.Sprintf("%s %q at %q refers outside the schema", e.Keyword, e.Ref, e.Location)
}

// refRule is what the reference check knows of the part of the document
// it walks.
type refRule struct {
	draft4 bool // "id" may set the base: the part is, or may be, draft-04
}

// within returns the rule for an object whose "$schema" member is draft
// (empty when it has none), inside a part whose rule is r. Draft-04 holds
// for the object and all it holds once any object that encloses it (or
// it) names it: the validator reads "id" in a resource of its own, with
// its own "$schema", anywhere in the document, and in the schemas under
// it, even under a "$schema" of another draft that it ignores (one
// without an identifier of its draft).
func (r refRule) within(draft string) refRule {
	d, ok := strings.CutPrefix(draft, "http://")
	if !ok {
		d, _ = strings.CutPrefix(draft, "https://")
	}
	r.draft4 = r.draft4 || strings.TrimSuffix(d, "#") == "json-schema.org/draft-04/schema"
	return r
}

// problem returns the error for member key: val of an object at loc, or
// nil when the member cannot make a reader look outside the document.
func (r refRule) problem(key, val string, loc []string) error {
	switch key {
	case "$ref", "$dynamicRef", "$recursiveRef":
		if strings.HasPrefix(val, "#") {
			return nil
		}
	case "$schema":
		if knownDraft(val) {
			return nil
		}
	case "id":
		if !r.draft4 || safeBase(val) {
			return nil
		}
	case "$id":
		if safeBase(val) {
			return nil
		}
	default:
		return nil
	}
	return &RefError{Keyword: key, Ref: CutText(val, MaxQuoted), Location: CutText(pointerOf(loc), MaxQuoted)}
}

// safeBase reports whether id may name a schema resource: a fragment, or
// an absolute http or https URL with a host and no user information.
func safeBase(id string) bool {
	if strings.HasPrefix(id, "#") {
		return true
	}
	u, err := url.Parse(id)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil && u.Opaque == ""
}

// knownDraft reports whether url names a meta-schema the validator has
// built in, so that "$schema": url loads nothing.
func knownDraft(url string) bool {
	u, ok := strings.CutPrefix(url, "https://")
	if !ok {
		if u, ok = strings.CutPrefix(url, "http://"); !ok {
			return false
		}
	}
	u = strings.TrimSuffix(u, "#")
	switch u {
	case "json-schema.org/schema",
		"json-schema.org/draft/2020-12/schema",
		"json-schema.org/draft/2019-09/schema",
		"json-schema.org/draft-07/schema",
		"json-schema.org/draft-06/schema",
		"json-schema.org/draft-04/schema":
		return true
	}
	return false
}

// pointerOf renders loc as a JSON Pointer.
func pointerOf(loc []string) string {
	var b strings.Builder
	for _, seg := range loc {
		b.WriteByte('/')
		seg = strings.ReplaceAll(seg, "~", "~0")
		b.WriteString(strings.ReplaceAll(seg, "/", "~1"))
	}
	return b.String()
}

// checkNodeRefs applies the reference rule to every object member of n, a
// document read by jsontext.
func checkNodeRefs(n any) error { return refRule{}.nodeRefs(n, nil) }

func (r refRule) nodeRefs(n any, loc []string) error {
	switch n := n.(type) {
	case *jsontext.Object:
		for _, kv := range n.Members() {
			if kv.Key == "$schema" {
				draft, _ := kv.Value.(string) // the last counts, as the validator reads it; draft-04 sticks
				r = r.within(draft)
			}
		}
		for _, kv := range n.Members() {
			if str, ok := kv.Value.(string); ok {
				if err := r.problem(kv.Key, str, loc); err != nil {
					return err
				}
			}
			if err := r.nodeRefs(kv.Value, append(loc, kv.Key)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range n {
			if err := r.nodeRefs(e, append(loc, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkValueRefs applies the reference rule to every object member of v,
// a JSON document decoded into Go values. Members are visited in key
// order, so the error reported is always the same one.
func checkValueRefs(v any) error { return refRule{}.valueRefs(v, nil) }

func (r refRule) valueRefs(v any, loc []string) error {
	switch v := v.(type) {
	case map[string]any:
		draft, _ := v["$schema"].(string)
		r = r.within(draft)
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s, ok := v[k].(string); ok {
				if err := r.problem(k, s, loc); err != nil {
					return err
				}
			}
			if err := r.valueRefs(v[k], append(loc, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := r.valueRefs(e, append(loc, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckRefs applies the reference rule to every object member of the JSON
// encoding of s. A reflected schema rarely holds anything the rule looks
// at, so a walk of the schema values that allocates nothing comes first;
// only a schema it cannot clear is encoded and checked member by member.
func CheckRefs(s *jsonschema.Schema) error {
	if plainSchema(s, 0) {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding the parameter schema: %w", err)
	}
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("decoding the parameter schema: %w", err)
	}
	return checkValueRefs(doc)
}

// errNoLoading is what the validator's loader answers for every URL.
var errNoLoading = errors.New("a tool's schema must be self-contained: no file or URL is loaded")

// refusingLoader is the validator's URL loader: it loads nothing.
type refusingLoader struct{}

func (refusingLoader) Load(string) (any, error) { return nil, errNoLoading }

// MaxQuoted bounds the bytes of untrusted text (a value, a name, a
// reference) quoted into an error message.
const MaxQuoted = 100

// CutText returns s cut to at most max bytes, on a rune boundary, with an
// ellipsis and the full length when cut.
func CutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return textcut.Prefix(s, max) + textcut.Ellipsis + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// plainSchema reports whether s, walked as values, holds no reference, no
// $schema, no keyword of its own (Extras) and no data that could hold an
// object member (an object or array in enum, const, default or
// examples): then its JSON encoding has nothing for the rule to refuse.
// Too deep a schema is not cleared.
func plainSchema(s *jsonschema.Schema, depth int) bool {
	if s == nil {
		return true
	}
	if depth > maxSchemaDepth || s.Ref != "" || s.DynamicRef != "" || s.Version != "" || s.ID != "" || len(s.Extras) > 0 ||
		!scalars(s.Enum) || !scalars(s.Examples) || !scalar(s.Const) || !scalar(s.Default) {
		return false
	}
	depth++
	for _, d := range s.Definitions {
		if !plainSchema(d, depth) {
			return false
		}
	}
	for _, list := range [...][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
		for _, e := range list {
			if !plainSchema(e, depth) {
				return false
			}
		}
	}
	for _, e := range [...]*jsonschema.Schema{s.Not, s.If, s.Then, s.Else, s.Items, s.Contains,
		s.AdditionalProperties, s.PropertyNames, s.ContentSchema} {
		if !plainSchema(e, depth) {
			return false
		}
	}
	for _, m := range [...]map[string]*jsonschema.Schema{s.DependentSchemas, s.PatternProperties} {
		for _, e := range m {
			if !plainSchema(e, depth) {
				return false
			}
		}
	}
	if s.Properties != nil {
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			if !plainSchema(p.Value, depth) {
				return false
			}
		}
	}
	return true
}

func scalars(vs []any) bool {
	for _, v := range vs {
		if !scalar(v) {
			return false
		}
	}
	return true
}

// scalar reports whether v encodes as a JSON string, number, boolean or
// null.
func scalar(v any) bool {
	switch v.(type) {
	case nil, string, bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, json.Number:
		return true
	}
	return false
}
