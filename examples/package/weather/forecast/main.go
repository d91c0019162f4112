// Command forecast is a packaged tool executable: "forecast --schema"
// describes its tool, and "forecast runner_args.json" runs it and writes
// result.json, as the toolset package protocol asks. It uses the standard
// library only, so it builds anywhere Go does.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

const schema = `{"tools": {"forecast": {
  "description": "Get a (made-up) weather forecast for a city.",
  "parameters": {
    "type": "object",
    "properties": {
      "city": {"type": "string", "description": "City name, e.g. Paris"},
      "days": {"type": "integer", "minimum": 1, "maximum": 7, "description": "How many days"}
    },
    "required": ["city"]
  },
  "config_schema": [
    {"key": "units", "type": "string", "description": "metric or imperial", "default": "metric"},
    {"key": "api_key", "type": "string", "description": "Key of the weather service", "secret": true, "required": true}
  ],
  "timeout_seconds": 5
}}}`

type runnerArgs struct {
	ToolName   string         `json:"tool_name"`
	Args       map[string]any `json:"args"`
	ToolConfig map[string]any `json:"tool_config"`
	ResultFile string         `json:"result_file"`
}

type toolResult struct {
	Schema        string `json:"_schema"`
	SchemaVersion string `json:"_schema_version"`
	Status        string `json:"status"`
	Message       string `json:"message"`
	Data          any    `json:"data"`
	DataObjects   []any  `json:"data_objects"`
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--schema" {
		fmt.Println(schema)
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: forecast --schema | forecast runner_args.json")
		os.Exit(1)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var ra runnerArgs
	if err := json.Unmarshal(raw, &ra); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := map[string]any{"error": ""}
	city, _ := ra.Args["city"].(string)
	days := 3
	if d, ok := ra.Args["days"].(float64); ok {
		days = int(d)
	}
	if strings.EqualFold(city, "atlantis") {
		out["error"] = "unknown city: " + city
	} else {
		temp, unit := 21, "°C"
		if ra.ToolConfig["units"] == "imperial" {
			temp, unit = 70, "°F"
		}
		var daily []string
		for i := range days {
			daily = append(daily, fmt.Sprintf("day %d: %d%s, sunny", i+1, temp+i, unit))
		}
		out["result"] = toolResult{
			Schema: "ToolResult", SchemaVersion: "1.0", Status: "success",
			Message: fmt.Sprintf("%d-day forecast for %s", days, city),
			Data:    map[string]any{"city": city, "days": daily}, DataObjects: []any{},
		}
	}
	b, _ := json.Marshal(out)
	if err := os.WriteFile(ra.ResultFile, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
