package platform

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// page GETs a page with a session.
func (e *testEnv) page(path string) response {
	e.t.Helper()
	return e.doToken("", "GET", path, nil, "Cookie", sessionCookie+"="+e.srv.newSession(time.Now()))
}

// uploadForm posts the page's upload form.
func (e *testEnv) uploadForm(name string, data []byte, force bool) response {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	require.NoError(e.t, mw.WriteField("name", name))
	if force {
		require.NoError(e.t, mw.WriteField("force", "true"))
	}
	fw, err := mw.CreateFormFile("package", name+".zip")
	require.NoError(e.t, err)
	_, err = fw.Write(data)
	require.NoError(e.t, err)
	require.NoError(e.t, mw.Close())
	req, err := http.NewRequest("POST", e.hs.URL+"/upload", &buf)
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: e.srv.newSession(time.Now())})
	res, err := noRedirect(e, nil).Do(req)
	require.NoError(e.t, err)
	return response{status: res.StatusCode, header: res.Header, body: readBody(e.t, res)}
}

// Every text a package gives is escaped: a tool's description, its
// parameters' names and descriptions, discovery errors.
func TestPageEscapesHostileText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const evil = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	e.upload("evil", goodPackage(t, "greet", evil, 0))
	require.Equal(t, "ready", e.settle("evil")["discoveryStatus"])
	for _, p := range []string{"/", "/toolsets/evil"} {
		r := e.page(p)
		require.Equal(t, http.StatusOK, r.status)
		assert.NotContains(t, string(r.body), "<script>", p)
		assert.NotContains(t, string(r.body), "<img", p)
	}
	r := e.page("/toolsets/evil")
	assert.Contains(t, string(r.body), "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	assert.Equal(t, "text/html; charset=utf-8", r.header.Get("Content-Type"))

	e.upload("evil2", makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte("#!/bin/sh\necho '<script>alert(2)</script>' >&2\nexit 1\n"), mode: 0o755}))
	require.Equal(t, "failed", e.settle("evil2")["discoveryStatus"])
	r = e.page("/toolsets/evil2")
	assert.NotContains(t, string(r.body), "<script>")
	assert.Contains(t, string(r.body), "&lt;script&gt;alert(2)")
}

func TestPageListAndDetail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.page("/")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, string(r.body), "No toolsets yet")
	assert.NotContains(t, string(r.body), `http-equiv="refresh"`)

	e.upload("greeter", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])
	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "greeter"))).status)
	r = e.page("/")
	body := string(r.body)
	assert.Contains(t, body, `data-toolset="greeter" data-status="ready"`)
	assert.Contains(t, body, `class="dot dot-ready"`)
	assert.Contains(t, body, "support")
	assert.NotContains(t, body, `http-equiv="refresh"`)

	r = e.page("/toolsets/greeter")
	require.Equal(t, http.StatusOK, r.status)
	body = string(r.body)
	assert.Contains(t, body, `data-tool="greet"`)
	assert.Contains(t, body, "Greets someone.")
	assert.Contains(t, body, "<code>who</code>")
	assert.Contains(t, body, "whom to greet")
	assert.Contains(t, body, "v1")

	r = e.page("/toolsets/nosuch")
	assert.Equal(t, http.StatusNotFound, r.status)
	r = e.page("/toolsets/a%2Fb")
	assert.Equal(t, http.StatusBadRequest, r.status)
}

func TestPagePendingRefreshesItself(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{RefreshInterval: time.Second})
	g := newGate(t)
	e.upload("slow", gatedPackage(t, "greet", "x", g))
	for _, p := range []string{"/", "/toolsets/slow"} {
		r := e.page(p)
		assert.Contains(t, string(r.body), `<meta http-equiv="refresh" content="1">`, p)
		assert.Contains(t, string(r.body), "dot-pending", p)
	}
	g.open(t)
	require.Equal(t, "ready", e.settle("slow")["discoveryStatus"])
	r := e.page("/toolsets/slow")
	assert.NotContains(t, string(r.body), `http-equiv="refresh"`)
}

func TestPageUploadForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &Options{MaxPackageBytes: 256 << 10})
	r := e.uploadForm("greeter", goodPackage(t, "greet", "Greets someone.", 0), false)
	require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
	assert.Equal(t, "/toolsets/greeter", r.header.Get("Location"))
	require.Equal(t, "ready", e.settle("greeter")["discoveryStatus"])

	r = e.uploadForm("bad", []byte("not a zip"), false)
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	assert.Contains(t, string(r.body), `id="problems"`)

	r = e.uploadForm("../x", goodPackage(t, "greet", "x", 0), false)
	assert.Equal(t, http.StatusBadRequest, r.status)
	r = e.uploadForm("big", bytes.Repeat([]byte("x"), 300<<10), false)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Contains(t, string(r.body), "larger than the limit")

	require.Equal(t, http.StatusCreated, e.do("PUT", "/api/v1/platform/agents/support", []byte(agentYAML("support", "greeter"))).status)
	r = e.uploadForm("greeter", goodPackage(t, "greet", "v2", 0), false)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Contains(t, string(r.body), "support")
	r = e.uploadForm("greeter", goodPackage(t, "greet", "v2", 0), true)
	assert.Equal(t, http.StatusSeeOther, r.status)

	// Without a session the form is refused.
	r = e.doToken("", "POST", "/upload", []byte("x"), "Content-Type", "multipart/form-data; boundary=x")
	assert.NotEqual(t, http.StatusSeeOther, r.status)
	assert.True(t, strings.Contains(string(r.body), "Log in"), "sent to the login page")
	assert.Equal(t, 2.0, e.settle("greeter")["version"])
}

// Markup a package puts in any text the page shows (a parameter's name
// and description, the schema, the tool's description, a discovery
// error) stays text: no element is injected that could leave the page
// without script (a meta refresh, a form, an image from elsewhere).
func TestPageEscapesInjectedMarkupInEveryField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const (
		meta = `<meta http-equiv="refresh" content="0;url=https://evil.example/?">`
		form = `<form action="https://evil.example/"><button>go</button></form>`
		img  = `<img src="https://evil.example/x.png">`
	)
	doc := map[string]any{"tools": map[string]any{"greet": map[string]any{
		"description": meta + form + img,
		"parameters": map[string]any{"type": "object", "required": []string{meta},
			"properties": map[string]any{
				meta: map[string]any{"type": "string", "description": img},
				"b":  map[string]any{"type": []any{"string", "null"}, "description": form, "default": meta},
			}},
	}}}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	e.upload("inject", makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte(scriptTool("cat <<'EOF'\n" + string(b) + "\nEOF")), mode: 0o755}))
	m := e.settle("inject")
	require.Equal(t, "ready", m["discoveryStatus"], "%v", m["discoveryErrors"])
	e.upload("inject2", makeZip(t, zfile{name: "manifest.yaml", data: []byte(scriptManifest)},
		zfile{name: "python/bin/greet.sh", data: []byte("#!/bin/sh\necho '" + meta + form + img + "' >&2\nexit 1\n"), mode: 0o755}))
	require.Equal(t, "failed", e.settle("inject2")["discoveryStatus"])
	for _, p := range []string{"/", "/toolsets/inject", "/toolsets/inject2"} {
		r := e.page(p)
		require.Equal(t, http.StatusOK, r.status, p)
		body := string(r.body)
		assert.NotContains(t, body, "evil.example/\"", p)
		assert.NotContains(t, body, `<meta http-equiv="refresh" content="0`, p)
		assert.NotContains(t, body, "<img", p)
		assert.Equal(t, strings.Count(body, `<form class="upload"`)+strings.Count(body, `<form class="logout"`), strings.Count(body, "<form"), "only the page's own forms: %s", p)
		assert.Contains(t, r.header.Get("Content-Security-Policy"), "form-action 'self'")
		assert.Contains(t, r.header.Get("Content-Security-Policy"), "img-src 'self'")
	}
	assert.Contains(t, string(e.page("/toolsets/inject").body), "&lt;meta http-equiv=")
}

// A removed toolset stays on the list, with the removed dot, so that
// whoever looks for it sees what became of it; the API lists it only
// when asked.
func TestRemovedToolsetKeepsItsDot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.upload("old", goodPackage(t, "greet", "Greets someone.", 0))
	require.Equal(t, "ready", e.settle("old")["discoveryStatus"])
	require.Equal(t, http.StatusOK, e.do("DELETE", "/api/v1/platform/toolsets/old", nil).status)

	body := string(e.page("/").body)
	assert.Contains(t, body, `data-toolset="old" data-status="removed"`)
	assert.Contains(t, body, `class="dot dot-removed"`)

	r := e.do("GET", "/api/v1/platform/toolsets", nil)
	assert.Equal(t, float64(0), r.json(t)["meta"].(map[string]any)["total"], "%s", r.body)
	r = e.do("GET", "/api/v1/platform/toolsets?removed=true", nil)
	data := r.json(t)["data"].([]any)
	require.Len(t, data, 1, "%s", r.body)
	assert.Equal(t, "removed", data[0].(map[string]any)["discoveryStatus"])
	assert.Equal(t, http.StatusBadRequest, e.do("GET", "/api/v1/platform/toolsets?removed=maybe", nil).status)
}
