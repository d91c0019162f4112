package platform

import (
	"encoding/json"
	"net/http"
)

// ErrorBody is the JSON body of every error the platform answers:
// {"error": {"code": "NotFound", "message": "..."}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: Code is a stable word a client can
// branch on (NotFound, Conflict, PackageInUse, ...), Message is for
// people.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteError answers status with the JSON error body for code and message.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(ErrorBody{Error: ErrorDetail{Code: code, Message: message}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
