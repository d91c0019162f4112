package toolset_test

import (
	"context"
	"slices"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func catalogNames(tools *toolset.ToolList) (names []string, deferred []bool) {
	for t := range tools.Catalog() {
		names = append(names, t.Name)
		deferred = append(deferred, t.Deferred())
	}
	return names, deferred
}

// The catalogue of a turn is its tools and its unrevealed deferred tools,
// each in its place: it is the same before and after a search reveals
// some, while All grows.
func TestCatalogStaysTheSameAcrossReveals(t *testing.T) {
	catalog := deferredCatalog()
	search := toolset.NewToolSearch(catalog)
	turn := func(ctx context.Context) *toolset.ToolList {
		tools, err := toolset.BuildTools(ctx, "a", catalog, search)
		require.NoError(t, err)
		return tools
	}
	ctx := newRun(t, "r")
	tools := turn(ctx)
	want := []string{"create_invoice", "refund_payment", "weather_forecast", "list_invoices", "always_there", "tool_search"}
	names, deferred := catalogNames(tools)
	assert.Equal(t, want, names)
	assert.Equal(t, []bool{true, true, true, true, false, false}, deferred)
	assert.Equal(t, []string{"always_there", "tool_search"}, tools.Names())

	_, err := call(t, ctx, tools, "tool_search", `{"query":"refund","top_k":1}`)
	require.NoError(t, err)
	tools = turn(nextTurn(ctx))
	assert.Equal(t, []string{"refund_payment", "always_there", "tool_search"}, tools.Names())
	names, deferred = catalogNames(tools)
	assert.Equal(t, want, names, "a reveal keeps the catalogue as it was")
	assert.Equal(t, []bool{true, true, true, true, false, false}, deferred)
}

// A tool a filter hides this turn is no part of the catalogue, deferred
// or not; a turn with nothing deferred has All as its catalogue; so has a
// nil list.
func TestCatalogLeavesOutFilteredTools(t *testing.T) {
	hideWeather := toolset.NewFiltered(deferredCatalog(), func(_ context.Context, tool toolset.Tool) (bool, error) {
		return tool.Name != "weather_forecast", nil
	})
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", hideWeather)
	require.NoError(t, err)
	names, _ := catalogNames(tools)
	assert.Equal(t, []string{"create_invoice", "refund_payment", "list_invoices", "always_there"}, names)

	plain, err := toolset.BuildTools(nextTurn(ctx), "a", echoTool("x"))
	require.NoError(t, err)
	names, _ = catalogNames(plain)
	assert.Equal(t, plain.Names(), names)
	var none *toolset.ToolList
	assert.Empty(t, slices.Collect(none.Catalog()))
	assert.False(t, toolset.Tool{}.Deferred())
}

// A search during the turn does not change the turn's catalogue.
func TestCatalogOfATurnIsFixedWhenASearchRevealsDuringIt(t *testing.T) {
	catalog := deferredCatalog()
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", catalog, toolset.NewToolSearch(catalog))
	require.NoError(t, err)
	before, _ := catalogNames(tools)
	_, err = call(t, ctx, tools, "tool_search", `{"query":"invoice","top_k":2}`)
	require.NoError(t, err)
	after, _ := catalogNames(tools)
	assert.Equal(t, before, after)
	assert.Equal(t, []string{"always_there", "tool_search"}, tools.Names())
}

func TestIsToolSearch(t *testing.T) {
	search := toolset.NewToolSearch(deferredCatalog())
	assert.True(t, search.IsToolSearch())
	assert.False(t, echoTool("x").IsToolSearch())
	assert.False(t, toolset.Tool{}.IsToolSearch())
}

func TestPrefixedPrefix(t *testing.T) {
	p, sep := deferredCatalog().Prefixed("billing").Prefix()
	assert.Equal(t, "billing", p)
	assert.Equal(t, "_", sep)
	p, sep = toolset.NewPrefixed(deferredCatalog(), "db", toolset.WithSeparator(".")).Prefix()
	assert.Equal(t, "db", p)
	assert.Equal(t, ".", sep)
	var none *toolset.Prefixed
	p, sep = none.Prefix()
	assert.Empty(t, p+sep)
}
