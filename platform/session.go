package platform

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sessionCookie is the name of the page's session cookie.
const sessionCookie = "toolset_session"

// maxLoginForm bounds the login form's body.
const maxLoginForm = 8 << 10

// sessionMAC signs a session's issue time under the per-process key, with
// the token: the cookie proves the token was given without holding it,
// and no longer works once the token or the process changes.
func (s *Server) sessionMAC(issued string) []byte {
	m := hmac.New(sha256.New, s.sessionKey[:])
	m.Write([]byte("toolset-platform-session\x00"))
	m.Write([]byte(issued))
	m.Write([]byte{0})
	m.Write(s.tokenSum[:])
	return m.Sum(nil)
}

// newSession returns the value of a new session cookie:
// <unix seconds>.<base64url HMAC>.
func (s *Server) newSession(now time.Time) string {
	issued := strconv.FormatInt(now.Unix(), 10)
	return issued + "." + base64.RawURLEncoding.EncodeToString(s.sessionMAC(issued))
}

// validSession reports whether r carries a session cookie this process
// issued, not older than SessionLifetime.
func (s *Server) validSession(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	if err != nil || len(c.Value) > 128 {
		return false
	}
	issued, mac, ok := strings.Cut(c.Value, ".")
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, s.sessionMAC(issued)) {
		return false
	}
	sec, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return false
	}
	age := time.Since(time.Unix(sec, 0))
	return age >= -time.Minute && age <= s.opts.SessionLifetime
}

// requireSession serves h to requests with a valid session; others are
// sent to the login form (303).
func (s *Server) requireSession(h http.HandlerFunc) http.Handler {
	if s.opts.InsecureNoAuth {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.validSession(r) {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		h(w, r)
	})
}

func (s *Server) setSession(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
}

// GET /login: the login form.
func (s *Server) pageLogin(w http.ResponseWriter, r *http.Request) {
	if s.opts.InsecureNoAuth || s.validSession(r) {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", &pageData{Title: "Log in"})
}

// POST /login (form: token) → 303 to / with a session cookie, or 401 and
// the form again.
func (s *Server) pageLoginPost(w http.ResponseWriter, r *http.Request) {
	if s.opts.InsecureNoAuth {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = bodyLimit(w, r, maxLoginForm)
	if err := r.ParseForm(); err != nil {
		s.render(w, r, http.StatusBadRequest, "login", &pageData{Title: "Log in", Error: "The form could not be read."})
		return
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(r.PostForm.Get("token"))))
	if subtle.ConstantTimeCompare(got[:], s.tokenSum[:]) != 1 {
		s.log.Warn("platform: a login with a wrong token", "remote", r.RemoteAddr)
		s.render(w, r, http.StatusUnauthorized, "login", &pageData{Title: "Log in", Error: "That is not the platform's token."})
		return
	}
	s.setSession(w, r, s.newSession(time.Now()), int(s.opts.SessionLifetime/time.Second))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// POST /logout → 303 to /login, the cookie cleared.
func (s *Server) pageLogout(w http.ResponseWriter, r *http.Request) {
	s.setSession(w, r, "", -1)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
