package toolset_test

import (
	"context"
	"fmt"

	"github.com/gotoolset/toolset"
)

func ExampleExplain() {
	role := toolset.NewKey[string]("role")
	adminOnly := func(ctx context.Context, t toolset.Tool) (bool, error) {
		return t.Metadata["audience"] != "admin" || role.Get(ctx) == "admin", nil
	}
	db := toolset.NewFunction(
		tool("query"),
		toolset.NewTool("drop", "Drop a table.", func(context.Context, struct{}) (string, error) { return "", nil },
			toolset.WithMetadata(map[string]string{"audience": "admin"})),
	).WithLabel("db")
	files := toolset.NewFunction(tool("read_file"),
		toolset.NewTool("archive", "", func(context.Context, struct{}) (string, error) { return "", nil }, toolset.WithDeferred()))

	run := toolset.NewRun("r1", toolset.WithValue(role, "guest"))
	defer run.End()
	ctx := run.Turn(context.Background())
	e, err := toolset.Explain(ctx, "ops", toolset.NewCombined(db.Prefixed("db").Filtered(adminOnly), files.Prefixed("fs")))
	if err != nil {
		panic(err)
	}
	fmt.Println(e)
	for _, t := range e.Find("drop") {
		fmt.Println(t.Name, t.Visible, t.Reasons[0].Kind, "at", t.Reasons[0].Path)
	}
	// Output:
	// agent "ops": 2 of 4 tools shown
	// db_query: shown, from Combined#0/Filtered#0/Prefixed "db"/Function "db"
	//   - was "query", prefixed at Combined#0/Filtered#0/Prefixed "db"
	// db_drop: hidden, from Combined#0/Filtered#0/Prefixed "db"/Function "db"
	//   - was "drop", prefixed at Combined#0/Filtered#0/Prefixed "db"
	//   - filtered out at Combined#0/Filtered#0
	// fs_read_file: shown, from Combined#0/Prefixed#1 "fs"/Function
	//   - was "read_file", prefixed at Combined#0/Prefixed#1 "fs"
	// fs_archive: hidden, from Combined#0/Prefixed#1 "fs"/Function
	//   - was "archive", prefixed at Combined#0/Prefixed#1 "fs"
	//   - deferred, not revealed by a tool search of this run
	// db_drop false filtered out at Combined#0/Filtered#0
}
