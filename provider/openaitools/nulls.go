package openaitools

import (
	"bytes"
	"encoding/json"
	"github.com/gotoolset/toolset/provider"
	"slices"
	"strings"
)

// Models that follow a strict schema send null for every optional property
// they leave out, and models in general often do. A tool's own schema may
// not accept null there (a Go string field that is omitempty, say), so
// before a call is run, dropNulls removes each null whose property is
// optional and whose schema does not accept null: for the tool, a null
// optional property means the property was not given.

// dropNulls returns args without the nulls of optional properties that the
// parameter schema params does not accept null for. Arguments that are not
// valid JSON, or that need no change, are returned as they are.
func dropNulls(params, args json.RawMessage) json.RawMessage {
	if !bytes.Contains(args, []byte("null")) {
		return args
	}
	schema, err := decodeJSON(params)
	if err != nil {
		return args
	}
	v, err := decodeJSON(args)
	if err != nil {
		return args
	}
	w := nullWalker{root: schema}
	if !w.walk(schema, v, 0) {
		return args
	}
	return encodeJSON(v)
}

type nullWalker struct {
	root any
}

// maxWalk bounds how deep the walk follows values and references.
const maxWalk = 64

// walk drops the optional nulls in v, described by schema, and reports
// whether it changed anything.
func (w nullWalker) walk(schema, v any, depth int) bool {
	if depth > maxWalk {
		return false
	}
	s := w.resolve(schema)
	changed := false
	switch v := v.(type) {
	case *provider.Object:
		o := w.branch(s, "object")
		if o == nil {
			return false
		}
		props, _ := o.Get("properties").(*provider.Object)
		if props == nil {
			return false
		}
		required := requiredSet(o)
		for _, k := range v.Keys() {
			ps, declared := props.Lookup(k)
			if !declared {
				continue
			}
			if v.Get(k) == nil {
				if !required[k] && !w.acceptsNull(ps, 0) {
					v.Delete(k)
					changed = true
				}
				continue
			}
			if w.walk(ps, v.Get(k), depth+1) {
				changed = true
			}
		}
	case []any:
		o := w.branch(s, "array")
		if o == nil {
			return false
		}
		items, ok := o.Lookup("items")
		if !ok {
			return false
		}
		for _, e := range v {
			if e != nil && w.walk(items, e, depth+1) {
				changed = true
			}
		}
	}
	return changed
}

// branch returns the schema that describes values of JSON type kind: s
// itself, or the first branch of its anyOf or oneOf that does.
func (w nullWalker) branch(s any, kind string) *provider.Object {
	o, ok := s.(*provider.Object)
	if !ok {
		return nil
	}
	if describes(o, kind) {
		return o
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		list, _ := o.Get(key).([]any)
		for _, b := range list {
			if bo, ok := w.resolve(b).(*provider.Object); ok && describes(bo, kind) {
				return bo
			}
		}
	}
	return nil
}

// describes reports whether o describes values of JSON type kind.
func describes(o *provider.Object, kind string) bool {
	switch t := o.Get("type").(type) {
	case string:
		return t == kind
	case []any:
		return slices.Contains(t, any(kind))
	}
	switch kind {
	case "object":
		_, ok := o.Lookup("properties")
		return ok
	case "array":
		_, ok := o.Lookup("items")
		return ok
	}
	return false
}

func requiredSet(o *provider.Object) map[string]bool {
	list, _ := o.Get("required").([]any)
	set := make(map[string]bool, len(list))
	for _, n := range list {
		if s, ok := n.(string); ok {
			set[s] = true
		}
	}
	return set
}

// acceptsNull reports whether schema s accepts null.
func (w nullWalker) acceptsNull(s any, depth int) bool {
	if depth > maxWalk {
		return false
	}
	s = w.resolve(s)
	switch s := s.(type) {
	case bool:
		return s
	case *provider.Object:
		return acceptsNull(s, func(b any) bool { return w.acceptsNull(b, depth+1) })
	}
	return false
}

// acceptsNull reports whether schema o accepts null; branch decides for a
// subschema, or nil to treat a subschema as not accepting null.
func acceptsNull(o *provider.Object, branch func(any) bool) bool {
	if branch == nil {
		branch = func(any) bool { return false }
	}
	constrained := false
	if t, ok := o.Lookup("type"); ok {
		constrained = true
		switch t := t.(type) {
		case string:
			if t == "null" {
				return true
			}
		case []any:
			if slices.Contains(t, any("null")) {
				return true
			}
		}
	}
	if e, ok := o.Lookup("enum"); ok {
		list, _ := e.([]any)
		return !constrained && slices.Contains(list, nil)
	}
	if c, ok := o.Lookup("const"); ok {
		return !constrained && c == nil
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if list, ok := o.Get(key).([]any); ok {
			constrained = true
			for _, b := range list {
				if branch(b) {
					return true
				}
			}
		}
	}
	if _, ok := o.Lookup("$ref"); ok {
		return branch(o.Get("$ref"))
	}
	return !constrained
}

// resolve follows a local $ref ("#/$defs/x") to the schema it names; any
// other schema is returned as it is.
func (w nullWalker) resolve(s any) any {
	for range maxWalk {
		if ref, ok := s.(string); ok { // a bare $ref value, from acceptsNull
			s = w.lookup(ref)
			continue
		}
		o, ok := s.(*provider.Object)
		if !ok {
			return s
		}
		ref, ok := o.Get("$ref").(string)
		if !ok {
			return s
		}
		target := w.lookup(ref)
		if target == nil {
			return s
		}
		s = target
	}
	return s
}

// lookup returns the subschema a local JSON Pointer reference names, or nil.
func (w nullWalker) lookup(ref string) any {
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	cur := w.root
	ptr := strings.TrimPrefix(ref, "#")
	if ptr == "" {
		return cur
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case *provider.Object:
			next, ok := c.Lookup(tok)
			if !ok {
				return nil
			}
			cur = next
		default:
			return nil
		}
	}
	return cur
}
