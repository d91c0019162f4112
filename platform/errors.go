package platform

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// ErrorBody is the JSON body of every error the platform answers:
// {"error": {"code": "NotFound", "message": "..."}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: Code is a stable word a client can
// branch on (NotFound, Conflict, PackageInUse, ...), Message is for
// people. Problems, when the input had several, lists each
// (InvalidPackage, InvalidConfig, InvalidAgent).
type ErrorDetail struct {
	Code     string    `json:"code"`
	Message  string    `json:"message"`
	Problems []Problem `json:"problems,omitempty"`
	// InUse, in a PackageInUse answer to an upload or a removal, says
	// what uses the toolset.
	InUse *InUse `json:"inUse,omitempty"`
	// SkillInUse, in a SkillInUse answer to a skill's removal, says which
	// agents attach the skill.
	SkillInUse *SkillInUse `json:"skillInUse,omitempty"`
}

// Problem is one thing wrong with an input: its message and, for a file
// with lines (an agent file), where it is (1-based line and column;
// absent when not known or when it concerns the whole input).
type Problem struct {
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// WriteError answers status with the JSON error body for code and message.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	writeProblems(w, status, code, message, nil)
}

func writeProblems(w http.ResponseWriter, status int, code, message string, problems []Problem) {
	body, _ := marshal(ErrorBody{Error: ErrorDetail{Code: code, Message: message, Problems: problems}})
	h := w.Header()
	h.Del("Content-Length")
	h.Del("Content-Disposition")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshal encodes v as one line of JSON, newline included. Unlike
// json.Marshal it leaves <, > and & as they are, so that a person reading
// an answer with curl sees "<REDACTED>" rather than "\u003cREDACTED\u003e";
// an answer is never HTML (its type is application/json, with nosniff).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// problemCount words n problems: "1 problem", "3 problems".
func problemCount(n int) string {
	if n == 1 {
		return "1 problem"
	}
	return strconv.Itoa(n) + " problems"
}
