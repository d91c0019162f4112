package toolpkg

import "strings"

// unprefixed is an error wrapped under a message of this package: its
// message loses the "toolpkg: " that the wrapping message already begins
// with, so that the chain says it once. errors.Is and errors.As see the
// error unchanged.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(u.err.Error(), "toolpkg: ") }

func (u unprefixed) Unwrap() error { return u.err }
