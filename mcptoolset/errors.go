package mcptoolset

import (
	"errors"
	"fmt"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
)

// ErrClosed is the error (wrapped in a [*ServerError]) of a [Toolset] used
// after Close, and of every handle once the last one is closed.
var ErrClosed = errors.New("toolset closed")

// ServerError reports an MCP server that could not be reached, or that
// failed a request: the connection could not be opened, the tool list could
// not be fetched, a tool call got no result. It should stop the run; it is
// not a [toolset.ModelError]. Get it with errors.As.
type ServerError struct {
	// Server is the server's name (see [WithName]).
	Server string
	// Op is what failed: "connect", "list tools", "call tool" or "close".
	Op string
	// Tool is the tool's name on the server, for "call tool".
	Tool string
	// Err is the cause; errors.Is finds context.Canceled, ErrClosed,
	// mcp.ErrConnectionClosed and the like through it.
	Err error
}

// maxServerCauseShown bounds the text of a ServerError's cause, which may
// quote what the server sent (a JSON-RPC error's message, say).
const maxServerCauseShown = 8 << 10

// Error implements error. The cause's text is cut to 8 KiB.
func (e *ServerError) Error() string {
	cause := textcut.Clip(fmt.Sprint(e.Err), maxServerCauseShown)
	if e.Tool != "" {
		return fmt.Sprintf("mcptoolset: MCP server %q: %s %q: %s", e.Server, e.Op, e.Tool, cause)
	}
	return fmt.Sprintf("mcptoolset: MCP server %q: %s: %s", e.Server, e.Op, cause)
}

// Unwrap returns the cause.
func (e *ServerError) Unwrap() error { return e.Err }

// InvalidToolError reports a tool of a server's listing that a [Toolset]
// refused: its input schema does not compile, or refers to a document
// other than itself (a file, a URL; see [toolset.SchemaRefError]), or the tool
// is over the limits of [WithListLimits], or its name is unusable or
// listed twice. The listing leaves it out (see [Toolset.InvalidTools]), or
// fails with it under [WithFailOnInvalidTools].
type InvalidToolError struct {
	// Server is the server's name.
	Server string
	// Tool is the tool's name as the server listed it, cut to 128 bytes.
	Tool string
	// Err says what is wrong.
	Err error
}

// maxCauseShown bounds the text of an InvalidToolError's cause.
const maxCauseShown = 512

// Error implements error.
func (e *InvalidToolError) Error() string {
	return fmt.Sprintf("mcptoolset: MCP server %q: tool %q refused: %s", e.Server, e.Tool, textcut.Clip(fmt.Sprint(e.Err), maxCauseShown))
}

// Unwrap returns the cause.
func (e *InvalidToolError) Unwrap() error { return e.Err }

// ResultError is a tool result that the server flagged with isError: the
// tool ran and failed in a way the model should see, such as a file that
// does not exist. It implements [toolset.ModelError]; its message is the
// text of the result.
type ResultError struct {
	// Server is the server's name.
	Server string
	// Tool is the tool's name on the server.
	Tool string
	// Content is the result the server sent, text and other parts.
	Content *toolset.Content
}

var _ toolset.ModelError = (*ResultError)(nil)

// Error implements error. The result's text is cut to 8 KiB; the model
// gets all of it from ModelText.
func (e *ResultError) Error() string {
	return fmt.Sprintf("mcptoolset: MCP server %q: tool %q reported an error: %s", e.Server, e.Tool, textcut.Clip(e.ModelText(), maxServerCauseShown))
}

// ModelText implements [toolset.ModelError]: the text of the result, or
// a short note when the server sent none.
func (e *ResultError) ModelText() string {
	if e.Content != nil {
		if s := e.Content.ModelText(); s != "" {
			return s
		}
	}
	return "the tool failed without saying why"
}
