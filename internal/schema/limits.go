package schema

import (
	"fmt"
	"strconv"

	"github.com/gotoolset/toolset/internal/jsontext"
	"github.com/gotoolset/toolset/internal/textcut"
)

// MaxKeyBytes bounds the keys of a schema's objects: property names, names
// of definitions, keywords. The compiler copies a key into the location
// of every subschema below it, and the encoders copy it again on each
// pass, so a key of a megabyte cost over a hundred megabytes before the
// schema was compiled or refused. Real property names are a few dozen
// bytes; providers take at most 64.
const MaxKeyBytes = 1024

// maxPatternBytes bounds the text of a "pattern", refused before the
// compiler is given the schema: a pattern of more bytes than this is no
// real one.
const maxPatternBytes = 64 << 10

// maxNameBytes bounds the strings that name a part of a schema or a
// format ("$anchor", "$id", "format", ...), which no real schema writes
// longer than a few dozen bytes. A reference ("$ref") is left to the
// reference rule and the compiler, which refuse one that names nothing
// with a bounded message: it names parts by keys, which are bounded.
const maxNameBytes = 8 << 10

// nameKeywords are the keywords whose string values maxNameBytes bounds.
var nameKeywords = map[string]bool{
	"$anchor": true, "$dynamicAnchor": true, "$recursiveAnchor": true,
	"$id": true, "id": true, "$schema": true, "format": true,
}

// SizeError reports a key, a pattern or a name ("$anchor", "$id",
// "format", ...) of a schema past its bound.
type SizeError struct {
	// What is "key", "pattern", or the keyword of a name ("$anchor", ...).
	What string
	// Location is the JSON Pointer of the object that holds it, its
	// tokens cut to a few dozen bytes each.
	Location string
	// Size is its length in bytes, and Max the bound.
	Size, Max int
	// Start is its beginning, cut.
	Start string
}

// Error implements error.
func (e *SizeError) Error() string {
	return fmt.Sprintf("the schema has a %s of %d bytes at %q (%q), more than the %d bytes a schema's %s may have",
		e.What, e.Size, e.Location, e.Start, e.Max, e.What)
}

// maxShownToken bounds each token of a location, and the start of the
// text, that a SizeError shows.
const maxShownToken = 40

// checkNodeSizes refuses a document, as Parse reads it, with a key or a
// name past its bound. It looks at every member of every object, values
// of "const" and "default" included, as checkNodeRefs does. Patterns are
// left to the compiler's check (checkDocSizes, then [maxPatternSize]):
// a long one costs only time linear in its length.
func checkNodeSizes(n any) error { return nodeSizes(n, nil) }

func nodeSizes(n any, loc []string) error {
	switch n := n.(type) {
	case *jsontext.Object:
		for _, kv := range n.Members() {
			if err := sizeProblem(kv.Key, kv.Value, loc, false); err != nil {
				return err
			}
			if err := nodeSizes(kv.Value, append(loc, kv.Key)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range n {
			if err := nodeSizes(e, append(loc, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkDocSizes is checkNodeSizes for a document decoded by encoding/json,
// as the compiler is given it, with patterns bounded too.
func checkDocSizes(doc any) error {
	var walk func(v any, loc []string) error
	walk = func(v any, loc []string) error {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if err := sizeProblem(k, e, loc, true); err != nil {
					return err
				}
				if err := walk(e, append(loc, k)); err != nil {
					return err
				}
			}
		case []any:
			for i, e := range v {
				if err := walk(e, append(loc, strconv.Itoa(i))); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(doc, nil)
}

// sizeProblem returns the error for the member key: v of the object at
// loc, if it is past a bound; patterns are bounded only if patterns is
// set.
func sizeProblem(key string, v any, loc []string, patterns bool) error {
	if len(key) > MaxKeyBytes {
		return &SizeError{What: "key", Location: shownPointer(loc), Size: len(key), Max: MaxKeyBytes, Start: textcut.Clip(key, maxShownToken)}
	}
	s, ok := v.(string)
	switch {
	case !ok:
	case patterns && key == "pattern" && len(s) > maxPatternBytes:
		return &SizeError{What: "pattern", Location: shownPointer(loc), Size: len(s), Max: maxPatternBytes, Start: textcut.Clip(s, maxShownToken)}
	case len(s) > maxNameBytes && nameKeywords[key]:
		return &SizeError{What: strconv.Quote(key), Location: shownPointer(loc), Size: len(s), Max: maxNameBytes, Start: textcut.Clip(s, maxShownToken)}
	}
	return nil
}

// shownPointer returns the JSON Pointer of loc for a message (see
// pointerOf), each token cut, and at most the last 16 tokens.
func shownPointer(loc []string) string {
	prefix := ""
	if len(loc) > 16 {
		prefix, loc = "/…", loc[len(loc)-16:]
	}
	cut := make([]string, len(loc))
	for i, t := range loc {
		cut[i] = textcut.Clip(t, maxShownToken)
	}
	return prefix + pointerOf(cut)
}
