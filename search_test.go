package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func deferredCatalog() *toolset.Function {
	mk := func(name, desc string) toolset.Tool {
		return toolset.NewTool(name, desc, func(context.Context, struct{}) (string, error) { return name, nil }, toolset.WithDeferred())
	}
	return toolset.NewFunction(
		mk("create_invoice", "Create an invoice for a customer."),
		mk("refund_payment", "Refund a card payment to a customer."),
		mk("weather_forecast", "Weather forecast for a city."),
		mk("list_invoices", "List the invoices of a customer, newest first."),
		echoTool("always_there"),
	)
}

func TestToolSearch(t *testing.T) {
	catalog := deferredCatalog().Prefixed("billing")
	search := toolset.NewToolSearch(catalog)
	assert.Equal(t, "tool_search", search.Name)
	turn := func(ctx context.Context) *toolset.ToolList {
		tools, err := toolset.BuildTools(ctx, "a", catalog, search, toolset.NewToolSearch(catalog))
		require.NoError(t, err, "two search tools of one name are standalone tools: no conflict")
		return tools
	}
	r1, r2 := newRun(t, "r1"), newRun(t, "r2")
	tools := turn(r1)
	assert.Equal(t, []string{"billing_always_there", "tool_search"}, tools.Names())
	_, err := call(t, r1, tools, "billing_refund_payment", `{}`)
	require.Error(t, err, "a hidden deferred tool cannot be called")

	res, err := call(t, r1, tools, "tool_search", `{"query":"invoice","top_k":1}`)
	require.NoError(t, err)
	found := res.(toolset.ToolSearchResult)
	require.Len(t, found.Tools, 1)
	assert.Equal(t, "billing_create_invoice", found.Tools[0].Name, "name matches rank first")

	tools = turn(nextTurn(r1))
	assert.Equal(t, []string{"billing_create_invoice", "billing_always_there", "tool_search"}, tools.Names(), "revealed from the next turn")
	got, err := call(t, r1, tools, "billing_create_invoice", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "create_invoice", got)

	other := turn(r2)
	assert.Equal(t, []string{"billing_always_there", "tool_search"}, other.Names(), "another run does not see the reveal")
	_, err = call(t, r2, other, "billing_create_invoice", `{}`)
	require.Error(t, err)

	res, err = call(t, r2, other, "tool_search", `{"query":"refund the customer's card payments","top_k":99}`)
	require.NoError(t, err)
	found = res.(toolset.ToolSearchResult)
	require.NotEmpty(t, found.Tools)
	assert.Equal(t, "billing_refund_payment", found.Tools[0].Name)
	assert.LessOrEqual(t, len(found.Tools), 3, "only tools sharing a word match")

	res, err = call(t, r2, other, "tool_search", `{"query":"  "}`)
	require.NoError(t, err)
	assert.Empty(t, res.(toolset.ToolSearchResult).Tools, "an empty query matches nothing")

	_, err = call(t, context.Background(), turn(context.Background()), "tool_search", `{"query":"invoice"}`)
	require.ErrorContains(t, err, "needs a run")

	// The deferred tool is also refused when called directly without a reveal.
	_, err = deferredCatalog().GetTools(context.Background())
	require.NoError(t, err)
}

func TestToolSearchTopKClamp(t *testing.T) {
	var many []toolset.Tool
	for i := range 60 {
		many = append(many, toolset.NewTool(fmt.Sprintf("report_%d", i), "A report.", func(context.Context, struct{}) (int, error) { return i, nil }, toolset.WithDeferred()))
	}
	catalog := toolset.NewFunction(many...)
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", catalog, toolset.NewToolSearch(catalog, toolset.WithSearchName("find_tools"), toolset.WithSearchTopK(3)))
	require.NoError(t, err)
	for args, want := range map[string]int{`{"query":"report"}`: 3, `{"query":"report","top_k":0}`: 3, `{"query":"report","top_k":-4}`: 1, `{"query":"report","top_k":500}`: 50} {
		res, err := call(t, ctx, tools, "find_tools", args)
		require.NoError(t, err)
		assert.Len(t, res.(toolset.ToolSearchResult).Tools, want, args)
	}
}

func TestDeferredToolConflictsOnlyOnceRevealed(t *testing.T) {
	lazy := toolset.NewFunction(toolset.NewTool("lookup", "Look up in the archive.", func(context.Context, struct{}) (string, error) {
		return "archive", nil
	}, toolset.WithDeferred()))
	search := toolset.NewToolSearch(lazy)
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", lazy, echoTool("lookup"), search)
	require.NoError(t, err, "a hidden deferred tool takes no name")
	_, err = call(t, ctx, tools, "tool_search", `{"query":"archive"}`)
	require.NoError(t, err)
	_, err = toolset.BuildTools(nextTurn(ctx), "a", lazy, echoTool("lookup"), search)
	var nce *toolset.NameConflictError
	require.ErrorAs(t, err, &nce)
	assert.Equal(t, []string{"Function#0", `Tool#1 "lookup"`}, nce.Conflicts[0].Contributors)
}

// A model's query is bounded before it is read: one of a megabyte, or of a
// million words, is refused with an error the model sees, and the search
// allocates no more for it than for a short one; top_k stays within 1..50.
func TestToolSearchBoundsAHostileQuery(t *testing.T) {
	catalog := deferredCatalog()
	ctx := newRun(t, "r")
	tools, err := toolset.BuildTools(ctx, "a", catalog, toolset.NewToolSearch(catalog))
	require.NoError(t, err)
	run := func(q string, topK int) (toolset.ToolSearchResult, error) {
		args, err := json.Marshal(toolset.ToolSearchArgs{Query: q, TopK: topK})
		require.NoError(t, err)
		res, err := tools.Execute(ctx, toolset.ToolCall{Name: "tool_search", Args: args})
		r, _ := res.(toolset.ToolSearchResult)
		return r, err
	}
	for name, q := range map[string]string{
		"1 MB":          strings.Repeat("invoice ", 1<<17),
		"10^6 terms":    strings.Repeat("a ", 1_000_000),
		"just too long": "invoice" + strings.Repeat(" ", 1018),
	} {
		_, err := run(q, 0)
		require.Error(t, err, name)
		msg, ok := toolset.ErrorText(err)
		assert.True(t, ok, "%s: the model sees the error", name)
		assert.Contains(t, msg, "at most 1024", name)
	}
	res, err := run("invoice"+strings.Repeat(" ", 1017), 1_000_000)
	require.NoError(t, err, "a query of 1024 bytes is read")
	assert.Equal(t, "create_invoice", res.Tools[0].Name)
	assert.LessOrEqual(t, len(res.Tools), 50)

	short := testing.AllocsPerRun(3, func() { _, _ = run("invoice", 0) })
	huge := strings.Repeat("invoice ", 1<<17)
	refused := testing.AllocsPerRun(3, func() { _, _ = run(huge, 0) })
	assert.LessOrEqual(t, refused, short+10, "a refused query costs no more than a short one")
	many := strings.Repeat("invoice customer ", 60) // 1020 bytes, 120 words
	long := testing.AllocsPerRun(3, func() { _, _ = run(many, 0) })
	assert.LessOrEqual(t, long, short+float64(2*32)+20, "only 32 words of a long query are read")
}
