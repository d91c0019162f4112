package platform

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sessionCookie is the name of the page's session cookie.
const sessionCookie = "toolset_session"

// maxLoginForm bounds the login form's body.
const maxLoginForm = 8 << 10

// maxSessions bounds the sessions a server remembers; past it, a login
// ends the oldest.
const maxSessions = 1024

// sessionMAC signs a session's issue time and id under the per-process
// key, with the token: the cookie proves the token was given without
// holding it, and no longer works once the token or the process changes.
func (s *Server) sessionMAC(issued, id string) []byte {
	m := hmac.New(sha256.New, s.sessionKey[:])
	m.Write([]byte("toolset-platform-session\x00"))
	m.Write([]byte(issued))
	m.Write([]byte{0})
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write(s.tokenSum[:])
	return m.Sum(nil)
}

// session is a live session of the page: when it began, and the token
// it was opened with.
type session struct {
	issued time.Time
	who    principal
}

// newSession starts a session of the server's own token; see
// newSessionOf.
func (s *Server) newSession(now time.Time) string {
	return s.newSessionOf(principal{sum: s.tokenSum, scopes: ScopeAdmin.bit()}, now)
}

// newSessionOf starts a session of who's token and returns the value of
// its cookie: <unix seconds>.<random id>.<base64url HMAC>. The server
// remembers the id, and the token, until the session ends, by logout, by
// age, or by the token's revocation.
func (s *Server) newSessionOf(who principal, now time.Time) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	issued := strconv.FormatInt(now.Unix(), 10)
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	for k, se := range s.sessions {
		if time.Since(se.issued) > s.opts.SessionLifetime {
			delete(s.sessions, k)
		}
	}
	if len(s.sessions) >= maxSessions {
		oldest, first := "", time.Time{}
		for k, se := range s.sessions {
			if oldest == "" || se.issued.Before(first) {
				oldest, first = k, se.issued
			}
		}
		delete(s.sessions, oldest)
	}
	s.sessions[id] = session{issued: now, who: who}
	return issued + "." + id + "." + base64.RawURLEncoding.EncodeToString(s.sessionMAC(issued, id))
}

// session returns the id of the session r's cookie holds, and whose it
// is: one this process issued, not ended, not older than
// SessionLifetime, whose token is not revoked. The scopes are the
// token's.
func (s *Server) session(r *http.Request) (string, principal, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || len(c.Value) > 128 {
		return "", principal{}, false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 {
		return "", principal{}, false
	}
	issued, id, mac := parts[0], parts[1], parts[2]
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, s.sessionMAC(issued, id)) {
		return "", principal{}, false
	}
	sec, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return "", principal{}, false
	}
	age := time.Since(time.Unix(sec, 0))
	if age < -time.Minute || age > s.opts.SessionLifetime {
		return "", principal{}, false
	}
	s.sessMu.Lock()
	se, live := s.sessions[id]
	s.sessMu.Unlock()
	if !live {
		return "", principal{}, false
	}
	who := se.who
	if who.name != "" {
		// A stored token's session lasts as long as the token.
		if who.scopes, live = s.tokens.live(who.name, who.sum); !live {
			return "", principal{}, false
		}
	}
	return id, who, true
}

// viewer is who views a page: the principal requireSession found, or the
// session r carries, if any.
func (s *Server) viewer(r *http.Request) (principal, bool) {
	if s.opts.InsecureNoAuth {
		return everyone, true
	}
	if who := principalOf(r.Context()); who.scopes != 0 {
		return who, true
	}
	_, who, ok := s.session(r)
	return who, ok
}

// validSession reports whether r carries the cookie of a live session.
func (s *Server) validSession(r *http.Request) bool {
	_, _, ok := s.session(r)
	return ok
}

// requireSession serves h to requests with a valid session whose token
// holds scope, each with its principal; others are sent to the login
// form (303), or, with a session lacking the scope, answered 403.
func (s *Server) requireSession(scope Scope, h http.HandlerFunc) http.Handler {
	if s.opts.InsecureNoAuth {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h(w, withPrincipal(r, everyone))
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, who, ok := s.session(r)
		if !ok {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		r = withPrincipal(r, who)
		if !who.scopes.allows(scope) {
			s.render(w, r, http.StatusForbidden, "error", &pageData{Title: "Not allowed", Error: fmt.Sprintf("The token this session was opened with lacks the %s scope.", scope), Back: "/"})
			return
		}
		h(w, r)
	})
}

// endSessionsOf ends the sessions opened with the stored token name.
func (s *Server) endSessionsOf(name string) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	for id, se := range s.sessions {
		if se.who.name == name {
			delete(s.sessions, id)
		}
	}
}

func (s *Server) setSession(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   overHTTPS(r),
		SameSite: http.SameSiteStrictMode,
	})
}

// overHTTPS reports whether the browser reached the page over HTTPS:
// directly, or through a proxy that ends TLS and says so. Believing a
// forged X-Forwarded-Proto costs nothing: a Secure cookie is only one a
// browser keeps off plain HTTP.
func overHTTPS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
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
	r.Body = s.bodyLimit(w, r, maxLoginForm)
	if err := r.ParseForm(); err != nil {
		s.render(w, r, http.StatusBadRequest, "login", &pageData{Title: "Log in", Error: "The form could not be read."})
		return
	}
	who, ok := s.lookupToken(strings.TrimSpace(r.PostForm.Get("token")))
	if !ok {
		s.loginFailed(r)
		s.render(w, r, http.StatusUnauthorized, "login", &pageData{Title: "Log in", Error: "That is not the platform's token, nor one it issued."})
		return
	}
	s.setSession(w, r, s.newSessionOf(who, time.Now()), int(s.opts.SessionLifetime/time.Second))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// loginLogEvery bounds how often wrong logins are logged: anyone can
// post the form, and a line each would let them fill the log.
const loginLogEvery = 10 * time.Second

// loginFailed logs a wrong login: the first, then at most one line every
// loginLogEvery, counting those it did not log.
func (s *Server) loginFailed(r *http.Request) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	s.loginFails++
	if now := time.Now(); now.Sub(s.loginLogged) >= loginLogEvery {
		s.log.Warn("platform: logins with a wrong token", "count", s.loginFails, "lastRemote", r.RemoteAddr)
		s.loginFails, s.loginLogged = 0, now
	}
}

// POST /logout → 303 to /login, the session ended and its cookie
// cleared: a copy of the cookie opens nothing any more.
func (s *Server) pageLogout(w http.ResponseWriter, r *http.Request) {
	if id, _, ok := s.session(r); ok {
		s.sessMu.Lock()
		delete(s.sessions, id)
		s.sessMu.Unlock()
	}
	s.setSession(w, r, "", -1)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
