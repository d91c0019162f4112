package mcptoolset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// checkName refuses a server's name for a tool that no client can use
// safely, mapped or not (see offeredName for the name a model calls).
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
	}
	return nil
}

// maxCallableName is the longest tool name the core, and the models'
// APIs, accept.
const maxCallableName = 64

// schemaJSON encodes a schema the SDK decoded, and checks it against the
// limits. References out of the document are refused by
// [toolset.ParseSchema], which the caller runs next, with a
// *[toolset.SchemaRefError].
func schemaJSON(v any, lim ListLimits) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the schema: %w", err)
	}
	if len(b) > lim.MaxSchemaBytes {
		return nil, fmt.Errorf("the schema is %d bytes, more than the limit of %d", len(b), lim.MaxSchemaBytes)
	}
	if err := checkDepth(b, lim.MaxSchemaDepth); err != nil {
		return nil, err
	}
	return b, nil
}

// checkDepth refuses a schema whose objects and arrays nest deeper than
// maxDepth.
func checkDepth(b []byte, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("decoding the schema: %w", err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if depth++; depth > maxDepth {
				return fmt.Errorf("the schema is nested deeper than %d", maxDepth)
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}
