package toolset_test

import (
	"context"
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
