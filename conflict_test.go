package toolset_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gotoolset/toolset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildToolsConflicts(t *testing.T) {
	ctx := context.Background()
	shared := toolset.NewFunction(echoTools("query", "schema")...)
	weather := toolset.NewFunction(echoTools("get_temp")...)
	cases := []struct {
		name    string
		entries []toolset.Toolset
		want    string
	}{
		{
			name:    "two toolsets",
			entries: []toolset.Toolset{shared.Prefixed("shared"), weather, shared.Prefixed("shared")},
			want: `toolset: agent "Ops" has tool name conflicts:
  - "shared_query" contributed by: Prefixed#0 "shared", Prefixed#2 "shared"
  - "shared_schema" contributed by: Prefixed#0 "shared", Prefixed#2 "shared"
hint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)`,
		},
		{
			name:    "toolset and standalone",
			entries: []toolset.Toolset{echoTool("get_temp"), weather},
			want: `toolset: agent "Ops" has tool name conflicts:
  - "get_temp" contributed by: Tool#0 "get_temp", Function#1
hint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)`,
		},
		{
			name:    "three ways",
			entries: []toolset.Toolset{weather, weather.WithLabel("backup"), echoTool("get_temp")},
			want: `toolset: agent "Ops" has tool name conflicts:
  - "get_temp" contributed by: Function#0, Function#1 "backup", Tool#2 "get_temp"
hint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)`,
		},
		{
			name:    "nested combined",
			entries: []toolset.Toolset{toolset.NewCombined(weather, shared, toolset.NewFunction(echoTool("query")).Filtered(adminsOnly)), echoTool("schema")},
			want: `toolset: agent "Ops" has tool name conflicts:
  - "query" contributed by: Combined#0/Function#1, Combined#0/Filtered#2
  - "schema" contributed by: Combined#0/Function#1, Tool#1 "schema"
hint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)`,
		},
		{
			name: "conflicts and invalid names at once",
			entries: []toolset.Toolset{
				weather, shared.Prefixed(strings.Repeat("p", 60)), toolset.NewFunction(echoTool("get_temp")).Renamed(map[string]string{"get_temp": "get temp"}),
				echoTool("get_temp"),
			},
			want: `toolset: agent "Ops" has tool name conflicts and invalid tool names:
  - "get_temp" contributed by: Function#0, Tool#3 "get_temp"
  - "` + strings.Repeat("p", 60) + `_query" from Prefixed#1 "` + strings.Repeat("p", 60) + `": 66 characters, at most 64 allowed
  - "` + strings.Repeat("p", 60) + `_schema" from Prefixed#1 "` + strings.Repeat("p", 60) + `": 67 characters, at most 64 allowed
  - "get temp" from Renamed#2: character ' ' not allowed (only letters, digits, '_' and '-')
hint: wrap one of the toolsets with .Prefixed(...) or .Renamed(...)
hint: tool names must match ^[a-zA-Z0-9_-]{1,64}$; rename tools with .Renamed(...) or use a shorter prefix`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 3 { // memoised turns report the same
				_, err := toolset.BuildTools(ctx, "Ops", c.entries...)
				var nce *toolset.NameConflictError
				require.ErrorAs(t, err, &nce)
				assert.Equal(t, "Ops", nce.Agent)
				assert.Equal(t, c.want, err.Error())
			}
		})
	}
}

func TestBuildToolsStandaloneReplacement(t *testing.T) {
	ctx := context.Background()
	first := echoTool("lookup")
	second := toolset.NewTool("lookup", "The newer lookup.", func(context.Context, struct{}) (string, error) { return "second", nil })
	tools, err := toolset.BuildTools(ctx, "a", echoTool("a"), first, toolset.NewFunction(echoTool("b")), second, echoTool("c"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "lookup", "b", "c"}, tools.Names(), "the later tool takes the earlier one's position")
	got, err := tools.Execute(ctx, toolset.ToolCall{Name: "lookup", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "second", got)
	tool, ok := tools.Lookup("lookup")
	require.True(t, ok)
	assert.Equal(t, "The newer lookup.", tool.Description)

	ptr := echoTool("p")
	tools, err = toolset.BuildTools(ctx, "a", &ptr, echoTool("p"))
	require.NoError(t, err)
	assert.Equal(t, []string{"p"}, tools.Names())
}

func TestBuildToolsEntryErrors(t *testing.T) {
	ctx := context.Background()
	_, err := toolset.BuildTools(ctx, "Ops", toolset.NewFunction(), nil, toolset.NewFunction().Prefixed(""))
	require.EqualError(t, err, `toolset: agent "Ops": Toolset#1: a nil Toolset`)
	_, err = toolset.BuildTools(ctx, "Ops", toolset.NewFunction(), toolset.NewFunction().Prefixed(""))
	require.Error(t, err)
	assert.EqualError(t, err, `toolset: agent "Ops": Prefixed#1: empty prefix`)
}

func TestTools(t *testing.T) {
	ctx := withRole(t, "guest")
	users := toolset.NewFunction(
		echoTool("get_user"),
		toolset.NewTool("delete_user", "", func(context.Context, struct{}) (string, error) { return "deleted", nil },
			toolset.WithMetadata(map[string]string{"audience": "admin"})),
		echoTool("list_users"),
	).Filtered(adminsOnly)
	tools, err := toolset.BuildTools(ctx, "Ops", users)
	require.NoError(t, err)
	assert.Equal(t, "Ops", tools.Agent())
	assert.Equal(t, 2, tools.Len())
	assert.Equal(t, []string{"get_user", "list_users"}, tools.Names())
	list := tools.Tools()
	require.Len(t, list, 2)
	list[0].Name = "changed"
	assert.Equal(t, []string{"get_user", "list_users"}, tools.Names(), "List returns a copy")
	var seen []string
	for tool := range tools.All() {
		seen = append(seen, tool.Name)
		break
	}
	assert.Equal(t, []string{"get_user"}, seen)
	_, ok := tools.Lookup("delete_user")
	assert.False(t, ok)

	var none *toolset.ToolList
	assert.Zero(t, none.Len())
	assert.Empty(t, none.Tools())
	assert.Empty(t, none.Names())

	empty, err := toolset.BuildTools(nextTurn(ctx), "Ops")
	require.NoError(t, err)
	assert.Zero(t, empty.Len())
}

func TestBuildToolsLookupSkipsHiddenDuplicate(t *testing.T) {
	ctx := withRole(t, "guest")
	adminSearch := toolset.NewFunction(toolset.NewTool("search", "", func(context.Context, struct{}) (string, error) { return "admin", nil },
		toolset.WithMetadata(map[string]string{"audience": "admin"}))).Filtered(adminsOnly)
	userSearch := toolset.NewFunction(toolset.NewTool("search", "", func(context.Context, struct{}) (string, error) { return "user", nil }))
	tools, err := toolset.BuildTools(ctx, "a", adminSearch, userSearch)
	require.NoError(t, err)
	got, err := tools.Execute(ctx, toolset.ToolCall{Name: "search", Args: nil})
	require.NoError(t, err)
	assert.Equal(t, "user", got)
}

// pkgToolset is a toolset of another package: it labels itself "pkg:fx"
// and its errors name it as that package does.
type pkgToolset struct{ err error }

func (p pkgToolset) GetTools(context.Context) ([]toolset.Tool, error) { return nil, p.err }

func (pkgToolset) Label() string { return "pkg:fx" }

// TestEntryErrorSaysEachThingOnce checks that the errors of a failing
// entry name the agent, the entry and this package once each.
func TestEntryErrorSaysEachThingOnce(t *testing.T) {
	ctx := context.Background()
	fx := pkgToolset{err: errors.New(`pkg: toolset "fx": invalid configuration`)}
	cases := []struct {
		name    string
		entries []toolset.Toolset
		want    string
	}{
		{"an error that names its toolset", []toolset.Toolset{echoTool("x"), fx},
			`toolset: agent "a": pkgToolset#1 "pkg:fx": invalid configuration`},
		{"inside a Combined", []toolset.Toolset{toolset.NewCombined(fx)},
			`toolset: agent "a": Combined#0/pkgToolset#0 "pkg:fx": invalid configuration`},
		{"an error that does not", []toolset.Toolset{pkgToolset{err: errors.New("server down")}},
			`toolset: agent "a": pkgToolset#0 "pkg:fx": server down`},
		{"an error of this package", []toolset.Toolset{toolset.NewFunction().Prefixed("")},
			`toolset: agent "a": Prefixed#0: empty prefix`},
		{"a Label that panics", []toolset.Toolset{panicky{label: true}},
			`toolset: agent "a": panicky#0: Label panicked: Label exploded`},
		{"a Label that panics, in a Combined", []toolset.Toolset{toolset.NewCombined(panicky{label: true})},
			`toolset: agent "a": Combined#0/panicky#0: Label panicked: Label exploded`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := toolset.BuildTools(ctx, "a", c.entries...)
			require.EqualError(t, err, c.want)
		})
	}
}
