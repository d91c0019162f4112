// Package scripted is a model that follows a script, served over HTTP on
// 127.0.0.1, for testing agent loops with real provider SDK clients.
package scripted

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Step answers one request: it checks the request body and returns the
// JSON reply, or an error that the server reports to the test and answers
// with status 400.
type Step func(body []byte) (reply string, err error)

// Model is a scripted model server. Each request to path is answered by the
// next step; a request past the script fails the test.
type Model struct {
	// URL is the server's base URL.
	URL string

	t      testing.TB
	srv    *httptest.Server
	path   string
	mu     sync.Mutex
	steps  []Step
	bodies [][]byte
}

// New starts a scripted model that answers POST requests to path. It is
// closed when the test ends.
func New(t testing.TB, path string, steps ...Step) *Model {
	m := &Model{t: t, path: path, steps: steps}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	m.URL = m.srv.URL
	t.Cleanup(m.Close)
	return m
}

// Client returns an HTTP client for the server, whose idle connections are
// closed with it.
func (m *Model) Client() *http.Client { return m.srv.Client() }

// Close stops the server and closes its client's idle connections.
func (m *Model) Close() {
	m.srv.Client().CloseIdleConnections()
	m.srv.Close()
}

// Requests returns the bodies of the requests served so far, in order.
func (m *Model) Requests() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.bodies...)
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != m.path {
		m.t.Errorf("scripted model: unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "unexpected request", http.StatusNotFound)
		return
	}
	m.mu.Lock()
	n := len(m.bodies)
	m.bodies = append(m.bodies, body)
	m.mu.Unlock()
	if n >= len(m.steps) {
		m.t.Errorf("scripted model: request %d is past the script of %d steps:\n%s", n+1, len(m.steps), body)
		http.Error(w, "past the script", http.StatusInternalServerError)
		return
	}
	reply, err := m.steps[n](body)
	if err != nil {
		m.t.Errorf("scripted model: request %d: %v\n%s", n+1, err, body)
		http.Error(w, fmt.Sprintf(`{"error":{"message":%q}}`, err.Error()), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, reply)
}
