// The fast check proves tool-call arguments valid against a JSON Schema
// without decoding them.
//
// The authority on validity is github.com/santhosh-tekuri/jsonschema/v6
// with its default settings (draft 2020-12, formats not asserted, Go regexp
// syntax). That validator needs the arguments decoded into Go values first,
// which costs more than the rest of a tool call. A [fastChecker] instead walks
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

package schema

import (
	"unicode/utf8"

	"github.com/gotoolset/toolset/internal/jsontext"
)

// maxDepth bounds the nesting of arrays and objects the checker follows;
// deeper arguments are not proven.
const maxDepth = 1000

var lexLimits = jsontext.Limits{MaxDepth: maxDepth}

// fastChecker proves JSON arguments valid against one schema. A fastChecker is
// immutable after [Compile] and safe for concurrent use.
type fastChecker struct {
	root *node // nil accepts every JSON value
	fast bool
}

// Fast reports whether the schema is within the supported subset. If it
// is not, Valid always returns false.
func (c *fastChecker) Fast() bool { return c.fast }

// Valid reports whether args is proven valid: a single JSON value,
// optionally surrounded by whitespace, that the schema accepts. false means
// "not proven": args may be malformed, invalid, or beyond what the checker
// can decide exactly, and the caller must run the full validator.
func (c *fastChecker) Valid(args []byte) bool {
	if !c.fast {
		return false
	}
	l := jsontext.NewLexer(args, lexLimits)
	t, err := l.Next()
	if err != nil || !check(c.root, &l, args, t) {
		return false
	}
	_, err = l.Next() // End, or data after the value
	return err == nil
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

	// matchSize is the pattern work per byte of a string checked against
	// n and its groups (see matchSizeOf).
	matchSize int

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
	once    uint64 // the field's own bit, to see it twice; 0 past 64 fields
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

// check validates the value whose first token, t, the lexer has just
// read against n, reading the rest of the value.
func check(n *node, l *jsontext.Lexer, d []byte, t jsontext.Token) bool {
	return checkNode(n, l, d, t, true)
}

// checkGroups validates the value against n and against one branch of
// each of its groups.
func checkGroups(n *node, l *jsontext.Lexer, d []byte, t jsontext.Token) bool {
	if n.matchSize > 0 && t.Kind == jsontext.String && !matchAffordable(n.matchSize, t.End-t.Start) {
		return false // matching it against every branch costs too much: not proven
	}
	start := *l
	if !checkNode(n, l, d, t, false) {
		return false
	}
	for _, g := range n.groups {
		if !anyBranch(g, &start, d, t) {
			return false
		}
	}
	return true
}

// anyBranch reports whether one of branches accepts the value whose first
// token is t, read from a copy of start.
func anyBranch(branches []*node, start *jsontext.Lexer, d []byte, t jsontext.Token) bool {
	for _, b := range branches {
		l := *start
		if check(b, &l, d, t) {
			return true
		}
	}
	return false
}

// checkNode is check, with or without n's groups.
func checkNode(n *node, l *jsontext.Lexer, d []byte, t jsontext.Token, groups bool) bool {
	if n == nil {
		return skip(l, d, t)
	}
	if groups && len(n.groups) > 0 {
		return checkGroups(n, l, d, t)
	}
	if n.never {
		return false
	}
	switch t.Kind {
	case jsontext.ObjectStart:
		return n.types&tObject != 0 && len(n.enums) == 0 && checkObject(n, l, d, t)
	case jsontext.ArrayStart:
		return n.types&tArray != 0 && len(n.enums) == 0 && checkArray(n, l, d, t)
	case jsontext.String:
		return checkString(n, d, t)
	case jsontext.True:
		return checkLiteral(n, tBoolean, litTrue)
	case jsontext.False:
		return checkLiteral(n, tBoolean, litFalse)
	case jsontext.Null:
		return checkLiteral(n, tNull, litNull)
	}
	return checkNumber(n, d, t)
}

// skip reads the rest of the value whose first token is t, which any
// schema accepts, and reports whether its numbers are all provable and
// the keys of each of its objects plain and distinct.
func skip(l *jsontext.Lexer, d []byte, t jsontext.Token) bool {
	switch t.Kind {
	case jsontext.Number:
		return provable(d[t.Start:t.End], t.Flags)
	case jsontext.ArrayStart:
		for {
			t, err := l.Next()
			if err != nil {
				return false
			}
			if t.Kind == jsontext.ArrayEnd {
				return true
			}
			if !skip(l, d, t) {
				return false
			}
		}
	case jsontext.ObjectStart:
		// The caller refuses a key given twice anywhere, so an object is
		// proven only when its keys are plain and distinct: a few are
		// compared here, more are left to the caller.
		var keys [maxSkippedKeys][]byte
		n := 0
		for {
			t, err := l.Next()
			if err != nil {
				return false
			}
			if t.Kind == jsontext.ObjectEnd {
				return true
			}
			key := d[t.Start+1 : t.End-1]
			if n == len(keys) || !jsontext.Plain(key, t.Flags) {
				return false
			}
			for _, k := range keys[:n] {
				if string(k) == string(key) {
					return false
				}
			}
			keys[n] = key
			n++
			if t, err = l.Next(); err != nil || !skip(l, d, t) {
				return false
			}
		}
	}
	return true
}

// maxSkippedKeys bounds the keys of an object that skip compares.
const maxSkippedKeys = 16

// The caller refuses numbers of magnitude beyond 1e400 (or nonzero below
// 1e-400) before its validator sees them, so no number of such magnitude
// may be proven valid. A token of at most maxProvenNumLen bytes with an
// exponent of at most maxProvenExponent lies well inside; longer tokens
// and larger exponents are left to the caller.
const (
	maxProvenNumLen   = 200
	maxProvenExponent = 199
)

// provable reports whether the number token tok lies well inside the
// magnitudes the caller accepts.
func provable(tok []byte, flags jsontext.Flags) bool {
	if len(tok) > maxProvenNumLen {
		return false
	}
	if flags&jsontext.Exponent == 0 {
		return true
	}
	j := len(tok)
	for '0' <= tok[j-1] && tok[j-1] <= '9' {
		j--
	}
	exp := 0
	for _, c := range tok[j:] {
		exp = min(exp*10+int(c-'0'), maxProvenExponent+1)
	}
	return exp <= maxProvenExponent
}

func checkObject(n *node, l *jsontext.Lexer, d []byte, start jsontext.Token) bool {
	var seen, met uint64
	count := 0
	// unsure counts keys whose repetition the field bits cannot see:
	// keys of no field (or past the 64th) and keys with escapes.
	unsure := 0
	for {
		t, err := l.Next()
		if err != nil {
			return false
		}
		if t.Kind == jsontext.ObjectEnd {
			break
		}
		key := d[t.Start+1 : t.End-1]
		vn := n.addl
		if !jsontext.Plain(key, t.Flags) {
			if n.keySensitive {
				return false
			}
			unsure++
		} else if f := n.lookup(key); f != nil {
			seen |= f.bit
			if f.once == 0 {
				unsure++
			} else if met&f.once != 0 {
				return false // a key given twice: never proven valid
			}
			met |= f.once
			if f.inProps {
				vn = f.node
			}
		} else {
			unsure++
		}
		if t, err = l.Next(); err != nil || !check(vn, l, d, t) {
			return false
		}
		count++
	}
	if seen&n.reqMask != n.reqMask {
		return false
	}
	distinct := -2 // not counted yet
	if unsure > 0 && count > 1 {
		// A key given twice is refused by the caller, which decodes
		// what it hands on: prove that no key repeats.
		if distinct = distinctKeys(d[start.Start:]); distinct != count {
			return false
		}
	}
	if n.maxProps >= 0 && count > n.maxProps {
		return false
	}
	if n.minProps <= 0 {
		return true
	}
	if distinct == -2 {
		distinct = count // every key was seen once by its field bit
	}
	return count >= n.minProps && distinct >= n.minProps
}

func checkArray(n *node, l *jsontext.Lexer, d []byte, start jsontext.Token) bool {
	count := 0
	for {
		t, err := l.Next()
		if err != nil {
			return false
		}
		if t.Kind == jsontext.ArrayEnd {
			break
		}
		if !check(n.items, l, d, t) {
			return false
		}
		count++
	}
	if count < n.minItems || (n.maxItems >= 0 && count > n.maxItems) {
		return false
	}
	return !n.unique || count <= 1 || uniqueScalars(d[start.Start:])
}

func checkString(n *node, d []byte, t jsontext.Token) bool {
	if n.types&tString == 0 {
		return false
	}
	if !n.strCheck {
		return true
	}
	s := d[t.Start+1 : t.End-1]
	if !jsontext.Plain(s, t.Flags) {
		return false
	}
	if n.minLen > 0 || n.maxLen >= 0 {
		length := len(s)
		if t.Flags&jsontext.NonASCII != 0 {
			length = utf8.RuneCount(s)
		}
		if length < n.minLen || (n.maxLen >= 0 && length > n.maxLen) {
			return false
		}
	}
	if n.pattern != nil && (!matchAffordable(n.pattern.size, len(s)) || !n.pattern.re.Match(s)) {
		return false
	}
	for _, set := range n.enums {
		if !set.hasString(s) {
			return false
		}
	}
	return true
}

func checkLiteral(n *node, t typeSet, k litKind) bool {
	if n.types&t == 0 {
		return false
	}
	for _, set := range n.enums {
		if !set.hasKind(k) {
			return false
		}
	}
	return true
}

func checkNumber(n *node, d []byte, t jsontext.Token) bool {
	tok := d[t.Start:t.End]
	if !provable(tok, t.Flags) {
		return false
	}
	if n.types&tNumber == 0 && (n.types&tInteger == 0 || t.Flags&(jsontext.Fraction|jsontext.Exponent) != 0) {
		return false
	}
	if !n.numCheck {
		return true
	}
	var x decimal
	if !x.parse(tok) {
		return false
	}
	for k := range n.bounds {
		if !n.bounds[k].holds(&x) {
			return false
		}
	}
	for _, set := range n.enums {
		if !set.hasNumber(&x) {
			return false
		}
	}
	return true
}

// distinctKeys returns the number of distinct keys of the object at the
// start of d, which has been checked and whose keys are plain text, or -1
// if it has too many members to tell.
func distinctKeys(d []byte) int {
	var keys [64][]byte
	n := 0
	l := jsontext.NewLexer(d, lexLimits)
	l.Next() // '{'
	for {
		t, err := l.Next()
		if err == nil && t.Kind == jsontext.ObjectEnd {
			break
		}
		if err != nil || n == len(keys) || t.Kind != jsontext.String {
			return -1
		}
		keys[n] = d[t.Start+1 : t.End-1]
		if !jsontext.Plain(keys[n], t.Flags) {
			keys[n] = []byte(jsontext.Unquote(keys[n], t.Flags))
		}
		n++
		v, err := l.Next()
		if err != nil || !skipWhole(&l, v) {
			return -1
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

// skipWhole reads past the value that starts with t, whatever it holds
// (skip stops at the first thing it cannot prove, mid-value), and reports
// whether it got to its end.
func skipWhole(l *jsontext.Lexer, t jsontext.Token) bool {
	depth := 0
	for {
		switch t.Kind {
		case jsontext.ArrayStart, jsontext.ObjectStart:
			depth++
		case jsontext.ArrayEnd, jsontext.ObjectEnd:
			depth--
		case jsontext.End:
			return false
		}
		if depth <= 0 {
			return true
		}
		var err error
		if t, err = l.Next(); err != nil {
			return false
		}
	}
}

// uniqueScalars reports whether the elements of the array at the start of
// d, which has been checked, are proven pairwise unequal. Only scalars
// whose decoded form is known exactly are compared.
func uniqueScalars(d []byte) bool {
	var items [64][]byte
	var plain [64]bool // numbers: no fraction or exponent
	n := 0
	l := jsontext.NewLexer(d, lexLimits)
	l.Next() // '['
	for {
		t, _ := l.Next()
		switch t.Kind {
		case jsontext.ArrayEnd:
			for j := 1; j < n; j++ {
				for k := range j {
					eq, ok := sameScalar(items[j], items[k], plain[j] && plain[k])
					if eq || !ok {
						return false
					}
				}
			}
			return true
		case jsontext.ObjectStart, jsontext.ArrayStart:
			return false
		}
		if n == len(items) {
			return false
		}
		switch t.Kind {
		case jsontext.String:
			if !jsontext.Plain(d[t.Start+1:t.End-1], t.Flags) {
				return false
			}
		case jsontext.Number:
			plain[n] = t.Flags&(jsontext.Fraction|jsontext.Exponent) == 0
		}
		items[n] = d[t.Start:t.End]
		n++
	}
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
