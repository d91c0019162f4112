package mcptoolset

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on the icons of a tool (see [MetaIcons]).
const (
	// MaxIcons is the most icons of a tool kept; the others are dropped.
	MaxIcons = 8
	// MaxIconBytes bounds the source of one icon: a data: URI of a small
	// image fits, a larger one is dropped.
	MaxIconBytes = 8 << 10
	// MaxIconsBytes bounds the value of [MetaIcons]: the icons that do
	// not fit are dropped.
	MaxIconsBytes = 16 << 10
)

// maxIconSizes bounds the sizes of one icon, and maxIconField the
// bytes of its media type and of each size.
const (
	maxIconSizes = 8
	maxIconField = 64
)

// iconsOf returns the value of MetaIcons for icons (the JSON of those it
// keeps, or "" for none) and how many it dropped, with the first reason.
func iconsOf(icons []mcp.Icon) (value string, dropped int, why error) {
	var kept []mcp.Icon
	size := 2 // []
	for _, ic := range icons {
		err := checkIcon(ic)
		var b []byte
		if err == nil && len(kept) == MaxIcons {
			err = fmt.Errorf("more than %d icons", MaxIcons)
		}
		if err == nil {
			b, err = json.Marshal(ic)
			if err == nil && size+len(b)+1 > MaxIconsBytes {
				err = fmt.Errorf("the icons are more than %d bytes together", MaxIconsBytes)
			}
		}
		if err != nil {
			if dropped++; why == nil {
				why = err
			}
			continue
		}
		kept = append(kept, ic)
		size += len(b) + 1
	}
	if len(kept) == 0 {
		return "", dropped, why
	}
	b, _ := json.Marshal(kept) // each encoded above
	return string(b), dropped, why
}

// checkIcon refuses an icon that a client could not show safely as an
// image: a source that is neither an http(s) URL nor a data: URI of an
// image (a file: or javascript: URI, a relative reference), one over
// MaxIconBytes, a URL with credentials, fields that are not what MCP
// says.
func checkIcon(ic mcp.Icon) error {
	src := ic.Source
	switch {
	case src == "":
		return errors.New("an icon without a source")
	case len(src) > MaxIconBytes:
		return fmt.Errorf("an icon's source is %d bytes, more than %d", len(src), MaxIconBytes)
	case !printableASCII(src):
		return errors.New("an icon's source holds a character outside printable ASCII")
	}
	if rest, ok := strings.CutPrefix(src, "data:"); ok {
		if !strings.HasPrefix(rest, "image/") || !strings.Contains(rest, ",") {
			return errors.New("an icon's data: URI is not of an image")
		}
	} else {
		u, err := url.Parse(src)
		switch {
		case err != nil:
			return errors.New("an icon's source is not a URL")
		case u.Scheme != "https" && u.Scheme != "http":
			return errors.New("an icon's source is neither an http(s) URL nor a data: URI")
		case u.Host == "":
			return errors.New("an icon's URL has no host")
		case u.User != nil:
			return errors.New("an icon's URL holds credentials")
		}
	}
	if ic.MIMEType != "" && (len(ic.MIMEType) > maxIconField || !strings.HasPrefix(ic.MIMEType, "image/") || !printableASCII(ic.MIMEType)) {
		return errors.New("an icon's mimeType is not an image type")
	}
	if len(ic.Sizes) > maxIconSizes {
		return fmt.Errorf("an icon has more than %d sizes", maxIconSizes)
	}
	for _, s := range ic.Sizes {
		if !iconSize(s) {
			return errors.New(`an icon's size is neither "any" nor WxH`)
		}
	}
	if ic.Theme != "" && ic.Theme != mcp.IconThemeLight && ic.Theme != mcp.IconThemeDark {
		return errors.New(`an icon's theme is neither "light" nor "dark"`)
	}
	return nil
}

// iconSize reports whether s is "any" or WxH, as in "48x48".
func iconSize(s string) bool {
	if s == "any" {
		return true
	}
	w, h, ok := strings.Cut(s, "x")
	return ok && len(s) <= maxIconField && digits(w) && digits(h)
}

func digits(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
}

func printableASCII(s string) bool {
	for i := range len(s) {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
