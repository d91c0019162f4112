module github.com/gotoolset/toolset/platform

go 1.26.0

replace (
	github.com/gotoolset/toolset => ..
	github.com/gotoolset/toolset/mcptoolset => ../mcptoolset
	github.com/gotoolset/toolset/toolpkg => ../toolpkg
)
