package toolpkg

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ArtifactParam describes a parameter of a tool that takes the name of an
// artifact (artifact_params in --schema).
type ArtifactParam struct {
	// Required makes a call whose artifact cannot be loaded fail, with an
	// error the model sees.
	Required bool `json:"required,omitempty"`
	// List says the parameter takes a list of names; they are passed as
	// "param[0]", "param[1]", ...
	List bool `json:"is_list,omitempty"`
}

// Bounds of what a schema declares about artifacts and auth.
const (
	maxArtifactParams  = 32
	maxAuthSchemaBytes = 4096
)

// parseArtifactParams reads artifact_params: an object mapping each
// parameter to {"required": bool, "is_list": bool} (or to a boolean,
// required), or a list of parameter names (each required).
func parseArtifactParams(raw json.RawMessage) (map[string]ArtifactParam, []string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	out := map[string]ArtifactParam{}
	var names []string
	if json.Unmarshal(raw, &names) == nil {
		for _, n := range names {
			out[n] = ArtifactParam{Required: true}
		}
	} else {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, []string{"must be an object mapping parameters to {\"required\", \"is_list\"}, or a list of parameter names"}
		}
		for n, v := range m {
			var b bool
			if json.Unmarshal(v, &b) == nil {
				out[n] = ArtifactParam{Required: b}
				continue
			}
			var ap ArtifactParam
			if err := json.Unmarshal(v, &ap); err != nil {
				return nil, []string{fmt.Sprintf("parameter %s: %v", quoteShort(n), err)}
			}
			out[n] = ap
		}
	}
	if len(out) > maxArtifactParams {
		return nil, []string{fmt.Sprintf("lists %d parameters; at most %d are allowed", len(out), maxArtifactParams)}
	}
	for n := range out {
		if !toolNamePattern.MatchString(n) {
			return nil, []string{fmt.Sprintf("parameter name %s is not valid (^[a-zA-Z0-9_-]{1,64}$)", quoteShort(n))}
		}
	}
	return out, nil
}
