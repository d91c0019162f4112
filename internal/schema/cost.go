package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// The full validator evaluates a subschema every time a keyword applies it,
// and remembers nothing: a schema whose parts are shared through "$ref"
// can apply the same part to the same value exponentially many times.
// Twenty levels of {"allOf": [{"$ref": next}, {"$ref": next}]} cost a
// million evaluations for the arguments {}, and a recursive schema that
// reaches itself twice per level costs 2^depth for arguments nested depth
// deep. The validator cannot be stopped once it runs, so the cost is
// counted first:
//
//   - when the schema is compiled, the number of evaluations one value can
//     need (through allOf, anyOf, oneOf, not, if/then/else, dependent
//     schemas and references, which all apply to the value itself) is
//     bounded by maxSameEvals, or the schema is refused;
//   - when the schema shares parts, every call counts the evaluations its
//     arguments need, exactly as the validator would make them (but with
//     each part applied to each value counted once), and arguments that
//     need more than evalBudget are refused before the validator runs.
//
// A schema without shared parts (every reflected schema, most written ones)
// applies each part at most once to each value, so it needs no count.

// maxSameEvals bounds the subschemas applied to one value.
const maxSameEvals = 10000

// evalBudget is the number of evaluations arguments of the given number of
// values may need.
func evalBudget(values int) int { return 20000 + 50*values }

// costGraph is what the cost count needs to know of a compiled schema.
type costGraph struct {
	root       *sjs.Schema
	shared     bool                     // some part is reached twice, or a dynamic reference
	dynamic    map[string][]*sjs.Schema // schemas with each $dynamicAnchor
	recursive  []*sjs.Schema            // schemas with "$recursiveAnchor": true
	keyPattern int                      // pattern work per byte of a member name (see matchSizes)
	strPattern int                      // pattern work per byte of a string (see matchSizes)
}

// newCostGraph walks the compiled schema and checks the evaluations one
// value can need.
func newCostGraph(root *sjs.Schema) (*costGraph, error) {
	g := &costGraph{root: root, dynamic: map[string][]*sjs.Schema{}}
	seen := map[*sjs.Schema]bool{root: true}
	stack := []*sjs.Schema{root}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s.DynamicAnchor != "" {
			g.dynamic[s.DynamicAnchor] = append(g.dynamic[s.DynamicAnchor], s)
		}
		if s.RecursiveAnchor {
			g.recursive = append(g.recursive, s)
		}
		if s.DynamicRef != nil || s.RecursiveRef != nil {
			g.shared = true
		}
		allEdges(s, func(t *sjs.Schema) {
			if seen[t] {
				g.shared = true
				return
			}
			seen[t] = true
			stack = append(stack, t)
		})
	}
	g.strPattern, g.keyPattern = g.matchSizes(seen)
	if !g.shared {
		return g, nil
	}
	memo := map[*sjs.Schema]int{}
	var same func(s *sjs.Schema) int
	same = func(s *sjs.Schema) int {
		if c, ok := memo[s]; ok {
			return max(c, 1) // in progress: a reference cycle, which the validator stops
		}
		memo[s] = 0
		total := 1
		g.sameEdges(s, func(t *sjs.Schema) { total = min(total+same(t), maxSameEvals+1) })
		memo[s] = total
		return total
	}
	for s := range seen {
		if n := same(s); n > maxSameEvals {
			return nil, fmt.Errorf("the subschema at %q applies more than %d subschemas to one value (through shared references); simplify the schema",
				CutText(s.Location, MaxQuoted), maxSameEvals)
		}
	}
	return g, nil
}

// matchSizes returns the pattern work one string, and one member name, can
// cost per byte: the sizes of all the patterns matched against one value,
// through every subschema applied to that value (an anyOf of a hundred
// patterns matches each string against all hundred), the largest over the
// schema. A name is matched against every pattern property of its object
// and the patterns of its propertyNames. The sums saturate past
// maxMatchCost, when no string is affordable.
func (g *costGraph) matchSizes(nodes map[*sjs.Schema]bool) (str, key int) {
	const limit = maxMatchCost + 1
	own := func(s *sjs.Schema) int {
		if l, ok := s.Pattern.(*lazyRegexp); ok {
			return l.size
		}
		return 0
	}
	ownKeys := func(s *sjs.Schema) int {
		n := 0
		for re := range s.PatternProperties {
			if l, ok := re.(*lazyRegexp); ok {
				n = min(n+l.size, limit)
			}
		}
		return n
	}
	closure := func(size func(*sjs.Schema) int) func(*sjs.Schema) int {
		memo := map[*sjs.Schema]int{}
		var sum func(s *sjs.Schema) int
		sum = func(s *sjs.Schema) int {
			if c, ok := memo[s]; ok {
				return c // done, or in progress: a cycle the validator stops
			}
			memo[s] = 0
			total := size(s)
			g.sameEdges(s, func(t *sjs.Schema) { total = min(total+sum(t), limit) })
			memo[s] = total
			return total
		}
		return sum
	}
	strs, keys := closure(own), closure(ownKeys)
	for s := range nodes {
		str = max(str, strs(s))
		k := keys(s)
		if s.PropertyNames != nil {
			k = min(k+strs(s.PropertyNames), limit)
		}
		key = max(key, k)
	}
	return str, key
}

// sameEdges calls f for each subschema s applies to the value s is applied
// to, dynamic references to every schema they might reach.
func (g *costGraph) sameEdges(s *sjs.Schema, f func(*sjs.Schema)) {
	if s.Ref != nil {
		f(s.Ref)
	}
	if s.RecursiveRef != nil {
		f(s.RecursiveRef)
		for _, t := range g.recursive {
			f(t)
		}
	}
	if s.DynamicRef != nil {
		if s.DynamicRef.Ref != nil {
			f(s.DynamicRef.Ref)
		}
		if s.DynamicRef.Anchor != "" {
			for _, t := range g.dynamic[s.DynamicRef.Anchor] {
				f(t)
			}
		}
	}
	for _, t := range []*sjs.Schema{s.Not, s.If, s.Then, s.Else} {
		if t != nil {
			f(t)
		}
	}
	for _, list := range [][]*sjs.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, t := range list {
			f(t)
		}
	}
	for _, t := range s.DependentSchemas {
		f(t)
	}
	for _, d := range s.Dependencies {
		if t, ok := d.(*sjs.Schema); ok {
			f(t)
		}
	}
}

// allEdges calls f for every subschema of s, static references included.
func allEdges(s *sjs.Schema, f func(*sjs.Schema)) {
	(&costGraph{}).sameEdges(s, f)
	for _, t := range []*sjs.Schema{s.PropertyNames, s.UnevaluatedProperties, s.Contains,
		s.Items2020, s.UnevaluatedItems, s.ContentSchema, asSchema(s.AdditionalProperties), asSchema(s.AdditionalItems)} {
		if t != nil {
			f(t)
		}
	}
	for _, t := range s.Properties {
		f(t)
	}
	for _, t := range s.PatternProperties {
		f(t)
	}
	for _, t := range s.PrefixItems {
		f(t)
	}
	switch items := s.Items.(type) {
	case *sjs.Schema:
		f(items)
	case []*sjs.Schema:
		for _, t := range items {
			f(t)
		}
	}
}

func asSchema(v any) *sjs.Schema {
	s, _ := v.(*sjs.Schema)
	return s
}

// inode is a value of the arguments, for the count.
type inode struct {
	keys []string // of an object
	kids []*inode // members or elements
	obj  bool
}

// instanceTree returns the tree of doc and its number of values.
func instanceTree(doc any) (*inode, int) {
	count := 0
	var build func(v any) *inode
	build = func(v any) *inode {
		count++
		n := &inode{}
		switch v := v.(type) {
		case map[string]any:
			n.obj = true
			for k, e := range v {
				n.keys = append(n.keys, k)
				n.kids = append(n.kids, build(e))
			}
		case []any:
			for _, e := range v {
				n.kids = append(n.kids, build(e))
			}
		}
		return n
	}
	return build(doc), count
}

type costKey struct {
	s *sjs.Schema
	n *inode
}

// withinBudget reports whether validating doc against the graph's schema
// needs at most evalBudget evaluations. It does at most about that much
// work itself.
func (g *costGraph) withinBudget(doc any) bool {
	if !g.shared {
		return true
	}
	tree, values := instanceTree(doc)
	budget := evalBudget(values)
	leaf := &inode{}
	memo := map[costKey]int{}
	pairs := 0
	var cost func(s *sjs.Schema, n *inode) int
	cost = func(s *sjs.Schema, n *inode) int {
		k := costKey{s, n}
		if c, ok := memo[k]; ok {
			return max(c, 1)
		}
		if pairs++; pairs > budget {
			return budget + 1
		}
		memo[k] = 0
		total := 1
		add := func(c int) { total = min(total+c, budget+1) }
		g.sameEdges(s, func(t *sjs.Schema) { add(cost(t, n)) })
		if s.ContentSchema != nil {
			add(cost(s.ContentSchema, leaf))
		}
		if s.PropertyNames != nil && len(n.keys) > 0 {
			add(min(len(n.keys)*cost(s.PropertyNames, leaf), budget+1))
		}
		for j, kid := range n.kids {
			if total > budget {
				break
			}
			var each []*sjs.Schema
			if n.obj {
				if t := s.Properties[n.keys[j]]; t != nil {
					each = append(each, t)
				}
				for _, t := range s.PatternProperties {
					each = append(each, t)
				}
				each = append(each, asSchema(s.AdditionalProperties), s.UnevaluatedProperties)
			} else {
				if j < len(s.PrefixItems) {
					each = append(each, s.PrefixItems[j])
				} else {
					each = append(each, s.Items2020)
				}
				switch items := s.Items.(type) {
				case *sjs.Schema:
					each = append(each, items)
				case []*sjs.Schema:
					if j < len(items) {
						each = append(each, items[j])
					} else {
						each = append(each, asSchema(s.AdditionalItems))
					}
				}
				each = append(each, s.Contains, s.UnevaluatedItems)
			}
			for _, t := range each {
				if t != nil {
					add(cost(t, kid))
				}
			}
		}
		memo[k] = total
		return total
	}
	return cost(g.root, tree) <= budget
}

// tooCostlyProblem is the problem reported for arguments whose validation
// would cost too much.
func tooCostlyProblem(values int) Problem {
	return Problem{Message: "these arguments would take too long to validate against the tool's schema, which applies its parts to the same values over and over (more than " +
		strconv.Itoa(evalBudget(values)) + " evaluations); send fewer or less deeply nested values"}
}

// longStrings returns a problem for each string and member name of doc
// too long to match against the schema's largest pattern (or pattern
// property, for names). Such a string is refused before the validator
// runs: taking it as not matching would be wrong under "not", "if" or
// "patternProperties".
func (g *costGraph) longStrings(doc any) []Problem {
	keySize := max(g.keyPattern, g.strPattern) // propertyNames may match names against a pattern
	if keySize == 0 {
		return nil
	}
	var out []Problem
	tooLong := func(field *FieldPath, what string, n, size int) {
		out = append(out, Problem{Field: field.String(), Message: fmt.Sprintf(
			"%s of %d bytes is too long for this tool's schema to check against its patterns; send at most %d bytes", what, n, maxMatchCost/size)})
	}
	walkDoc(doc, func(field *FieldPath, v any) {
		if s, ok := v.(string); ok && g.strPattern > 0 && !matchAffordable(g.strPattern, len(s)) {
			tooLong(field, "string", len(s), g.strPattern)
		}
	}, func(field *FieldPath, k string) {
		if !matchAffordable(keySize, len(k)) {
			tooLong(field, "field name", len(k), keySize)
		}
	})
	slices.SortFunc(out, func(a, b Problem) int { return strings.Compare(a.Field, b.Field) })
	return out
}
