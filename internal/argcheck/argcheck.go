// Package argcheck proves tool-call arguments valid against a JSON Schema
// without decoding them.
//
// The authority on validity is github.com/santhosh-tekuri/jsonschema/v6
// with its default settings (draft 2020-12, formats not asserted, Go regexp
// syntax). That validator needs the arguments decoded into Go values first,
// which costs more than the rest of a tool call. A [Checker] instead walks
// the raw JSON bytes once, without allocating, and answers one of two
// things: "proven valid" or "not proven". It never answers "proven valid"
// for arguments the full validator would reject; when it cannot be sure (a
// keyword outside the supported subset, a string escape whose decoded form
// matters, a number too long to compare exactly, ...) it answers "not
// proven" and the caller runs the full validator, which then gives the
// verdict and the error messages.
//
// The supported subset of JSON Schema 2020-12 is: boolean schemas, type,
// properties, required, additionalProperties, items (a single schema),
// enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// minLength, maxLength, pattern, minItems, maxItems, uniqueItems,
// minProperties, maxProperties, anyOf, and oneOf whose branches all declare
// pairwise disjoint types. Annotations (title, description, default,
// examples, deprecated, readOnly, writeOnly, $comment, format,
// contentEncoding, contentMediaType) and unknown keywords are ignored, as
// the full validator ignores them; $schema (naming draft 2020-12) and $id
// are accepted at the root only. Any other keyword makes the whole schema
// unsupported.
package argcheck

import (
	"unicode/utf8"
)

// maxDepth bounds the nesting of arrays and objects the checker follows;
// deeper arguments are not proven.
const maxDepth = 1000

// Checker proves JSON arguments valid against one schema. A Checker is
// immutable after [Compile] and safe for concurrent use.
type Checker struct {
	root *node // nil accepts every JSON value
	fast bool
}

// Fast reports whether the schema is within the supported subset. If it
// is not, Valid always returns false.
func (c *Checker) Fast() bool { return c.fast }

// Valid reports whether args is proven valid: a single JSON value,
// optionally surrounded by whitespace, that the schema accepts. false means
// "not proven": args may be malformed, invalid, or beyond what the checker
// can decide exactly, and the caller must run the full validator.
func (c *Checker) Valid(args []byte) bool {
	if !c.fast {
		return false
	}
	i := skipSpace(args, 0)
	if i == len(args) {
		return false
	}
	end, ok := check(c.root, args, i, 0)
	return ok && skipSpace(args, end) == len(args)
}

// typeSet is a set of JSON Schema types.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBoolean
	tInteger
	tNumber
	tString
	tArray
	tObject

	tAll = tNull | tBoolean | tInteger | tNumber | tString | tArray | tObject
)

// node is one compiled schema. A nil *node accepts every value.
type node struct {
	never bool // the false schema: nothing is valid
	types typeSet

	// Every set in enums must contain the value (enum and const).
	enums []enumSet

	// Numbers.
	bounds []bound

	// Strings; maxLen < 0 means no upper bound.
	minLen, maxLen int
	pattern        *pattern

	// Objects; maxProps < 0 means no upper bound.
	fields       []field
	index        map[string]int // into fields, when there are many
	reqMask      uint64         // bits of the required fields
	addl         *node          // additionalProperties
	minProps     int
	maxProps     int
	keySensitive bool // a key whose decoded form is unknown cannot be proven

	// Arrays; maxItems < 0 means no upper bound.
	items              *node
	minItems, maxItems int
	unique             bool

	// Each group (anyOf, or oneOf with disjoint branches) needs one
	// matching branch.
	groups [][]*node

	strCheck bool // the decoded string content matters
	numCheck bool // the numeric value matters
}

// field is a property name the object schema knows: from properties,
// from required, or both.
type field struct {
	name    string
	node    *node  // the property's schema when inProps
	inProps bool   // listed in properties
	bit     uint64 // the field's bit in reqMask, or 0
}

// lookup returns the field named key, or nil.
func (n *node) lookup(key []byte) *field {
	if n.index != nil {
		if j, ok := n.index[string(key)]; ok {
			return &n.fields[j]
		}
		return nil
	}
	for j := range n.fields {
		f := &n.fields[j]
		if len(f.name) == len(key) && f.name == string(key) {
			return f
		}
	}
	return nil
}

// check validates the value starting at d[i] (not whitespace) against n
// and returns the offset just past it.
func check(n *node, d []byte, i, depth int) (int, bool) {
	if n == nil {
		return skipValue(d, i, depth)
	}
	if n.never || i >= len(d) {
		return 0, false
	}
	var (
		end int
		ok  bool
	)
	switch d[i] {
	case '{':
		if n.types&tObject == 0 || len(n.enums) > 0 {
			return 0, false
		}
		end, ok = checkObject(n, d, i, depth)
	case '[':
		if n.types&tArray == 0 || len(n.enums) > 0 {
			return 0, false
		}
		end, ok = checkArray(n, d, i, depth)
	case '"':
		end, ok = checkString(n, d, i)
	case 't':
		end, ok = checkLiteral(n, d, i, "true", tBoolean, litTrue)
	case 'f':
		end, ok = checkLiteral(n, d, i, "false", tBoolean, litFalse)
	case 'n':
		end, ok = checkLiteral(n, d, i, "null", tNull, litNull)
	default:
		end, ok = checkNumber(n, d, i)
	}
	if !ok {
		return 0, false
	}
	for _, g := range n.groups {
		if !anyBranch(g, d, i, depth) {
			return 0, false
		}
	}
	return end, true
}

// anyBranch reports whether one of branches accepts the value at d[i].
func anyBranch(branches []*node, d []byte, i, depth int) bool {
	for _, b := range branches {
		if _, ok := check(b, d, i, depth); ok {
			return true
		}
	}
	return false
}

func checkObject(n *node, d []byte, i, depth int) (int, bool) {
	if depth >= maxDepth {
		return 0, false
	}
	depth++
	start := i
	i = skipSpace(d, i+1)
	if i >= len(d) {
		return 0, false
	}
	var seen uint64
	count := 0
	if d[i] == '}' {
		i++
	} else {
		for {
			if i >= len(d) || d[i] != '"' {
				return 0, false
			}
			end, flags, ok := scanString(d, i)
			if !ok {
				return 0, false
			}
			key := d[i+1 : end-1]
			i = skipSpace(d, end)
			if i >= len(d) || d[i] != ':' {
				return 0, false
			}
			i = skipSpace(d, i+1)
			vn := n.addl
			if !plainText(key, flags) {
				if n.keySensitive {
					return 0, false
				}
			} else if f := n.lookup(key); f != nil {
				seen |= f.bit
				if f.inProps {
					vn = f.node
				}
			}
			if i, ok = check(vn, d, i, depth); !ok {
				return 0, false
			}
			count++
			i = skipSpace(d, i)
			if i >= len(d) {
				return 0, false
			}
			if d[i] == ',' {
				i = skipSpace(d, i+1)
				continue
			}
			if d[i] != '}' {
				return 0, false
			}
			i++
			break
		}
	}
	if seen&n.reqMask != n.reqMask {
		return 0, false
	}
	// Duplicate keys collapse when decoded, so count only bounds the
	// number of properties from above.
	if n.maxProps >= 0 && count > n.maxProps {
		return 0, false
	}
	if n.minProps > 0 && (count < n.minProps || distinctKeys(d, start) < n.minProps) {
		return 0, false
	}
	return i, true
}

func checkArray(n *node, d []byte, i, depth int) (int, bool) {
	if depth >= maxDepth {
		return 0, false
	}
	depth++
	start := i
	i = skipSpace(d, i+1)
	if i >= len(d) {
		return 0, false
	}
	count := 0
	if d[i] == ']' {
		i++
	} else {
		for {
			var ok bool
			if i, ok = check(n.items, d, i, depth); !ok {
				return 0, false
			}
			count++
			i = skipSpace(d, i)
			if i >= len(d) {
				return 0, false
			}
			if d[i] == ',' {
				i = skipSpace(d, i+1)
				continue
			}
			if d[i] != ']' {
				return 0, false
			}
			i++
			break
		}
	}
	if count < n.minItems || (n.maxItems >= 0 && count > n.maxItems) {
		return 0, false
	}
	if n.unique && count > 1 && !uniqueScalars(d, start) {
		return 0, false
	}
	return i, true
}

func checkString(n *node, d []byte, i int) (int, bool) {
	if n.types&tString == 0 {
		return 0, false
	}
	end, flags, ok := scanString(d, i)
	if !ok {
		return 0, false
	}
	if !n.strCheck {
		return end, true
	}
	s := d[i+1 : end-1]
	if !plainText(s, flags) {
		return 0, false
	}
	if n.minLen > 0 || n.maxLen >= 0 {
		length := len(s)
		if flags&strHigh != 0 {
			length = utf8.RuneCount(s)
		}
		if length < n.minLen || (n.maxLen >= 0 && length > n.maxLen) {
			return 0, false
		}
	}
	if n.pattern != nil && (!MatchAffordable(n.pattern.size, len(s)) || !n.pattern.re.Match(s)) {
		return 0, false
	}
	for _, set := range n.enums {
		if !set.hasString(s) {
			return 0, false
		}
	}
	return end, true
}

func checkLiteral(n *node, d []byte, i int, lit string, t typeSet, k litKind) (int, bool) {
	end := i + len(lit)
	if end > len(d) || string(d[i:end]) != lit || n.types&t == 0 {
		return 0, false
	}
	for _, set := range n.enums {
		if !set.hasKind(k) {
			return 0, false
		}
	}
	return end, true
}

func checkNumber(n *node, d []byte, i int) (int, bool) {
	end, plain, ok := scanNumber(d, i)
	if !ok {
		return 0, false
	}
	if n.types&tNumber == 0 && (n.types&tInteger == 0 || !plain) {
		return 0, false
	}
	if !n.numCheck {
		return end, true
	}
	var x decimal
	if !x.parse(d[i:end]) {
		return 0, false
	}
	for k := range n.bounds {
		if !n.bounds[k].holds(&x) {
			return 0, false
		}
	}
	for _, set := range n.enums {
		if !set.hasNumber(&x) {
			return 0, false
		}
	}
	return end, true
}

// plainText reports whether the raw content of a JSON string (flags as
// from scanString) is exactly its decoded form: no escapes and valid UTF-8.
func plainText(s []byte, flags uint8) bool {
	return flags&strEscape == 0 && (flags&strHigh == 0 || utf8.Valid(s))
}

// distinctKeys returns the number of distinct keys of the object starting
// at d[start], which has been checked and whose keys are plain text, or -1
// if it has too many members to tell.
func distinctKeys(d []byte, start int) int {
	var keys [64][]byte
	n := 0
	i := skipSpace(d, start+1)
	for d[i] != '}' {
		end, _, _ := scanString(d, i)
		if n == len(keys) {
			return -1
		}
		keys[n] = d[i+1 : end-1]
		n++
		i = skipSpace(d, end)     // ':'
		i = skipSpace(d, i+1)     // the value
		i, _ = skipValue(d, i, 0) // already checked
		i = skipSpace(d, i)       // ',' or '}'
		if d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	distinct := 0
outer:
	for j := range n {
		for k := range j {
			if string(keys[j]) == string(keys[k]) {
				continue outer
			}
		}
		distinct++
	}
	return distinct
}

// uniqueScalars reports whether the elements of the array starting at
// d[start], which has been checked, are proven pairwise unequal. Only
// scalars whose decoded form is known exactly are compared.
func uniqueScalars(d []byte, start int) bool {
	var items [64][]byte
	var plain [64]bool // numbers: no fraction or exponent
	n := 0
	i := skipSpace(d, start+1)
	for d[i] != ']' {
		if n == len(items) {
			return false
		}
		var end int
		switch d[i] {
		case '{', '[':
			return false
		case '"':
			e, flags, _ := scanString(d, i)
			if !plainText(d[i+1:e-1], flags) {
				return false
			}
			end = e
		case 't', 'f', 'n':
			end, _ = skipValue(d, i, 0)
		default:
			end, plain[n], _ = scanNumber(d, i)
		}
		items[n] = d[i:end]
		n++
		i = skipSpace(d, end)
		if d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	for j := 1; j < n; j++ {
		for k := range j {
			eq, ok := sameScalar(items[j], items[k], plain[j] && plain[k])
			if eq || !ok {
				return false
			}
		}
	}
	return true
}

// sameScalar reports whether two scalar tokens decode to equal values;
// ok is false when that cannot be decided exactly.
func sameScalar(a, b []byte, plainInts bool) (eq, ok bool) {
	if isNumberStart(a[0]) != isNumberStart(b[0]) {
		return false, true
	}
	if !isNumberStart(a[0]) {
		return string(a) == string(b), true
	}
	if plainInts {
		return string(trimNegZero(a)) == string(trimNegZero(b)), true
	}
	var x, y decimal
	if !x.parse(a) || !y.parse(b) {
		return false, false
	}
	return x.cmp(&y) == 0, true
}

func isNumberStart(c byte) bool { return c == '-' || ('0' <= c && c <= '9') }

// trimNegZero maps the integer token -0 to 0.
func trimNegZero(tok []byte) []byte {
	if string(tok) == "-0" {
		return tok[1:]
	}
	return tok
}
