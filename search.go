package toolset

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"unicode"
)

// WithDeferred defers the tool: the model does not see it until a tool
// search ([NewToolSearch]) in the same run finds it. Large catalogues of
// rarely used tools stay out of the prompt this way.
func WithDeferred() ToolOption {
	return func(t *Tool) { t.core.deferred = true }
}

// SearchOption configures a tool search; see [NewToolSearch].
type SearchOption func(*searchConfig)

type searchConfig struct {
	name, description string
	topK              int
}

// WithSearchName names the search tool; the default is "tool_search".
func WithSearchName(name string) SearchOption { return func(c *searchConfig) { c.name = name } }

// WithSearchDescription sets the search tool's description.
func WithSearchDescription(d string) SearchOption {
	return func(c *searchConfig) { c.description = d }
}

// WithSearchTopK sets how many tools a search returns when the model does
// not say; the default is 5.
func WithSearchTopK(k int) SearchOption { return func(c *searchConfig) { c.topK = clampTopK(k) } }

// ToolSearchArgs are the arguments of the tool search.
type ToolSearchArgs struct {
	// Query is the words the tools are ranked against; an empty query
	// matches nothing. A query over 1024 bytes is refused, as an error the
	// model sees, and only its first 32 words are ranked against.
	Query string `json:"query" jsonschema:"Words describing the capability you need"`
	// TopK is how many tools to return, clamped to 1..50; zero means the
	// search's default.
	TopK int `json:"top_k,omitempty" jsonschema:"How many tools to return, from 1 to 50 (default 5)"`
}

// ToolSearchResult is what the tool search returns to the model.
type ToolSearchResult struct {
	// Tools are the matches, best first.
	Tools []FoundTool `json:"tools"`
	// Note tells the model when the found tools can be called.
	Note string `json:"note"`
}

// FoundTool is one tool a search found.
type FoundTool struct {
	// Name is the name the model calls the tool by.
	Name string `json:"name"`
	// Description is the tool's description.
	Description string `json:"description"`
}

// NewToolSearch returns a standalone tool that searches the deferred tools
// of the given toolset (see [WithDeferred]) and reveals the matches to the
// run that searched: from the next turn, BuildTools shows them and they may
// be called. Matches are ranked with BM25 over the words of each tool's
// name and description, name words weighing more; an empty query matches
// nothing. The model may ask for 1 to 50 results (top_k, clamped).
//
// The query is the model's, so the work it causes is bounded: a query
// over 1024 bytes is refused before it is read, with an error the model
// sees (a [MessageError]), and only its first 32 words count, the rest
// ignored; a search's cost is then at most 32 lookups per deferred tool.
//
// Reveals are kept in the run ([RunContext]) until it ends, so runs never
// see each other's; a search without a run fails. The search index of a toolset's tool
// list is built once and shared by every copy of the search tool.
func NewToolSearch(deferred Toolset, opts ...SearchOption) Tool {
	cfg := searchConfig{
		name:        "tool_search",
		description: "Search for more tools by what they do. Tools you find become available from your next step.",
		topK:        5,
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	state := &searchState{}
	t := NewTool(cfg.name, cfg.description, func(ctx context.Context, in ToolSearchArgs) (ToolSearchResult, error) {
		return state.search(ctx, deferred, in, cfg.topK)
	})
	if deferred == nil {
		t.core.err = errors.New("nil Toolset to search")
	}
	t.core.search = state
	return t
}

func clampTopK(k int) int { return min(max(k, 1), 50) }

// Bounds on a model's query: the bytes a search reads, and the words of
// it that are ranked against.
const (
	maxQueryBytes = 1024
	maxQueryTerms = 32
)

// searchState is the state of a tool search: its index of each tool list it
// has seen, memoised per snapshot.
type searchState struct {
	memo memoSlots[searchIndex]
}

func (s *searchState) search(ctx context.Context, deferred Toolset, in ToolSearchArgs, defaultTopK int) (ToolSearchResult, error) {
	rc := runOf(ctx)
	if rc.state() == nil {
		return ToolSearchResult{}, errors.New("tool search needs a run (toolset.NewRun) to remember what it reveals")
	}
	if len(in.Query) > maxQueryBytes {
		return ToolSearchResult{}, ModelErrorf("the query is %d bytes long, and a search reads at most %d: describe the capability you need in a few words", len(in.Query), maxQueryBytes)
	}
	v, err := materialize(ctx, deferred, nil)
	if err != nil {
		return ToolSearchResult{}, err
	}
	topK := defaultTopK
	if in.TopK != 0 {
		topK = clampTopK(in.TopK)
	}
	ix := s.memo.find(func(ix *searchIndex) bool { return ix.snap == v.snap })
	if ix == nil {
		ix = newSearchIndex(v.snap)
		s.memo.store(ix)
	}
	res := ToolSearchResult{Tools: []FoundTool{}}
	var found []Tool
	for _, i := range ix.rank(in.Query, v.keep, topK) {
		t := v.snap.tools[i]
		res.Tools = append(res.Tools, FoundTool{Name: t.Name, Description: t.Description})
		found = append(found, t)
	}
	rc.reveal(found)
	if len(found) == 0 {
		res.Note = "No tools matched; try other words."
	} else {
		res.Note = "These tools are available from your next step."
	}
	return res, nil
}

// BM25 parameters: the usual k1 and b, and the weight of a word in a name
// relative to one in a description.
const (
	bm25K1     = 1.2
	bm25B      = 0.75
	nameWeight = 3.0
)

// searchIndex is a BM25F index of the deferred tools of one snapshot.
type searchIndex struct {
	snap   *snapshot
	docs   []searchDoc
	df     map[string]int
	avgLen float64
}

type searchDoc struct {
	pos    int
	tf     map[string]float64 // weighted term frequency
	length float64
}

func newSearchIndex(s *snapshot) *searchIndex {
	ix := &searchIndex{snap: s, df: make(map[string]int)}
	total := 0.0
	for i, t := range s.tools {
		if t.core == nil || !t.core.deferred {
			continue
		}
		d := searchDoc{pos: i, tf: make(map[string]float64)}
		for _, w := range words(t.Name, -1) {
			d.tf[w] += nameWeight
			d.length += nameWeight
		}
		for _, w := range words(t.Description, -1) {
			d.tf[w]++
			d.length++
		}
		for w := range d.tf {
			ix.df[w]++
		}
		total += d.length
		ix.docs = append(ix.docs, d)
	}
	if len(ix.docs) > 0 {
		ix.avgLen = total / float64(len(ix.docs))
	}
	return ix
}

// rank returns the positions of the best matches of query among the
// visible documents, best first; equal scores keep the tools' order.
func (ix *searchIndex) rank(query string, keep []bool, topK int) []int {
	terms := words(query, maxQueryTerms)
	slices.Sort(terms)
	terms = slices.Compact(terms)
	if len(terms) == 0 || len(ix.docs) == 0 {
		return nil
	}
	type hit struct {
		pos   int
		score float64
	}
	var hits []hit
	n := float64(len(ix.docs))
	for _, d := range ix.docs {
		if keep != nil && !keep[d.pos] {
			continue
		}
		score := 0.0
		for _, w := range terms {
			tf := d.tf[w]
			if tf == 0 {
				continue
			}
			df := float64(ix.df[w])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*d.length/ix.avgLen))
		}
		if score > 0 {
			hits = append(hits, hit{d.pos, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	out := make([]int, 0, min(topK, len(hits)))
	for _, h := range hits[:min(topK, len(hits))] {
		out = append(out, h.pos)
	}
	return out
}

var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "the": true, "of": true, "to": true, "for": true,
	"in": true, "on": true, "or": true, "with": true, "is": true, "it": true, "by": true,
}

// words splits text into lower-case search terms: on anything that is not
// a letter or digit, and between the words of camelCase names; a trailing
// plural "s" is dropped and stop words are skipped. With limit at 0 or
// more, it stops once it has that many words.
func words(text string, limit int) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		w := strings.ToLower(string(cur))
		cur = cur[:0]
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	var prev rune
	for _, r := range text {
		if len(out) == limit {
			return out
		}
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	if len(out) != limit {
		flush()
	}
	return out
}

// reveal records that this run's search found the tools, under the names
// the search showed them by.
func (rc *RunContext) reveal(tools []Tool) {
	s := rc.state()
	if len(tools) == 0 || s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended.Load() {
		return
	}
	p := &s.parts.reveals
	if p.revealed == nil {
		p.revealed = make(map[*toolCore]struct{})
	}
	for _, t := range tools {
		p.revealed[t.core] = struct{}{}
		s.identify(t, t.Name)
	}
	s.markDirty()
}

func (rc *RunContext) isRevealed(c *toolCore) bool {
	s := rc.state()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.parts.reveals.revealed[c]
	return ok
}

// revealPart is the run's part of tool search: the deferred tools its
// searches revealed. Its section of the saved state lists each once,
// sorted by name and schema hash:
//
//	"reveals": [{"tool": "get_weather", "schema": "sha256:..."}]
type revealPart struct {
	revealed map[*toolCore]struct{}
}

type savedTool struct {
	Tool   string `json:"tool"`
	Schema string `json:"schema"`
}

func (*revealPart) key() string { return "reveals" }

func (p *revealPart) save(sv saving) any {
	var out []savedTool
	for c := range p.revealed {
		if id, ok := sv.name(c); ok {
			out = append(out, savedTool{Tool: id.name, Schema: id.schema})
		}
	}
	for id := range sv.restored(p) {
		out = append(out, savedTool{Tool: id.name, Schema: id.schema})
	}
	slices.SortFunc(out, func(a, b savedTool) int {
		return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Schema, b.Schema))
	})
	return slices.Compact(out)
}

func (*revealPart) section() any { return new([]savedTool) }

func (p *revealPart) restore(v any, r *restoring) error {
	saved := *v.(*[]savedTool)
	for _, t := range saved {
		r.wait(p, toolID{name: t.Tool, schema: t.Schema}, nil)
	}
	return nil
}

func (p *revealPart) bind(c *toolCore, _ any) bool {
	if p.revealed == nil {
		p.revealed = make(map[*toolCore]struct{})
	}
	p.revealed[c] = struct{}{}
	return true
}
