package mcptoolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/gotoolset/toolset"
	"github.com/gotoolset/toolset/internal/textcut"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Metadata keys set on every tool of a [Toolset]. The hint keys are set only
// when the server sent annotations; their values are "true" or "false".
// [NewServer] reads the title and hint keys back into the MCP tool
// definition it serves.
const (
	// MetaServer is the name of the server the tool comes from.
	MetaServer = "mcp.server"
	// MetaTool is the tool's name on the server, which a prefix or a
	// renaming does not change.
	MetaTool = "mcp.tool"
	// MetaTitle is the tool's human-readable title: its title, or else the
	// title of its annotations.
	MetaTitle = "mcp.title"
	// MetaReadOnly is the readOnlyHint annotation: the tool does not modify
	// its environment.
	MetaReadOnly = "mcp.readOnlyHint"
	// MetaDestructive is the destructiveHint annotation: the tool may
	// destroy or overwrite data (meaningful when not read-only).
	MetaDestructive = "mcp.destructiveHint"
	// MetaIdempotent is the idempotentHint annotation: calling the tool
	// again with the same arguments has no further effect.
	MetaIdempotent = "mcp.idempotentHint"
	// MetaOpenWorld is the openWorldHint annotation: the tool interacts with
	// an open world of external entities (the web, say).
	MetaOpenWorld = "mcp.openWorldHint"
	// MetaIcons is the tool's icons, set only when the server listed some
	// that are kept: a JSON array of MCP icons, objects with "src" (an
	// http or https URL, or a data: URI of an image) and optionally
	// "mimeType", "sizes" and "theme". At most [MaxIcons] icons, each
	// source at most [MaxIconBytes], [MaxIconsBytes] in all; the other
	// icons are dropped with a warning, the tool is kept. The toolset
	// never fetches an icon: a URL is an address the server chose, to be
	// shown as an image (an SVG may hold script), never inlined.
	MetaIcons = "mcp.icons"
)

// makeTool makes the tool of one definition, offered under the name
// offered (see offeredName), or says why it is invalid.
func (c *conn) makeTool(d *mcp.Tool, offered string) (toolset.Tool, error) {
	lim := c.cfg.limits
	if len(d.Description) > lim.MaxDescriptionBytes {
		return toolset.Tool{}, fmt.Errorf("the description is %d bytes, more than the limit of %d", len(d.Description), lim.MaxDescriptionBytes)
	}
	title := d.Title
	if d.Annotations != nil && len(d.Annotations.Title) > len(title) {
		title = d.Annotations.Title
	}
	if len(title) > lim.MaxDescriptionBytes {
		return toolset.Tool{}, fmt.Errorf("the title is %d bytes, more than the limit of %d", len(title), lim.MaxDescriptionBytes)
	}
	if d.InputSchema == nil {
		return toolset.Tool{}, errors.New("the tool has no input schema")
	}
	in, err := schemaJSON(d.InputSchema, lim)
	if err != nil {
		return toolset.Tool{}, fmt.Errorf("input schema: %w", err)
	}
	params, err := toolset.ParseSchema(in)
	if err != nil {
		return toolset.Tool{}, fmt.Errorf("input schema: %w", err)
	}
	md := metadataOf(c.cfg.name, d)
	if icons, dropped, why := iconsOf(d.Icons); dropped > 0 || icons != "" {
		if icons != "" {
			md[MetaIcons] = icons
		}
		if dropped > 0 {
			c.cfg.logger.Warn("mcptoolset: dropping icons of a tool of an MCP server", "server", c.cfg.name,
				"tool", textcut.Clip(d.Name, maxNameBytes), "dropped", dropped, "error", why)
		}
	}
	// The origin makes the tool's identity: a tool the server announces
	// anew (a changed definition makes a new tool value) keeps the failure
	// budget and the rate window of the one before.
	opts := []toolset.ToolOption{toolset.WithMetadata(md), toolset.WithOrigin("mcp:" + c.cfg.name), toolset.WithMiddleware(carryCall),
		toolset.WithEffectsFrom(effectsOf(d.Annotations), effectsSource(c.cfg.name, d.Annotations))}
	if d.OutputSchema != nil {
		out, err := schemaJSON(d.OutputSchema, lim)
		if err != nil {
			return toolset.Tool{}, fmt.Errorf("output schema: %w", err)
		}
		returns, err := toolset.ParseSchema(out)
		if err != nil {
			return toolset.Tool{}, fmt.Errorf("output schema: %w", err)
		}
		opts = append(opts, toolset.WithReturns(returns))
	}
	if c.cfg.toolOpts != nil {
		more, err := c.toolOptions(d)
		if err != nil {
			return toolset.Tool{}, err
		}
		opts = append(opts, more...)
	}
	name := d.Name
	call := func(ctx context.Context, args json.RawMessage) (any, error) { return c.call(ctx, name, args) }
	// NewRawTool compiles the schema at once, loading nothing: a schema
	// that does not compile on its own is refused here, not at every call.
	t := toolset.NewRawTool(offered, d.Description, params, call, opts...)
	if err := t.Err(); err != nil {
		return toolset.Tool{}, err
	}
	return t, nil
}

// toolOptions runs the WithToolOptions function for d, recovering a panic.
func (c *conn) toolOptions(d *mcp.Tool) (opts []toolset.ToolOption, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &toolset.PanicError{Tool: textcut.Clip(d.Name, maxNameBytes), Callback: "WithToolOptions function", Value: p, Stack: debug.Stack()}
		}
	}()
	return c.cfg.toolOpts(d), nil
}

func metadataOf(server string, d *mcp.Tool) map[string]string {
	md := map[string]string{MetaServer: server, MetaTool: d.Name}
	title := d.Title
	if a := d.Annotations; a != nil {
		if title == "" {
			title = a.Title
		}
		md[MetaReadOnly] = strconv.FormatBool(a.ReadOnlyHint)
		md[MetaIdempotent] = strconv.FormatBool(a.IdempotentHint)
		if a.DestructiveHint != nil {
			md[MetaDestructive] = strconv.FormatBool(*a.DestructiveHint)
		}
		if a.OpenWorldHint != nil {
			md[MetaOpenWorld] = strconv.FormatBool(*a.OpenWorldHint)
		}
	}
	if title != "" {
		md[MetaTitle] = title
	}
	return md
}

// effectsSource says where a tool's effects come from, for
// toolset.Explain: the server and the hints it gave, or that it gave
// none and the specification's defaults apply.
func effectsSource(server string, a *mcp.ToolAnnotations) string {
	by := fmt.Sprintf("MCP annotations of server %q", textcut.Clip(server, maxNameBytes))
	if a == nil {
		return by + " (none given: the specification's defaults)"
	}
	hint := func(name string, v *bool) string {
		if v == nil {
			return name + " unset"
		}
		return name + ": " + strconv.FormatBool(*v)
	}
	return by + " (" + hint("readOnlyHint", &a.ReadOnlyHint) + ", " + hint("destructiveHint", a.DestructiveHint) + ", " +
		hint("idempotentHint", &a.IdempotentHint) + ")"
}

// effectsOf reads a tool's annotations as its effects, with the
// specification's defaults for what they leave out: not read-only,
// destructive, not idempotent, open world.
func effectsOf(a *mcp.ToolAnnotations) toolset.Effects {
	e := toolset.UnknownEffects
	if a == nil {
		return e
	}
	e.ReadOnly, e.Idempotent = a.ReadOnlyHint, a.IdempotentHint
	if a.DestructiveHint != nil {
		e.Destructive = *a.DestructiveHint
	}
	if a.OpenWorldHint != nil {
		e.OpenWorld = *a.OpenWorldHint
	}
	return e
}
