package mcptoolset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ListLimits bounds what a [Toolset] accepts from a server's tool listing;
// see [WithListLimits]. A zero field means its default.
type ListLimits struct {
	// MaxTools bounds the tools of one listing, all pages together; a
	// server that lists more fails the listing. The default is
	// [DefaultMaxTools].
	MaxTools int
	// MaxListBytes bounds the size of one listing, all pages together:
	// the tools' definitions encoded as JSON. A server that lists more
	// fails the listing. The default is [DefaultMaxListBytes]. Without
	// it, a server could make the process keep MaxTools times
	// MaxSchemaBytes of schemas.
	MaxListBytes int
	// MaxSchemaBytes bounds the size of each of a tool's schemas (input
	// and output), encoded as JSON. The default is [DefaultMaxSchemaBytes].
	MaxSchemaBytes int
	// MaxSchemaDepth bounds the nesting of JSON objects and arrays in each
	// of a tool's schemas. The default is [DefaultMaxSchemaDepth].
	MaxSchemaDepth int
	// MaxDescriptionBytes bounds the size of a tool's description and of
	// its title. The default is [DefaultMaxDescriptionBytes].
	MaxDescriptionBytes int
}

// Defaults of [ListLimits].
const (
	DefaultMaxTools            = 1000
	DefaultMaxListBytes        = 16 << 20
	DefaultMaxSchemaBytes      = 256 << 10
	DefaultMaxSchemaDepth      = 64
	DefaultMaxDescriptionBytes = 16 << 10
)

// maxNameBytes bounds a tool's name, as MCP does (1 to 128 characters).
const maxNameBytes = 128

func (l ListLimits) withDefaults() ListLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxTools, DefaultMaxTools)
	def(&l.MaxListBytes, DefaultMaxListBytes)
	def(&l.MaxSchemaBytes, DefaultMaxSchemaBytes)
	def(&l.MaxSchemaDepth, DefaultMaxSchemaDepth)
	def(&l.MaxDescriptionBytes, DefaultMaxDescriptionBytes)
	return l
}

// checkName refuses a name that no client can use safely.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("the tool has no name")
	case len(name) > maxNameBytes:
		return fmt.Errorf("the name is %d bytes long, more than %d", len(name), maxNameBytes)
	case !utf8.ValidString(name):
		return errors.New("the name is not valid UTF-8")
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }):
		return errors.New("the name holds spaces or control characters")
	case len(name) > maxCallableName || strings.ContainsFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-')
	}):
		// The core refuses such a name in every turn that holds it:
		// offered, the one tool would fail every turn of the agent.
		return fmt.Errorf("the name %q is not one a model can call: tool names must match ^[a-zA-Z0-9_-]{1,64}$", name)
	}
	return nil
}

// maxCallableName is the longest tool name the core, and the models'
// APIs, accept.
const maxCallableName = 64

// schemaJSON encodes a schema the SDK decoded, and checks it against the
// limits and for references out of the document.
func schemaJSON(v any, lim ListLimits) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the schema: %w", err)
	}
	if len(b) > lim.MaxSchemaBytes {
		return nil, fmt.Errorf("the schema is %d bytes, more than the limit of %d", len(b), lim.MaxSchemaBytes)
	}
	if err := checkSchemaDoc(b, lim.MaxSchemaDepth); err != nil {
		return nil, err
	}
	return b, nil
}

// checkSchemaDoc refuses a schema nested deeper than maxDepth, or that
// refers to anything outside itself: a "$ref", "$dynamicRef" or
// "$recursiveRef" that is not a fragment ("#...") or empty (the document
// itself), a "$schema" that is not
// a JSON Schema draft's own URL, or an "$id" (or, in a draft-04 schema,
// "id") that is neither a fragment nor a plain http(s) URL. Every object
// of the document is checked, values included, since a "$ref" can point at
// any of them.
func checkSchemaDoc(b []byte, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("decoding the schema: %w", err)
	}
	draft4 := false
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok {
			draft4 = strings.Contains(s, "/draft-04/") || strings.Contains(s, "/draft-03/")
		}
	}
	return walkSchema(doc, 0, maxDepth, draft4)
}

func walkSchema(v any, depth, maxDepth int, draft4 bool) error {
	switch v := v.(type) {
	case map[string]any:
		if depth >= maxDepth {
			return fmt.Errorf("the schema is nested deeper than %d", maxDepth)
		}
		if err := checkKeywords(v, draft4); err != nil {
			return err
		}
		for _, e := range v {
			if err := walkSchema(e, depth+1, maxDepth, draft4); err != nil {
				return err
			}
		}
	case []any:
		if depth >= maxDepth {
			return fmt.Errorf("the schema is nested deeper than %d", maxDepth)
		}
		for _, e := range v {
			if err := walkSchema(e, depth+1, maxDepth, draft4); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkKeywords(m map[string]any, draft4 bool) error {
	for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		if s, ok := m[k].(string); ok && s != "" && !strings.HasPrefix(s, "#") {
			return &ExternalRefError{Keyword: k, Ref: truncate(s, maxRefShown)}
		}
	}
	if s, ok := m["$schema"].(string); ok && !knownDraft(s) {
		return &ExternalRefError{Keyword: "$schema", Ref: truncate(s, maxRefShown)}
	}
	ids := []string{"$id"}
	if draft4 {
		ids = append(ids, "id")
	}
	for _, k := range ids {
		if s, ok := m[k].(string); ok && !strings.HasPrefix(s, "#") && !plainHTTPURL(s) {
			return &ExternalRefError{Keyword: k, Ref: truncate(s, maxRefShown)}
		}
	}
	return nil
}

// maxRefShown bounds a reference quoted in an error.
const maxRefShown = 120

// ExternalRefError reports a schema that refers to a document other than
// itself, which a [Toolset] refuses: validating against it could make the
// process read a file or fetch a URL.
type ExternalRefError struct {
	// Keyword is "$ref", "$dynamicRef", "$recursiveRef", "$schema", "$id"
	// or "id".
	Keyword string
	// Ref is the reference, cut to 120 bytes.
	Ref string
}

// Error implements error.
func (e *ExternalRefError) Error() string {
	if e.Keyword == "$schema" {
		return fmt.Sprintf("the schema's %q %q is not a JSON Schema draft", e.Keyword, e.Ref)
	}
	return fmt.Sprintf("the schema refers outside itself: %q %q (only references within the schema, \"#...\", are allowed)", e.Keyword, e.Ref)
}

// knownDraft reports whether s names a JSON Schema draft that the
// validator knows without loading anything.
func knownDraft(s string) bool {
	s = strings.TrimSuffix(s, "#")
	s, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if s, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	switch s {
	case "json-schema.org/draft-04/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-07/schema",
		"json-schema.org/draft/2019-09/schema", "json-schema.org/draft/2020-12/schema":
		return true
	}
	return false
}

// plainHTTPURL reports whether s is an absolute http or https URL with a
// host and no user information.
func plainHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil && u.Opaque == ""
}
